"""odradek's own consumer with ``group_protocol="consumer"`` (KIP-848).

Against odradek's broker, and against Apache Kafka 4.4 (a single KRaft node, the reference:
``slow`` and ``java``, one JVM for the module). Apache Kafka 3.9 in ZooKeeper mode has no
ConsumerGroupHeartbeat. Every member's own ``on_assign``/``on_revoke`` callbacks are stamped
with a monotonic clock, and the ownership intervals they describe must never overlap between
members: a partition is revoked by its previous owner before its next owner is given it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator

import pytest

from odradek.client import AdminClient, AsyncConsumer, Consumer, NewTopic, Producer, TopicPartition
from odradek.local_cluster import BrokerProcess, LocalCluster, ZooKeeperProcess, free_port
from tests.harness.fixtures import SINGLE_NODE_DEFAULTS
from tests.harness.kafka import FAST_FAILOVER

from .conftest import create_topic

PARTITIONS = 4
# Fast heartbeats (on Kafka 4.4's node: FAST_CONSUMER_GROUPS): a member acknowledging a
# revocation heartbeats at once, but the member that is waiting for the released partitions
# only learns of them at its next heartbeat.
BROKER = {"group_consumer_heartbeat_interval_ms": "300",
          "group_consumer_session_timeout_ms": "6000"}


@pytest.fixture(scope="module")
def odradek_broker(zookeeper: ZooKeeperProcess, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[BrokerProcess]:
    """One broker for the module (every test has its own topics and groups)."""
    settings = {**SINGLE_NODE_DEFAULTS,
                **{key.replace("_", "."): value for key, value in BROKER.items()}}
    broker = BrokerProcess(0, free_port(), tmp_path_factory.mktemp("kip848-broker"),
                           f"{zookeeper.connect}/t-{uuid.uuid4().hex[:12]}", settings)
    broker.start()
    try:
        broker.wait_ready(60)
        yield broker
    finally:
        broker.stop()


@pytest.fixture(params=["odradek", pytest.param("kafka-4.4", marks=[pytest.mark.slow,
                                                                    pytest.mark.java])])
def bootstrap(request: pytest.FixtureRequest) -> str:
    if request.param == "kafka-4.4":
        return str(request.getfixturevalue("kafka_4_kraft").bootstrap)
    return str(request.getfixturevalue("odradek_broker").bootstrap)


class Member:
    """One AsyncConsumer, its records and its callbacks as (time, event, partitions)."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], **settings: object) -> None:
        self.events: list[tuple[float, str, frozenset[TopicPartition]]] = []
        self.records: set[tuple[str, int, int]] = set()
        self.consumer = AsyncConsumer(
            *topics, bootstrap_servers=bootstrap, group_id=group, group_protocol="consumer",
            auto_offset_reset="earliest", auto_commit_interval_ms=200,
            on_assign=lambda tps: self._event("assign", tps),
            on_revoke=lambda tps: self._event("revoke", tps), **settings)  # type: ignore[arg-type]

    def _event(self, kind: str, tps: list[TopicPartition]) -> None:
        self.events.append((time.monotonic(), kind, frozenset(tps)))

    def owned(self) -> set[TopicPartition]:
        owned: set[TopicPartition] = set()
        for _at, kind, tps in self.events:
            owned = owned | tps if kind == "assign" else owned - tps
        return owned

    async def poll(self) -> None:
        for r in await self.consumer.poll(50):
            self.records.add((r.topic, r.partition, r.offset))

    def intervals(self) -> dict[TopicPartition, list[tuple[float, float]]]:
        start: dict[TopicPartition, float] = {}
        spans: dict[TopicPartition, list[tuple[float, float]]] = {}
        for at, kind, tps in self.events:
            for tp in tps:
                if kind == "assign":
                    start[tp] = at
                elif tp in start:
                    spans.setdefault(tp, []).append((start.pop(tp), at))
        for tp, since in start.items():
            spans.setdefault(tp, []).append((since, float("inf")))
        return spans


async def poll_until(members: list[Member], condition: Callable[[], bool], what: str,
                     timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}: "
                        f"{[sorted(m.owned()) for m in members]}")
        await asyncio.gather(*(m.poll() for m in members if not m.consumer._closed))


