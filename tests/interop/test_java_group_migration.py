"""A running group of Kafka 4.4 Java consumers rolled from ``group.protocol=classic`` to
``consumer`` one member at a time while a producer writes, then rolled back (KIP-848's
online upgrade and downgrade).

Three ``java/GroupConsumer.java`` members start classic (eager ``range``); each is stopped
(LeaveGroup) and replaced by one speaking the consumer protocol: the first replacement
upgrades the group, the classic members left are served inside the consumer group through
JoinGroup/SyncGroup. Then each is replaced by a classic one again: when the last
consumer-protocol member leaves, the group turns classic. Checked from the members' own
output: every record produced is consumed at least once, no partition is owned by two
members at any instant (their rebalance-listener callbacks, wall clock), the group's type
follows the roll, and the committed offsets end at the end of the log.

Apache Kafka in ZooKeeper mode (the ``apache`` target) has no KIP-848 groups; against an
Apache Kafka 4.x broker in KRaft mode (``ODRADEK_INTEROP_BOOTSTRAP``) the same test runs
unchanged, which is how it was checked against Kafka's own behaviour.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import ConsumerGroupType, Producer

from odradek.coordinator import partition_for_group
from tests.harness.apache_kafka import ApacheKafka
from tests.interop.conftest import Target
from tests.interop.test_java_consumer_protocol import (
    DUMP_LOG_SEGMENTS,
    PARTITIONS,
    JavaMember,
    committed,
    kafka_4,  # noqa: F401 (the fixture)
    wait_for,
)

pytestmark = [pytest.mark.java, pytest.mark.slow]

CLASSIC = ("group.protocol=classic",)
CONSUMER = ("group.protocol=consumer",)


class BackgroundProducer:
    """Writes one record every few ms until stopped; remembers every acknowledged one."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.acked: set[tuple[int, int]] = set()
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self._thread = threading.Thread(target=self._run, args=(topic,), daemon=True)
        self._thread.start()

    def _delivered(self, error: object, message: object) -> None:
        if error is None:
            self.acked.add((message.partition(), message.offset()))  # type: ignore[attr-defined]

    def _run(self, topic: str) -> None:
        i = 0
        while not self._stop.is_set():
            self._producer.produce(topic, value=f"v{i}".encode(), partition=i % PARTITIONS,
                                   on_delivery=self._delivered)
            self._producer.poll(0)
            i += 1
            self._stop.wait(0.01)

    def stop(self) -> set[tuple[int, int]]:
        self._stop.set()
        self._thread.join(10)
        assert self._producer.flush(30) == 0
        return self.acked


def group_type(target: Target, group: str) -> ConsumerGroupType | None:
    """The group's type by ListGroups' type filter (v5, KIP-848)."""
    admin = target.admin()
    for kind in (ConsumerGroupType.CLASSIC, ConsumerGroupType.CONSUMER):
        listed = admin.list_consumer_groups(types={kind}, request_timeout=10).result()
        if any(g.group_id == group for g in listed.valid):
            return kind
    return None


def test_a_running_group_rolls_from_classic_to_consumer_and_back(
    target: Target, kafka_4: ApacheKafka,  # noqa: F811
) -> None:
    if target.name == "apache":
        pytest.skip("Apache Kafka in ZooKeeper mode has no KIP-848 consumer groups")
    topic = target.create_topic(PARTITIONS, prefix="migrate")
    group = f"migrate-{uuid.uuid4().hex[:8]}"
    everything = set(range(PARTITIONS))
    producer = BackgroundProducer(target.bootstrap, topic)
    members: list[JavaMember] = []
    live: list[JavaMember] = []

    def start(protocol: tuple[str, ...]) -> JavaMember:
        member = JavaMember(kafka_4, target.bootstrap, group, topic, *protocol)
        members.append(member)
        live.append(member)
        return member

    def settled() -> bool:
        owned = [m.owned() for m in live]
        return all(owned) and set().union(*owned) == everything and sum(map(len, owned)) == (
            PARTITIONS)

    def roll(protocol: tuple[str, ...]) -> None:
        for _ in range(3):
            old = live.pop(0)
            old.leave()
            assert old.events()[-1][1] == "CLOSED", old.diagnostics()
            new = start(protocol)
            wait_for(lambda new=new: bool(new.owned()) and settled(),  # type: ignore[misc]
                     f"the group to settle with {protocol[0]}", members)

    try:
        for _ in range(3):
            start(CLASSIC)
        wait_for(settled, "the classic group to settle", members)
        assert group_type(target, group) == ConsumerGroupType.CLASSIC

        roll(CONSUMER)
        assert group_type(target, group) == ConsumerGroupType.CONSUMER
        roll(CLASSIC)
        assert group_type(target, group) == ConsumerGroupType.CLASSIC

        produced = producer.stop()
        wait_for(lambda: produced <= set().union(*(m.records() for m in members)),
                 "every produced record to be consumed", members)
        for member in live:
            member.leave()
    finally:
        producer.stop()
        for member in members:
            member.kill()

    # No partition was owned by two members at any instant (their own callbacks say so).
    spans = [(i, p, since, until) for i, m in enumerate(members)
             for p, intervals in m.intervals().items() for since, until in intervals]
    for i, p, since, until in spans:
        for j, q, other_since, other_until in spans:
            if i < j and p == q:
                assert until <= other_since or other_until <= since, (
                    f"partition {p} owned by members {i} and {j} at once: "
                    f"{since}-{until} and {other_since}-{other_until}")
    # The committed offsets survived both conversions: they end at the end of the log.
    ends = {p: 1 + max(o for q, o in produced if q == p) for p in everything}
    assert committed(target, group, topic) == ends
    if target.log_dir is not None:
        assert_kafka_reads_the_conversions(kafka_4, target, group)


def assert_kafka_reads_the_conversions(kafka: ApacheKafka, target: Target, group: str) -> None:
    """Kafka's own decoder reads the group's records: the classic group's tombstone before
    the consumer group's records, the classic members' metadata (tagged field), and the
    classic group's metadata record again after the consumer group's tombstones."""
    assert target.log_dir is not None
    directory = target.log_dir / f"__consumer_offsets-{partition_for_group(group, 50)}"
    dumped = kafka.run_java_tool(DUMP_LOG_SEGMENTS, [
        "--offsets-decoder", "--files", ",".join(str(s) for s in sorted(directory.glob("*.log")))])
    # Classic records name the group "group", consumer-group records "groupId".
    lines = [line for line in dumped.stdout.splitlines()
             if f'"{group}"' in line.split("payload:", 1)[0] and '"type":"1"' not in line]
    kinds = [line.split('"type":"', 1)[1].split('"', 1)[0]
             + (" tombstone" if "payload: <DELETE>" in line or "payload: null" in line else "")
             for line in lines]
    detail = "\n".join(f"{kind} {line.split('payload:', 1)[1][:160]}"
                       for kind, line in zip(kinds, lines, strict=True))
    upgrade = kinds.index("2 tombstone")
    assert kinds[upgrade + 1] == "5", detail
    assert any('"classicMemberMetadata":{"sessionTimeoutMs":' in line for line in lines)
    downgrade = len(kinds) - 1 - kinds[::-1].index("3 tombstone")
    assert "2" in kinds[downgrade:], kinds
    assert "Exception" not in dumped.stdout + dumped.stderr, dumped.stderr[-3000:]
