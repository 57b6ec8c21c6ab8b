"""Kafka 4.4's Java consumer with ``group.protocol=consumer`` (KIP-848) against the target.

Two consumers (``java/GroupConsumer.java``, run as a single-file program on the 4.4 client
jars from Maven Central) share a group: they split the topic's partitions between them,
every record is consumed at least once, no partition is ever owned by both (checked from
their own rebalance-listener callbacks), one leaves and the other takes over its partitions
from the committed offsets. Apache Kafka in ZooKeeper mode (the ``apache`` target) never
had this protocol, so the test only runs against odradek.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from odradek.coordinator import partition_for_group
from tests.harness.apache_kafka import ApacheKafka
from tests.interop.conftest import Target

pytestmark = pytest.mark.java

KAFKA_4 = "4.4.0"
PROGRAM = Path(__file__).parent / "java" / "GroupConsumer.java"
PARTITIONS = 4
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"  # moved from kafka.tools in 4.x
WAIT_S = 60.0


class JavaMember:
    """One GroupConsumer process; its stdout lines, parsed as they arrive."""

    def __init__(self, kafka: ApacheKafka, bootstrap: str, group: str, topic: str,
                 *properties: str) -> None:
        cmd = kafka.java_command(str(PROGRAM), [bootstrap, group, topic, *properties],
                                 ["-Xmx256M", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.lines: list[tuple[int, str, str]] = []  # (wall ms, event, rest)
        self.stderr: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            stamp, event, *rest = line.rstrip("\n").split(" ", 2)
            with self._lock:
                self.lines.append((int(stamp), event, rest[0] if rest else ""))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def events(self) -> list[tuple[int, str, str]]:
        with self._lock:
            return list(self.lines)

    def owned(self) -> set[int]:
        """Partitions owned now, replaying the rebalance-listener callbacks."""
        owned: set[int] = set()
        for _stamp, event, rest in self.events():
            if event not in ("ASSIGNED", "REVOKED", "LOST"):
                continue
            parts = {int(p) for p in rest.split(",") if p}
            if event == "ASSIGNED":
                owned |= parts
            elif event in ("REVOKED", "LOST"):
                owned -= parts
        return owned

    def records(self) -> set[tuple[int, int]]:
        return {(int(rest.split()[0]), int(rest.split()[1]))
                for _s, event, rest in self.events() if event == "RECORD"}

    def intervals(self) -> dict[int, list[tuple[int, int]]]:
        """partition -> [(owned from, owned until)] in wall-clock ms."""
        start: dict[int, int] = {}
        spans: dict[int, list[tuple[int, int]]] = {}
        for stamp, event, rest in self.events():
            if event not in ("ASSIGNED", "REVOKED", "LOST"):
                continue
            for p in (int(x) for x in rest.split(",") if x):
                if event == "ASSIGNED":
                    start[p] = stamp
                elif event in ("REVOKED", "LOST") and p in start:
                    spans.setdefault(p, []).append((start.pop(p), stamp))
        for p, since in start.items():
            spans.setdefault(p, []).append((since, 2**62))
        return spans

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def diagnostics(self) -> str:
        return (f"exit={self.proc.poll()} events={self.events()[-20:]}\n"
                f"stderr tail:\n{''.join(self.stderr[-30:])}")


def wait_for(condition: Callable[[], bool], what: str, members: list[JavaMember]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n" +
                        "\n".join(m.diagnostics() for m in members))
        time.sleep(0.2)


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
    a, b = first.intervals(), second.intervals()
    for p in range(PARTITIONS):
        for a_from, a_until in a.get(p, []):
            for b_from, b_until in b.get(p, []):
                assert a_until <= b_from or b_until <= a_from, (
                    f"partition {p} owned by both: {a_from}-{a_until} and {b_from}-{b_until}")
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
