"""The operator's Kafka side against REAL odradek brokers (processes from the harness).

What the handlers do between "observe" and "write status" runs here unchanged: a Topic
reconcile creates, grows, alters and reassigns a real topic and reports its id; drift made
with another client is repaired; a ConsumerGroup reports the lag of a group driven by
confluent-kafka and resets it only once the group is empty; the ISR-aware restart decision
is taken on a real 3-broker cluster with one broker down.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from odradek_operator.decisions.restart import restart_verdict
from odradek_operator.decisions.state import ClusterState
from odradek_operator.handlers.consumer_group import group_result
from odradek_operator.handlers.topic import topic_result
from odradek_operator.kafka.groups import sync_group
from odradek_operator.kafka.observe import observe_cluster, observe_topic
from odradek_operator.kafka.session import admin_session
from odradek_operator.kafka.topics import sync_topic
from odradek_operator.spec import ConsumerGroupSpec, TopicSpec

from odradek.client.admin import RESOURCE_TOPIC, AsyncAdminClient
from tests.harness import wait_until
from tests.harness.kafka import FAST_FAILOVER


def topic_spec(bootstrap: str, **spec: Any) -> TopicSpec:
    raw = {"clusterRef": {"bootstrapServers": bootstrap}, "partitions": 2,
           "replicationFactor": 1, **spec}
    return TopicSpec.parse(raw, "events")


async def sync(bootstrap: str, spec: TopicSpec) -> Any:
    async with admin_session(bootstrap) as admin:
        return await sync_topic(admin, spec)


def wait_for_overrides(bootstrap: str, expected: dict[str, str]) -> None:
    """Config changes reach every broker through ZooKeeper, a moment after the admin call
    returns (as in Kafka): wait until a fresh observation shows them."""

    async def overrides() -> dict[str, str]:
        async with admin_session(bootstrap) as admin:
            topic = await observe_topic(admin, "events")
            return dict(topic.overrides) if topic else {}

    wait_until(lambda: asyncio.run(overrides()) == expected, 30, f"topic configs {expected}")


def test_topic_reconcile_creates_grows_alters_and_reports_its_id(cluster_factory):
    cluster = cluster_factory(3, offsets_topic_replication_factor="1")
    bootstrap = cluster.bootstrap

    outcome = asyncio.run(sync(bootstrap, topic_spec(bootstrap,
                                                     config={"retention.ms": 3600000})))
    assert outcome.plan.create and outcome.topic is not None
    result = topic_result(topic_spec(bootstrap), outcome, 1)
    assert result.status["partitions"] == 2 and result.status["replicationFactor"] == 1
    topic_id = result.status["topicId"]
    assert topic_id and topic_id != "00000000-0000-0000-0000-000000000000"
    wait_for_overrides(bootstrap, {"retention.ms": "3600000"})

    grown = asyncio.run(sync(bootstrap, topic_spec(bootstrap, partitions=4,
                                                   config={"retention.ms": 60000})))
    assert grown.plan.grow_to == 4 and grown.topic is not None
    assert grown.topic.partitions == 4 and grown.topic.topic_id == topic_id
    wait_for_overrides(bootstrap, {"retention.ms": "60000"})

    # Fewer partitions than the topic has is refused with a reason; the topic stays as it is.
    refused = asyncio.run(sync(bootstrap, topic_spec(bootstrap, partitions=3,
                                                     config={"retention.ms": 60000})))
    assert refused.plan.refusals[0][0] == "MorePartitionsThanSpec"
    ready = {c.type: c for c in topic_result(topic_spec(bootstrap, partitions=3), refused,
                                             2).conditions}["Ready"]
    assert ready.status is False and ready.reason == "MorePartitionsThanSpec"
    assert refused.topic is not None and refused.topic.partitions == 4


def test_every_unknown_topic_config_key_is_named_in_the_condition(cluster_factory):
    """Kafka refuses a create or alter at the first unknown key; the Topic names them all,
    checked against the names the cluster itself lists (DescribeConfigs)."""
    cluster = cluster_factory(1, offsets_topic_replication_factor="1")
    bootstrap = cluster.bootstrap
    asyncio.run(sync(bootstrap, topic_spec(bootstrap)))
    typos = {"retention.msec": 1, "cleanup_policy": "compact", "retention.ms": 60000}
    for name in ("events", "new-events"):  # an existing topic, and one still to create
        spec = TopicSpec.parse({"clusterRef": {"bootstrapServers": bootstrap},
                                "partitions": 1, "replicationFactor": 1, "config": typos},
                               name)
        outcome = asyncio.run(sync(bootstrap, spec))
        ready = {c.type: c for c in topic_result(spec, outcome, 1).conditions}["Ready"]
        assert (ready.status, ready.reason) == (False, "InvalidConfig")
        assert ready.message.startswith(
            "Unknown topic config names: cleanup_policy, retention.msec "), ready.message
    assert asyncio.run(sync(bootstrap, topic_spec(bootstrap))).plan.in_sync


def test_topic_drift_made_outside_is_repaired(cluster_factory):
    cluster = cluster_factory(3, offsets_topic_replication_factor="1")
    bootstrap = cluster.bootstrap
    spec = topic_spec(bootstrap, config={"retention.ms": 60000})
    asyncio.run(sync(bootstrap, spec))
    wait_for_overrides(bootstrap, {"retention.ms": "60000"})

    async def tamper() -> None:
        async with AsyncAdminClient(bootstrap) as admin:
            await admin.incremental_alter_configs(RESOURCE_TOPIC, "events", [
                ("retention.ms", "set", "1"), ("segment.bytes", "set", "1048576")])

    asyncio.run(tamper())
    wait_for_overrides(bootstrap, {"retention.ms": "1", "segment.bytes": "1048576"})
    repaired = asyncio.run(sync(bootstrap, spec))
    assert set(repaired.plan.config_changes) == {("retention.ms", "set", "60000"),
                                                 ("segment.bytes", "delete", None)}
    wait_for_overrides(bootstrap, {"retention.ms": "60000"})
    assert asyncio.run(sync(bootstrap, spec)).plan.in_sync


def test_replication_factor_change_reassigns_the_real_topic(cluster_factory):
    cluster = cluster_factory(3, offsets_topic_replication_factor="1")
    bootstrap = cluster.bootstrap
    asyncio.run(sync(bootstrap, topic_spec(bootstrap)))
    outcome = asyncio.run(sync(bootstrap, topic_spec(bootstrap, replicationFactor=2)))
    assert len(outcome.plan.reassignment) == 2

    async def replica_counts() -> set[int]:
        async with admin_session(bootstrap) as admin:
            topic = await observe_topic(admin, "events")
            assert topic is not None
            return {len(r) for r in topic.assignment.values()}

    wait_until(lambda: asyncio.run(replica_counts()) == {2}, 60,
               "both partitions to have two replicas")
    assert asyncio.run(sync(bootstrap, topic_spec(bootstrap, replicationFactor=2))).plan.in_sync


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, f"m{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0


def _consume(consumer: Consumer, count: int, timeout: float = 60) -> int:
    seen, deadline = 0, time.monotonic() + timeout
    while seen < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            seen += 1
    return seen


def test_consumer_group_lag_and_a_reset_that_waits_for_an_empty_group(cluster_factory):
    cluster = cluster_factory(1, offsets_topic_replication_factor="1")
    bootstrap = cluster.bootstrap
    asyncio.run(sync(bootstrap, topic_spec(bootstrap)))
    _produce(bootstrap, "events", 100)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "counter",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["events"])
    assert _consume(consumer, 100) == 100
    # The group stays a live member and commits 20 of each partition's 50 records.
    consumer.commit(offsets=[TopicPartition("events", 0, 20), TopicPartition("events", 1, 20)],
                    asynchronous=False)

    spec = ConsumerGroupSpec.parse({"clusterRef": {"bootstrapServers": bootstrap},
                                    "groupId": "counter",
                                    "reset": {"id": "rewind-1", "strategy": "earliest"}},
                                   "counter")

    async def observe(last_reset: Any = None) -> Any:
        async with admin_session(bootstrap) as admin:
            return await sync_group(admin, spec, last_reset)

    try:
        active = asyncio.run(observe())
        assert active.group.state == "Stable" and active.total_lag == 60
        assert active.reset_moves is None and "active member" in (active.blocked or "")
        status = group_result(spec, active)
        assert status.status["memberCount"] == 1 and status.status["totalLag"] == 60
        blocked = {c.type: c for c in status.conditions}["Blocked"]
        assert blocked.status is True and blocked.reason == "GroupActive"
        assert sorted(a for m in status.status["members"] for a in m["assignments"]) == \
            ["events-0", "events-1"]
    finally:
        consumer.close()

    reset = asyncio.run(observe())
    assert reset.blocked is None and reset.reset_moves is not None
    assert {m.target for m in reset.reset_moves} == {0}
    assert reset.total_lag == 100 and reset.group.state == "Empty"
    last = group_result(spec, reset).status["lastReset"]
    assert last["id"] == "rewind-1"
    # Once per id: the same id does not run again (the group consumed meanwhile).
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "counter",
                         "enable.auto.commit": False})
    consumer.subscribe(["events"])
    try:
        assert _consume(consumer, 100) == 100
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    again = asyncio.run(observe(last))
    assert again.reset_moves is None and again.total_lag == 0


def test_isr_aware_restart_decision_on_a_real_cluster_with_a_broker_down(cluster_factory):
    cluster = cluster_factory(3, **FAST_FAILOVER)
    bootstrap = cluster.bootstrap
    spec = TopicSpec.parse({"clusterRef": {"bootstrapServers": bootstrap}, "partitions": 3,
                            "replicationFactor": 3, "config": {"min.insync.replicas": 2}},
                           "orders")
    asyncio.run(sync(bootstrap, spec))

    async def state() -> Any:
        async with admin_session(bootstrap) as admin:
            return await observe_cluster(admin, default_min_isr=1)

    def full_isrs() -> Any:
        s = asyncio.run(state())
        orders = [p for p in s.partitions if p.topic == "orders"]
        return s if len(orders) == 3 and all(len(p.isr) == 3 for p in orders) \
            and s.min_isr("orders") == 2 else None

    healthy = wait_until(full_isrs, 60, "full ISRs and the topic's min.insync.replicas")
    assert isinstance(healthy, ClusterState)
    assert healthy.min_isr("orders") == 2
    assert all(restart_verdict(healthy, b).allowed for b in range(3))

    cluster.brokers[2].stop()
    degraded = wait_until(lambda: (s := asyncio.run(state())) and 2 not in s.brokers and all(
        2 not in p.isr for p in s.partitions if p.topic == "orders") and s, 60,
        "broker 2 out of every ISR")
    assert isinstance(degraded, ClusterState)
    for broker in (0, 1):
        verdict = restart_verdict(degraded, broker)
        assert not verdict.allowed, f"restarting broker {broker} must wait"
        assert {p.topic for p in verdict.blocking} == {"orders"}
    assert restart_verdict(degraded, 2).allowed  # the broker already down
    assert degraded.under_replicated_partitions >= 3
