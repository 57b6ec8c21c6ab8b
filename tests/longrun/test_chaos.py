"""Chaos: a seeded random schedule of kill -9, broker and ZooKeeper pauses, and network
partitions, under acks=all load; then heal, and every invariant must hold.

ZooKeeper, three brokers and the clients each live in their own network namespace
(:class:`~tests.harness.netns_cluster.NetnsCluster`), so a broker can be cut off while it
keeps running; one producer lives inside broker 0's namespace and keeps reaching it when it
is cut off (the dangerous case: an isolated leader must acknowledge nothing). Pauses are
drawn both shorter than the 6 s ZooKeeper session (nothing may move) and beyond it (the
paused broker is failed and must fence itself when it wakes; a paused ZooKeeper expires
every session at once when it resumes).

``ODRADEK_CHAOS_SECONDS`` (default 600) sets the duration, ``ODRADEK_CHAOS_SEED`` replays a
schedule (the seed is printed first, and in the failure report).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.harness.fixtures import NetnsClusterFactory
from tests.harness.netns import netns_unavailable_reason
from tests.longrun.plans import env_number, mixed_load, run_seed, topics
from tests.longrun.run import LongRun, RunPlan
from tests.longrun.schedules import chaos_plan, run_chaos

CHAOS_SECONDS = env_number("ODRADEK_CHAOS_SECONDS", 600)
SESSION_S = 6.0
BROKER_SETTINGS = {
    "zookeeper_session_timeout_ms": str(int(SESSION_S * 1000)),
    "replica_lag_time_max_ms": "4000",
    "replica_fetch_wait_max_ms": "200",
    "replica_fetch_backoff_ms": "200",
    "min_insync_replicas": "2",
    "log_segment_bytes": str(1024 * 1024),
    "offsets_topic_num_partitions": "12",
}

reason = netns_unavailable_reason()


@pytest.mark.slow
@pytest.mark.skipif(reason is not None, reason=reason or "")
@pytest.mark.timeout(CHAOS_SECONDS + 2400)
def test_chaos_of_kills_pauses_and_partitions_loses_no_acknowledged_record(
    netns_cluster_factory: NetnsClusterFactory, tmp_path: Path,
    progress: Callable[[str], None],
) -> None:
    seed = run_seed("ODRADEK_CHAOS_SEED")
    schedule = chaos_plan(seed, CHAOS_SECONDS, SESSION_S)
    cluster = netns_cluster_factory(3, **BROKER_SETTINGS)
    producers, members = mixed_load(cluster.bootstrap, "chaos", rate=60,
                                    delivery_timeout_s=60, colocated_broker=0)
    plan = RunPlan("chaos", CHAOS_SECONDS, topics("chaos"), producers, members, notes=[
        f"3 brokers in network namespaces, session {SESSION_S:.0f}s, "
        f"{len(schedule)} faults planned"])
    run = LongRun(plan, cluster, tmp_path / "evidence", seed, progress)
    run.progress(f"[chaos] seed {seed} (replay: ODRADEK_CHAOS_SEED={seed}), "
                 f"{CHAOS_SECONDS:.0f}s, evidence in {run.directory}")
    with (run.directory / "plan.txt").open("w") as out:
        out.writelines(f"{fault}\n" for fault in schedule)
    outcome = run.execute(partial(run_chaos, plan=schedule, seed=seed,
                                  recovery_s=plan.recovery_s))
    run.progress(outcome.report)
    assert outcome.verdict.ok, outcome.report