async def poll_for(members: list[Member], seconds: float) -> None:
    until = time.monotonic() + seconds
    await poll_until(members, lambda: time.monotonic() >= until, "time to pass")


def assert_never_owned_twice(members: list[Member]) -> None:
    spans = [m.intervals() for m in members]
    for i, mine in enumerate(spans):
        for theirs in spans[i + 1:]:
            for tp, intervals in mine.items():
                for a_from, a_until in intervals:
                    for b_from, b_until in theirs.get(tp, []):
                        assert a_until <= b_from or b_until <= a_from, (
                            f"{tp} owned by two members: {a_from}-{a_until} and "
                            f"{b_from}-{b_until}")


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    with Producer(bootstrap) as producer:
        for i in range(start, start + count):
            producer.send(topic, f"v{i}".encode(), partition=i % PARTITIONS)


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 120))


def test_two_members_split_the_partitions_and_one_takes_over_when_the_other_leaves(
    bootstrap: str,
) -> None:
    topic = create_topic(bootstrap, f"kip848-{uuid.uuid4().hex[:8]}", PARTITIONS)
    group = f"g-{uuid.uuid4().hex[:8]}"
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    produce(bootstrap, topic, 0, 200)

    async def scenario() -> None:
        a = Member(bootstrap, group, [topic])
        await poll_until([a], lambda: a.owned() == everything, "a to own everything")
        b = Member(bootstrap, group, [topic])
        members = [a, b]
        await poll_until(members, lambda: bool(a.owned()) and bool(b.owned())
                         and a.owned() | b.owned() == everything, "a and b to split")
        assert len(a.owned()) == len(b.owned()) == 2
        await poll_until(members, lambda: len(a.records | b.records) == 200, "every record")
        await a.consumer.close()  # revokes (committing) and leaves with epoch -1
        assert a.events[-1][1] == "revoke"
        await poll_until([b], lambda: b.owned() == everything, "b to take over")
        await asyncio.to_thread(produce, bootstrap, topic, 200, 100)
        await poll_until([b], lambda: len(a.records | b.records) == 300, "the new records")
        await b.consumer.close()
        assert_never_owned_twice(members)
        # b resumed a's partitions from a's commits: nothing read twice past the handover.
        assert len(b.records) < 300
        check = AsyncConsumer(bootstrap_servers=bootstrap, group_id=group,
                              group_protocol="consumer")
        check.subscribe([topic])
        try:
            for tp in everything:
                assert await check.committed(tp) == 75
        finally:
            await check.close(commit=False)

    run(scenario())


def test_fenced_member_loses_its_partitions_and_rejoins_with_epoch_zero(bootstrap: str) -> None:
    topic = create_topic(bootstrap, f"kip848-f-{uuid.uuid4().hex[:8]}", PARTITIONS)
    group = f"g-{uuid.uuid4().hex[:8]}"
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}

    async def scenario() -> None:
        a = Member(bootstrap, group, [topic])
        await poll_until([a], lambda: a.owned() == everything, "a to own everything")
        group_member = a.consumer._group
        assert group_member is not None
        # A zombie's epoch (one the coordinator never gave out): FENCED_MEMBER_EPOCH.
        group_member.generation += 5
        group_member.request_rejoin()
        await poll_until([a], lambda: [e[1] for e in a.events][-2:] == ["revoke", "assign"],
                         "a to lose its partitions and get them back")
        assert a.owned() == everything
        assert group_member.generation > 0
        await a.consumer.close()

    run(scenario())


