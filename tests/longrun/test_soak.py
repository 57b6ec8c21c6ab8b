"""Soak: half an hour of mixed load on three brokers with a kill -9 every minute or so.

Three broker processes on the session's real ZooKeeper, RF 3 and min.insync.replicas 2;
idempotent acks=all producers of librdkafka and odradek's own client; two consumer groups
whose members of both clients keep joining and leaving; every ~75 s a kill -9 of the
controller, a partition leader or any broker, restarted at once. At the end every invariant
of :mod:`tests.longrun.invariants` must hold: no acknowledged record lost, duplicated,
misplaced or reordered; consumers in order; commits never ahead of the log nor lost; every
partition led with a full ISR again.

``ODRADEK_SOAK_SECONDS`` (default 1800) sets the load's duration, ``ODRADEK_SOAK_SEED``
replays a run's kill schedule, ``ODRADEK_SOAK_KILL_EVERY`` (default 75, but at most a third
of a short run, so that a two-minute run still kills brokers) the kill period.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.harness.fixtures import ClusterFactory
from tests.longrun.deployment import LocalDeployment
from tests.longrun.plans import env_number, mixed_load, run_seed, topics
from tests.longrun.run import LongRun, RunPlan
from tests.longrun.schedules import run_periodic_kills

SOAK_SECONDS = env_number("ODRADEK_SOAK_SECONDS", 1800)
KILL_EVERY_S = env_number("ODRADEK_SOAK_KILL_EVERY", min(75, SOAK_SECONDS / 3))
#: Broker defaults except: ISR of 2 required, small segments (rolls and multi-segment
#: recovery after each kill), a smaller offsets topic (12 partitions, still RF 3).
BROKER_SETTINGS = {
    "min_insync_replicas": "2",
    "log_segment_bytes": str(1024 * 1024),
    "offsets_topic_num_partitions": "12",
}


@pytest.mark.slow
@pytest.mark.timeout(SOAK_SECONDS + 2400)
def test_soak_mixed_load_with_periodic_kill_9_loses_no_acknowledged_record(
    cluster_factory: ClusterFactory, tmp_path: Path, progress: Callable[[str], None]
) -> None:
    seed = run_seed("ODRADEK_SOAK_SEED")
    cluster = cluster_factory(3, **BROKER_SETTINGS)
    producers, members = mixed_load(cluster.bootstrap, "soak", rate=80,
                                    delivery_timeout_s=60)
    plan = RunPlan("soak", SOAK_SECONDS, topics("soak"), producers, members, notes=[
        f"3 brokers, session timeout default, kill -9 every {KILL_EVERY_S:.0f}s (±25%)"])
    run = LongRun(plan, LocalDeployment(cluster), tmp_path / "evidence", seed, progress)
    run.progress(f"[soak] seed {seed} (replay: ODRADEK_SOAK_SEED={seed}), "
                 f"{SOAK_SECONDS:.0f}s, evidence in {run.directory}")
    outcome = run.execute(partial(run_periodic_kills, seed=seed, every_s=KILL_EVERY_S,
                                  recovery_s=plan.recovery_s))
    run.progress(outcome.report)
    assert outcome.verdict.ok, outcome.report
