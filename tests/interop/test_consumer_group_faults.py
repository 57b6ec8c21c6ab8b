"""KIP-848 consumer groups under faults, with unmodified members, each its own process so
that it can be SIGKILLed: librdkafka (confluent-kafka, ``group.protocol=consumer``,
``rdkafka_group_member.py``) and, for the first scenario, also Kafka 4.4's Java consumer
(``java/GroupConsumer.java``).

* Members come and go while a producer writes a bounded number of records: one member is
  SIGKILLed, one leaves, one joins. Every record is consumed at least once; no partition is
  owned by two members at any instant (from the members' own rebalance callbacks, stamped:
  the previous owner's revocation, or its death, precedes the next owner's assignment); a
  clean handover resumes from the committed offsets (nothing the leaver read is read again);
  the offsets committed at the end are the end of the log.
* The group coordinator is SIGKILLed in a three-broker cluster: the next leader of the
  group's ``__consumer_offsets`` partition loads the group from its records and the members
  carry on with the same assignment — the group epoch does not move (no rebalance storm), no
  member revokes or loses a partition, and no committed offset goes backwards.

Both are slow (several processes, a session timeout, a ZooKeeper session expiry): ``slow``.
Apache Kafka 3.9 in ZooKeeper mode has no KIP-848; the first scenario also runs against
Apache Kafka 4.4 (one KRaft node), which shows the test holds on the reference. The failover
runs against odradek only (a three-node KRaft cluster is not in the harness).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.client.cluster_client import ClusterClient
from odradek.protocol.api_versions import ApiKey
from tests.harness.apache_kafka import ApacheKafka
from tests.harness.kafka import FAST_FAILOVER
from tests.harness.kafka_kraft import KAFKA_4
from tests.interop.conftest import wait_for_leaders
from tests.interop.group_member_process import (
    JavaMember,
    MemberProcess,
    RdKafkaMember,
    assert_never_owned_twice,
    wait_for,
)

pytestmark = pytest.mark.slow

PARTITIONS = 6
GROUP_TIMING = {"group_consumer_heartbeat_interval_ms": "500",
                "group_consumer_session_timeout_ms": "6000"}


@pytest.fixture(params=["librdkafka", pytest.param("java", marks=pytest.mark.java)])
def member_client(request: pytest.FixtureRequest) -> Callable[[str, str, str], MemberProcess]:
    """How a member process starts: librdkafka, or Kafka 4.4's Java consumer."""
    if request.param == "java":
        kafka = ApacheKafka(KAFKA_4)
        if kafka.fetch_jars() is None:
            pytest.skip(f"Apache Kafka {KAFKA_4} unavailable: {kafka.unavailable_reason}")
        return lambda bootstrap, group, topic: JavaMember(kafka, bootstrap, group, topic)
    return RdKafkaMember


def start_member(bootstrap: str, group: str, topic: str) -> MemberProcess:
    return RdKafkaMember(bootstrap, group, topic)


def create_topic(bootstrap: str, replication: int) -> str:
    name = f"faults-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, replication)])[name].result(30)
    wait_for_leaders(admin, name, PARTITIONS, 30)
    return name


