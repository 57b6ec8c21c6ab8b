"""Replica consistency: divergent tails are truncated, min.insync.replicas and unclean
election trade availability for durability exactly as configured."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.harness import wait_until
from tests.harness.zk import zk_client

from .support import (
    FAST_FAILOVER,
    create_topic,
    partition_state,
    producer,
    read_all,
    restart_when_deregistered,
    wait_for_isr,
)


def _send(bootstrap: str, topic: str, values: list[bytes], acks: str) -> list[Any]:
    """Produce without retries; returns the delivery error (or None) of each value."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "retries": 0,
                  "enable.idempotence": False, "message.timeout.ms": 15000,
                  "topic.metadata.refresh.interval.ms": 500})
    results: list[Any] = []
    for value in values:
        p.produce(topic, value, on_delivery=lambda err, _msg: results.append(err))
    assert p.flush(30) == 0
    return results


def _leader_is(zk: Any, topic: str, predicate: Any) -> bool:
    state = partition_state(zk, topic)
    return state is not None and predicate(state)


def test_returning_leader_truncates_its_unreplicated_tail_and_rejoins_isr(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(3, **FAST_FAILOVER)
    topic = "diverge"
    create_topic(cluster.bootstrap, topic, replication=3,
                 config={"unclean.leader.election.enable": "true"})
    committed = [f"c{i}".encode() for i in range(50)]
    with zk_client(cluster.zookeeper_connect) as zk:
        leader = wait_for_isr(zk, topic, 3)["leader"]
        assert all(err is None for err in _send(cluster.bootstrap, topic, committed, "all"))
        followers = [b for b in range(3) if b != leader]
        for b in followers:
            cluster.brokers[b].kill()
        wait_until(lambda: _leader_is(zk, topic, lambda s: s["isr"] == [leader]), 30,
                   "the ISR to shrink to the leader")
        tail = [f"tail{i}".encode() for i in range(20)]
        leader_bootstrap = cluster.brokers[leader].bootstrap
        assert all(err is None for err in _send(leader_bootstrap, topic, tail, "1"))
        cluster.brokers[leader].kill()
        for b in followers:
            restart_when_deregistered(cluster, zk, b)
        wait_until(lambda: _leader_is(zk, topic, lambda s: s["leader"] in followers), 40,
                   "an (unclean) leader among the returned followers")
        fresh = [f"new{i}".encode() for i in range(30)]
        survivors = ",".join(cluster.brokers[b].bootstrap for b in followers)
        assert all(err is None for err in _send(survivors, topic, fresh, "1"))
        restart_when_deregistered(cluster, zk, leader)
        wait_until(lambda: _leader_is(zk, topic, lambda s: leader in s["isr"]), 40,
                   f"broker {leader} back in the ISR")
        # Make the returned broker the only replica left: its log is what is served now.
        for b in followers:
            cluster.brokers[b].kill()
        wait_until(lambda: _leader_is(zk, topic, lambda s: s["leader"] == leader), 40,
                   f"broker {leader} leading again")
    values = read_all(cluster.brokers[leader].bootstrap, topic)
    assert values[: len(committed)] == committed
    assert not set(tail) & set(values), "the unreplicated tail survived truncation"
    assert values[len(committed):] == fresh, "the returned replica diverged from the leader"


def test_acks_all_is_refused_below_min_insync_replicas(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **FAST_FAILOVER)
    create_topic(cluster.bootstrap, "guarded", replication=3,
                 config={"min.insync.replicas": "2"})
    with zk_client(cluster.zookeeper_connect) as zk:
        leader = wait_for_isr(zk, "guarded", 3)["leader"]
        for b in range(3):
            if b != leader:
                cluster.brokers[b].kill()
        wait_until(lambda: _leader_is(zk, "guarded", lambda s: s["isr"] == [leader]), 30,
                   "the ISR to shrink to the leader")
    bootstrap = cluster.brokers[leader].bootstrap
    errors = _send(bootstrap, "guarded", [b"x"], "all")
    assert errors[0] is not None and errors[0].code() == KafkaError.NOT_ENOUGH_REPLICAS, errors
    assert _send(bootstrap, "guarded", [b"y"], "1") == [None], "acks=1 is still accepted"


def test_unclean_election_off_keeps_partition_offline_and_on_recovers_it(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(3, **FAST_FAILOVER)
    topic = "offline"
    create_topic(cluster.bootstrap, topic, replication=3)
    with zk_client(cluster.zookeeper_connect) as zk:
        leader = wait_for_isr(zk, topic, 3)["leader"]
        others = [b for b in range(3) if b != leader]
        for b in others:
            cluster.brokers[b].kill()
        wait_until(lambda: _leader_is(zk, topic, lambda s: s["isr"] == [leader]), 30,
                   "the ISR to shrink to the leader")
        cluster.brokers[leader].kill()
        returning = others[0]
        # With every broker down there is no controller; the returning one takes the role
        # and, with unclean election off, must take the partition offline.
        restart_when_deregistered(cluster, zk, returning)
        wait_until(lambda: _leader_is(zk, topic, lambda s: s["leader"] == -1), 30,
                   "the partition to go offline")
        # A topic created after the broker returned gets a leader only from a controller
        # pass that already saw that broker: after it, "offline" must still be offline.
        create_topic(cluster.brokers[returning].bootstrap, "probe", replication=1)
        wait_until(lambda: _leader_is(zk, "probe", lambda s: s["leader"] >= 0), 30,
                   "the probe topic's leader")
        state = partition_state(zk, topic)
        assert state is not None and state["leader"] == -1, "an out-of-sync replica was elected"
        admin = AdminClient({"bootstrap.servers": cluster.brokers[returning].bootstrap})
        resource = ConfigResource("topic", topic,
                                  set_config={"unclean.leader.election.enable": "true"})
        admin.alter_configs([resource])[resource].result(30)
        # Any membership change makes the controller re-elect with the new setting.
        restart_when_deregistered(cluster, zk, others[1])
        wait_until(lambda: _leader_is(zk, topic, lambda s: s["leader"] in others), 40,
                   "an unclean leader once allowed")
    survivors = ",".join(cluster.brokers[b].bootstrap for b in others)
    p = producer(survivors)
    p.produce(topic, b"after")
    assert p.flush(30) == 0