def test_static_member_keeps_its_partitions_across_a_restart_and_regex_finds_new_topics(
    bootstrap: str,
) -> None:
    prefix = f"kip848-re-{uuid.uuid4().hex[:6]}"
    first = create_topic(bootstrap, f"{prefix}-a", PARTITIONS)
    group = f"g-{uuid.uuid4().hex[:8]}"
    regex = f"{prefix}-.*"

    async def scenario() -> None:
        static = Member(bootstrap, group, [], subscribed_topic_regex=regex,
                        group_instance_id="instance-1")
        await poll_until([static], lambda: len(static.owned()) == PARTITIONS, "static's share")
        other = Member(bootstrap, group, [], subscribed_topic_regex=regex)
        await poll_until([static, other], lambda: len(other.owned()) == 2
                         and len(static.owned()) == 2, "a split")
        kept, theirs = other.owned(), static.owned()
        await static.consumer.close()  # epoch -2: its partitions wait for it
        await poll_for([other], 1.5)  # several heartbeats of the other member
        assert other.owned() == kept
        restarted = Member(bootstrap, group, [], subscribed_topic_regex=regex,
                           group_instance_id="instance-1")
        await poll_until([other, restarted], lambda: restarted.owned() == theirs,
                         "the restarted instance to get its partitions back")
        assert other.owned() == kept
        # A new topic matching the expression is picked up and spread over both members.
        second = await asyncio.to_thread(create_topic, bootstrap, f"{prefix}-b", PARTITIONS)
        await poll_until([other, restarted],
                         lambda: {tp.topic for tp in other.owned() | restarted.owned()}
                         == {first, second}
                         and len(other.owned() | restarted.owned()) == 2 * PARTITIONS,
                         "the new topic to be assigned")
        for m in (other, restarted):
            await m.consumer.close()
        assert_never_owned_twice([static, other, restarted][1:])

    run(scenario())


def test_the_synchronous_consumer_speaks_the_consumer_protocol(bootstrap: str) -> None:
    topic = create_topic(bootstrap, f"kip848-s-{uuid.uuid4().hex[:8]}", PARTITIONS)
    produce(bootstrap, topic, 0, 40)
    with Consumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{uuid.uuid4().hex[:8]}",
                  group_protocol="consumer", auto_offset_reset="earliest") as consumer:
        got: list[object] = []
        deadline = time.monotonic() + 30
        while len(got) < 40 and time.monotonic() < deadline:
            got += consumer.poll(200)
        assert len(got) == 40
        assert consumer.assignment() == {TopicPartition(topic, p) for p in range(PARTITIONS)}


def test_group_protocol_is_checked() -> None:
    with pytest.raises(ValueError, match="group_protocol"):
        AsyncConsumer(bootstrap_servers="127.0.0.1:1", group_protocol="eager")
    with pytest.raises(ValueError, match="subscribed_topic_regex"):
        AsyncConsumer(bootstrap_servers="127.0.0.1:1", group_id="g",
                      subscribed_topic_regex="t.*")


@pytest.mark.slow  # a 3-broker cluster and a ZooKeeper session expiry: ~30 s
def test_the_members_ride_out_a_coordinator_failover_without_a_rebalance(
    cluster_factory: Callable[..., LocalCluster],
) -> None:
    settings = {**FAST_FAILOVER, **BROKER, "offsets_topic_replication_factor": "3",
                "offsets_topic_num_partitions": "6"}
    cluster = cluster_factory(3, **settings)
    bootstrap = cluster.bootstrap
    topic = f"kip848-failover-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 3)])
    finally:
        admin.close()
    group = f"g-{uuid.uuid4().hex[:8]}"
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    produce(bootstrap, topic, 0, 100)

    async def scenario() -> None:
        a, b = Member(bootstrap, group, [topic]), Member(bootstrap, group, [topic])
        members = [a, b]
        await poll_until(members, lambda: bool(a.owned()) and bool(b.owned())
                         and a.owned() | b.owned() == everything, "a split")
        await poll_until(members, lambda: len(a.records | b.records) == 100, "every record")
        await poll_for(members, 0.5)  # an auto-commit of the positions reached
        events_before = len(a.events) + len(b.events)
        coordinator = await a.consumer.client.find_coordinator(group)
        await asyncio.to_thread(cluster.brokers[coordinator].kill)
        await asyncio.to_thread(produce, bootstrap, topic, 100, 100)
        await poll_until(members, lambda: len(a.records | b.records) == 200,
                         "the records written after the failover", timeout=60)
        assert len(a.events) + len(b.events) == events_before, (
            f"the failover moved partitions: {a.events[-3:]} {b.events[-3:]}")
        assert await a.consumer.client.find_coordinator(group) != coordinator
        # The member went on with its epoch on the new coordinator: a commit is accepted.
        await poll_for(members, 0.5)
        await a.consumer.commit()
        for m in members:
            await m.consumer.close()
        assert_never_owned_twice(members)

    run(scenario())