class BoundedProducer(threading.Thread):
    """Writes ``count`` records round-robin over the partitions at about ``rate`` per second;
    ``delivered`` holds the (partition, offset) of each acknowledged one."""

    def __init__(self, bootstrap: str, topic: str, count: int, rate: float) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "enable.idempotence": True, "linger.ms": 5})
        self.topic, self.count, self.rate = topic, count, rate
        self.delivered: set[tuple[int, int]] = set()
        self.failed: list[str] = []

    def _report(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failed.append(str(error))
        else:
            self.delivered.add((message.partition(), message.offset()))

    def run(self) -> None:
        for i in range(self.count):
            self.producer.produce(self.topic, f"v{i}".encode(), partition=i % PARTITIONS,
                                  on_delivery=self._report)
            self.producer.poll(0)
            time.sleep(1 / self.rate)
        self.producer.flush(60)


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        consumer.close()


def consumed_after(members: list[MemberProcess], stamp: int) -> set[tuple[int, int]]:
    return {(int(rest.split()[0]), int(rest.split()[1]))
            for m in members for at, event, rest in m.events()
            if event == "RECORD" and at > stamp}


@pytest.fixture(params=["odradek", pytest.param("kafka-4.4", marks=pytest.mark.java)])
def single_broker(request: pytest.FixtureRequest) -> str:
    """odradek, or Apache Kafka 4.4 (one KRaft node): the same scenario passing on Kafka is
    what shows the test, not just odradek, is right."""
    if request.param == "kafka-4.4":
        return str(request.getfixturevalue("kafka_4_kraft").bootstrap)
    return str(request.getfixturevalue("broker_factory")(0, **GROUP_TIMING).bootstrap)


def test_a_member_killed_one_leaving_one_joining_lose_nothing_and_never_share(
    single_broker: str, member_client: Callable[[str, str, str], MemberProcess],
) -> None:
    bootstrap = single_broker
    start_member = member_client
    topic = create_topic(bootstrap, 1)
    group = f"faults-{uuid.uuid4().hex[:8]}"
    producer = BoundedProducer(bootstrap, topic, 1200, rate=80)
    producer.start()
    everything = set(range(PARTITIONS))
    first, second, third = (start_member(bootstrap, group, topic) for _ in range(3))
    members = [first, second, third]
    try:
        wait_for(lambda: all(m.owned() for m in members)
                 and first.owned() | second.owned() | third.owned() == everything,
                 "three members to share the partitions", members)
        first.kill()  # its session times out on the coordinator: then its partitions move
        wait_for(lambda: bool(second.owned()) and bool(third.owned())
                 and second.owned() | third.owned() == everything,
                 "the two survivors to take the killed member's partitions", members)
        handed_over = second.owned()
        second.leave()
        assert second.events()[-1][1] == "CLOSED", second.diagnostics()
        left_at = second.events()[-1][0]
        wait_for(lambda: third.owned() == everything, "the last member to own all", members)
        fourth = start_member(bootstrap, group, topic)
        members.append(fourth)
        wait_for(lambda: bool(third.owned()) and bool(fourth.owned())
                 and third.owned() | fourth.owned() == everything,
                 "the joining member to get a share", members)
        producer.join(60)
        assert not producer.failed, producer.failed[:5]
        assert len(producer.delivered) == 1200
        wait_for(lambda: producer.delivered <= set().union(*(m.records() for m in members)),
                 "every produced record to be consumed", members)
        third.leave()
        fourth.leave()
    finally:
        for member in members:
            member.kill()

    assert_never_owned_twice(members)
    # The leaver committed on revocation: its successors started where it stopped.
    reread = consumed_after([third, fourth], left_at) & {
        r for r in second.records() if r[0] in handed_over}
    assert not reread, f"records of a clean handover read again: {sorted(reread)[:10]}"
    # Only what the killed member read after its last auto-commit may be read twice.
    duplicates = first.records() & set().union(*(m.records() for m in members[1:]))
    assert len(duplicates) < 100, len(duplicates)
    ends = {p: sum(1 for q, _ in producer.delivered if q == p) for p in range(PARTITIONS)}
    assert committed(bootstrap, group, topic) == ends


async def group_epoch(bootstrap: str, group: str) -> int:
    """The group epoch, from ConsumerGroupDescribe (sent at v0 to the group's coordinator)."""
    client = ClusterClient(bootstrap)
    try:
        node = await client.find_coordinator(group)
        response = await client.send(node, ApiKey.CONSUMER_GROUP_DESCRIBE,
                                     {"group_ids": [group],
                                      "include_authorized_operations": False}, version=0)
        described = response.groups[0]
        assert described.error_code == 0, described
        return int(described.group_epoch)
    finally:
        await client.close()


async def coordinator_of(bootstrap: str, group: str) -> int:
    client = ClusterClient(bootstrap)
    try:
        return await client.find_coordinator(group)
    finally:
        await client.close()


def test_killing_the_group_coordinator_resumes_the_group_without_a_rebalance(
    cluster_factory: Callable[..., Any],
) -> None:
    overrides = {**FAST_FAILOVER, **GROUP_TIMING, "offsets_topic_replication_factor": "3",
                 "offsets_topic_num_partitions": "6", "min_insync_replicas": "1"}
    cluster = cluster_factory(3, **overrides)
    bootstrap = cluster.bootstrap
    topic = create_topic(bootstrap, 3)
    group = f"failover-{uuid.uuid4().hex[:8]}"
    producer = BoundedProducer(bootstrap, topic, 900, rate=60)
    producer.start()
    everything = set(range(PARTITIONS))
    members = [start_member(bootstrap, group, topic) for _ in range(3)]
    try:
        wait_for(lambda: all(m.owned() for m in members)
                 and set().union(*(m.owned() for m in members)) == everything,
                 "three members to share the partitions", members)
        wait_for(lambda: len(set().union(*(m.records() for m in members))) > 150,
                 "the members to consume and commit", members)
        time.sleep(1)  # > auto.commit.interval.ms: the positions reached are committed
        epoch_before = asyncio.run(group_epoch(bootstrap, group))
        committed_before = committed(bootstrap, group, topic)
        coordinator = asyncio.run(coordinator_of(bootstrap, group))
        killed_at = int(time.time() * 1000)
        cluster.brokers[coordinator].kill()
        survivors = ",".join(b.bootstrap for b in cluster.brokers if b.running)
        wait_for(lambda: asyncio.run(coordinator_of(survivors, group)) != coordinator,
                 "another broker to become the group's coordinator", members)
        producer.join(90)
        assert not producer.failed, producer.failed[:5]
        wait_for(lambda: producer.delivered <= set().union(*(m.records() for m in members)),
                 "every produced record to be consumed", members)
        time.sleep(1)
        epoch_after = asyncio.run(group_epoch(survivors, group))
        committed_after = committed(survivors, group, topic)
        leaving_at = int(time.time() * 1000)
        for member in members:
            member.leave()
    finally:
        for member in members:
            member.kill()

    assert epoch_after == epoch_before, (
        f"the group epoch moved from {epoch_before} to {epoch_after} across the failover")
    moves = [(i, event, rest) for i, m in enumerate(members) for at, event, rest in m.events()
             if killed_at < at < leaving_at and event in ("REVOKED", "LOST", "ASSIGNED")]
    assert not moves, f"partitions moved during the failover: {moves}"
    for p, offset in committed_before.items():
        assert committed_after[p] >= offset, (p, committed_before, committed_after)
    assert committed_after == {p: sum(1 for q, _ in producer.delivered if q == p)
                               for p in range(PARTITIONS)}
    assert_never_owned_twice(members)
