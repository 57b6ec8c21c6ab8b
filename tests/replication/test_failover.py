"""Leader failure: acknowledged acks=all writes survive kill -9 of the leader."""

from __future__ import annotations

from typing import Any

from tests.harness import wait_until
from tests.harness.zk import zk_client

from .support import (
    FAST_FAILOVER,
    AcksAllLoad,
    create_topic,
    partition_state,
    producer,
    read_all,
    wait_for_isr,
)


def test_follower_catches_up_and_isr_holds_every_replica(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **FAST_FAILOVER)
    create_topic(cluster.bootstrap, "copied", replication=3)
    p = producer(cluster.bootstrap)
    for i in range(200):
        p.produce("copied", f"v{i}".encode())
    assert p.flush(30) == 0
    with zk_client(cluster.zookeeper_connect) as zk:
        state = wait_for_isr(zk, "copied", 3)
    assert sorted(state["isr"]) == [0, 1, 2]
    assert read_all(cluster.bootstrap, "copied") == [f"v{i}".encode() for i in range(200)]


def test_kill_leader_under_acks_all_load_loses_nothing_acknowledged(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(3, **FAST_FAILOVER)
    create_topic(cluster.bootstrap, "durable", replication=3,
                 config={"min.insync.replicas": "2"})
    with zk_client(cluster.zookeeper_connect) as zk:
        old_leader = wait_for_isr(zk, "durable", 3)["leader"]
        with AcksAllLoad(cluster.bootstrap, "durable") as load:
            wait_until(lambda: len(load.acked) >= 300, 60, "300 acknowledged before the kill")
            cluster.brokers[old_leader].kill()
            wait_until(
                lambda: (partition_state(zk, "durable") or {}).get("leader", old_leader)
                not in (old_leader, -1),
                30, "a new leader")
            acked_at_election = len(load.acked)
            wait_until(lambda: len(load.acked) >= acked_at_election + 300, 60,
                       "300 more acknowledged by the new leader")
            load.stop()
    values = read_all(cluster.bootstrap, "durable")
    missing = set(load.acked) - set(values)
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
    assert len(values) == len(set(values)), "duplicates in the log"
    assert not load.errors, f"delivery errors: {load.errors[:5]}"
