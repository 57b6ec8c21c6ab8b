"""Kafka 4.4's Java consumer with ``group.protocol=consumer`` (KIP-848) against the target.

Two consumers (``java/GroupConsumer.java``, run as a single-file program on the 4.4 client
jars from Maven Central) share a group: they split the topic's partitions between them,
every record is consumed at least once, no partition is ever owned by both (checked from
their own rebalance-listener callbacks), one leaves and the other takes over its partitions
from the committed offsets. Apache Kafka in ZooKeeper mode (the ``apache`` target) never
had this protocol, so the test only runs against odradek.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from odradek.coordinator import partition_for_group
from tests.harness.apache_kafka import ApacheKafka
from tests.harness.kafka_kraft import KAFKA_4
from tests.interop.conftest import Target
from tests.interop.group_member_process import (
    JavaMember,
    assert_never_owned_twice,
    wait_for,
)

pytestmark = pytest.mark.java

PARTITIONS = 4
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"  # moved from kafka.tools in 4.x
WAIT_S = 60.0


def produce(target: Target, topic: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": target.bootstrap})
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def committed(target: Target, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def kafka_4() -> ApacheKafka:
    kafka = ApacheKafka(KAFKA_4)
    if kafka.fetch_jars() is None:
        pytest.skip(f"Apache Kafka {KAFKA_4} jars unavailable: {kafka.unavailable_reason}")
    return kafka


def test_two_java_consumers_split_then_one_takes_over_with_committed_offsets(
    target: Target, kafka_4: ApacheKafka
) -> None:
    if target.name == "apache":
        pytest.skip("Apache Kafka in ZooKeeper mode has no KIP-848 consumer groups")
    topic = target.create_topic(PARTITIONS, prefix="kip848")
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    produce(target, topic, 0, 400)
    first = JavaMember(kafka_4, target.bootstrap, group, topic)
    members = [first]
    try:
        wait_for(lambda: first.owned() == set(range(PARTITIONS)), "the first member to own "
                 "every partition", members)
        second = JavaMember(kafka_4, target.bootstrap, group, topic)
        members.append(second)
        wait_for(lambda: bool(first.owned()) and bool(second.owned())
                 and first.owned() | second.owned() == set(range(PARTITIONS)),
                 "both members to share the partitions", members)
        assert not first.owned() & second.owned()
        # Kafka 4.4's kafka-consumer-groups sees the group's type and both members
        # (ListGroups v5, ConsumerGroupDescribe).
        listed = kafka_4.run_java_tool(GROUP_COMMAND, ["--bootstrap-server", target.bootstrap,
                                                       "--list", "--type", "consumer"])
        assert group in listed.stdout.split(), listed.stdout + listed.stderr
        described = kafka_4.run_java_tool(GROUP_COMMAND, [
            "--bootstrap-server", target.bootstrap, "--describe", "--group", group,
            "--members"])
        rows = [line.split() for line in described.stdout.splitlines()
                if line.startswith(group)]
        assert sorted(int(row[4]) for row in rows) == [2, 2], described.stdout + described.stderr
        check_verbose_describe(kafka_4, target, group, topic)
        wait_for(lambda: len(first.records() | second.records()) == 400,
                 "every record to be consumed", members)

        first.leave()
        assert first.events()[-1][1] == "CLOSED", first.diagnostics()
        wait_for(lambda: second.owned() == set(range(PARTITIONS)),
                 "the second member to take over every partition", members)
        produce(target, topic, 400, 100)
        wait_for(lambda: len(first.records() | second.records()) == 500,
                 "the records produced after the takeover", members)
        second.leave()
    finally:
        for member in members:
            member.kill()

    # No partition was owned by both members at any instant (their own callbacks say so).
    assert_never_owned_twice([first, second])
    # Committed offsets survive both members: the group's position is the end of the log.
    assert committed(target, group, topic) == {p: 125 for p in range(PARTITIONS)}
    # The group's records in __consumer_offsets are Kafka's: its own decoder reads them.
    if target.log_dir is not None:
        offsets_partition = partition_for_group(group, 50)  # offsets.topic.num.partitions
        segments = sorted((target.log_dir / f"__consumer_offsets-{offsets_partition}")
                          .glob("*.log"))
        dumped = kafka_4.run_java_tool(DUMP_LOG_SEGMENTS, [
            "--offsets-decoder", "--files", ",".join(str(s) for s in segments)])
        out = dumped.stdout
        # Key types 3, 5, 6, 7, 8 (group epoch, member metadata, target assignment epoch,
        # target member assignment, current member assignment), values decoded by Kafka.
        for key_type, value_field in (("3", '"epoch":'), ("5", '"subscribedTopicNames":'),
                                      ("6", '"assignmentEpoch":'), ("7", '"topicPartitions":'),
                                      ("8", '"assignedPartitions":')):
            decoded = [line for line in out.splitlines() if f'"type":"{key_type}"' in line]
            assert any(value_field in line for line in decoded), (out + dumped.stderr)[-3000:]
        assert "Exception" not in out + dumped.stderr, (out + dumped.stderr)[-3000:]


def check_verbose_describe(kafka: ApacheKafka, target: Target, group: str, topic: str) -> None:
    """``--members --verbose``, ``--offsets`` and ``--state --verbose`` print what they print
    against Apache Kafka 4.x: its columns, each member's epoch and current vs. target
    assignment, each partition's committed offset and owner, the group's epochs and
    assignor, and no error."""
    def run(*flags: str) -> tuple[list[str], list[list[str]]]:
        done = kafka.run_java_tool(GROUP_COMMAND, ["--bootstrap-server", target.bootstrap,
                                                   "--describe", "--group", group, *flags])
        lines = done.stdout.splitlines()
        assert "Error" not in done.stdout + done.stderr, done.stdout + done.stderr
        header = next((line.split() for line in lines if line.startswith("GROUP ")), [])
        return header, [line.split() for line in lines if line.startswith(group + " ")]

    for _ in range(10):  # the group may still be reconciling the second member's arrival
        header, rows = run("--members", "--verbose")
        if all(row[5] == row[7] and row[6] == row[8] for row in rows):
            break
        time.sleep(1)
    assert header == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                      "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                      "TARGET-ASSIGNMENT"], header
    assert len(rows) == 2 and all(row[5] == row[7] and row[6] == row[8] for row in rows), rows
    owned = [int(p) for row in rows for p in row[6].removeprefix(topic + ":").split(",")]
    assert sorted(owned) == list(range(PARTITIONS)), rows

    # Offsets: OffsetFetch at the version Kafka 4.4's admin client uses (topic ids, v10).
    header, rows = run("--offsets")
    assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                      "CONSUMER-ID", "HOST", "CLIENT-ID"], header
    assert sorted(int(row[2]) for row in rows) == list(range(PARTITIONS)), rows
    assert all(row[1] == topic and row[6] != "-" for row in rows), rows

    header, rows = run("--state", "--verbose")
    assert header == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE",
                      "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"], header
    assert len(rows) == 1 and rows[0][3:5] == ["uniform", "Stable"], rows
    assert rows[0][5] == rows[0][6] and rows[0][7] == "2", rows


def test_a_static_member_restarts_into_its_partitions_without_moving_the_others(
    target: Target, kafka_4: ApacheKafka
) -> None:
    """``group.instance.id``: a static member that closes leaves with epoch -2 and keeps
    its partitions (nobody else gets them) until its restarted process takes them back."""
    if target.name == "apache":
        pytest.skip("Apache Kafka in ZooKeeper mode has no KIP-848 consumer groups")
    topic = target.create_topic(PARTITIONS, prefix="kip848-static")
    group = f"kip848-static-{uuid.uuid4().hex[:8]}"
    static = ("group.instance.id=instance-a",)
    first = JavaMember(kafka_4, target.bootstrap, group, topic, *static)
    members = [first]
    try:
        wait_for(lambda: first.owned() == set(range(PARTITIONS)), "the first member to own "
                 "every partition", members)
        other = JavaMember(kafka_4, target.bootstrap, group, topic)
        members.append(other)
        wait_for(lambda: bool(first.owned()) and bool(other.owned())
                 and first.owned() | other.owned() == set(range(PARTITIONS)),
                 "both members to share the partitions", members)
        theirs, kept = first.owned(), other.owned()
        first.leave()
        time.sleep(6)  # > group.consumer.heartbeat.interval.ms: the other member heartbeats
        assert other.owned() == kept, other.diagnostics()
        restarted = JavaMember(kafka_4, target.bootstrap, group, topic, *static)
        members.append(restarted)
        wait_for(lambda: restarted.owned() == theirs, "the restarted instance to get its "
                 "partitions back", members)
        assert other.owned() == kept
        assert [e for e in other.events() if e[1] in ("ASSIGNED", "REVOKED")][-1][1] == (
            "ASSIGNED"), other.diagnostics()
        restarted.leave()
        other.leave()
    finally:
        for member in members:
            member.kill()


def test_librdkafka_consumers_split_then_one_takes_over(target: Target) -> None:
    """librdkafka's KIP-848 support (confluent-kafka's ``group.protocol=consumer``): the
    same scenario, both members polled from this thread; ownership from their callbacks."""
    if target.name == "apache":
        pytest.skip("Apache Kafka in ZooKeeper mode has no KIP-848 consumer groups")
    topic = target.create_topic(PARTITIONS, prefix="kip848-rdk")
    group = f"kip848-rdk-{uuid.uuid4().hex[:8]}"
    produce(target, topic, 0, 200)
    owned: dict[str, set[int]] = {"a": set(), "b": set()}
    seen: set[tuple[int, int]] = set()
    twice: list[str] = []

    def member(name: str) -> Consumer:
        def on_assign(consumer: Consumer, tps: list[TopicPartition]) -> None:
            other = owned["b" if name == "a" else "a"]
            twice.extend(f"{tp.partition} given to {name} while owned by the other"
                         for tp in tps if tp.partition in other)
            owned[name] |= {tp.partition for tp in tps}

        def on_revoke(consumer: Consumer, tps: list[TopicPartition]) -> None:
            owned[name] -= {tp.partition for tp in tps}

        consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group,
                             "group.protocol": "consumer", "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke,
                           on_lost=on_revoke)
        return consumer

    def poll_until(consumers: list[Consumer], condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {owned}"
            for consumer in consumers:
                message = consumer.poll(0.1)
                if message is None or message.error() is not None:
                    continue
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                seen.add((partition, offset))
                consumer.commit(offsets=[TopicPartition(topic, partition, offset + 1)],
                                asynchronous=False)

    a = member("a")
    poll_until([a], lambda: owned["a"] == set(range(PARTITIONS)), "a to own everything")
    b = member("b")
    try:
        poll_until([a, b], lambda: bool(owned["a"]) and bool(owned["b"])
                   and owned["a"] | owned["b"] == set(range(PARTITIONS)), "a split")
        poll_until([a, b], lambda: len(seen) == 200, "every record")
        a.close()
        owned["a"] = set()
        poll_until([b], lambda: owned["b"] == set(range(PARTITIONS)), "b to take over")
        produce(target, topic, 200, 100)
        poll_until([b], lambda: len(seen) == 300, "the records produced after the takeover")
    finally:
        b.close()
    assert not twice
    assert committed(target, group, topic) == {p: 75 for p in range(PARTITIONS)}
