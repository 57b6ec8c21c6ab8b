"""Apache Kafka's own command-line tools (Java, from Maven Central) against the target.

kafka-topics (TopicCommand) creates, lists and describes topics through the Admin client;
the console producer (Java producer: idempotent, acks=all by default) and console consumer
(manual assignment via --partition, so no consumer group) round-trip keyed messages with
headers; DumpLogSegments reads the segment, offset-index and time-index files the target
wrote, which checks the on-disk format against Kafka's own reader.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid

import pytest

from tests.harness.apache_kafka import (
    CONSOLE_CONSUMER,
    CONSOLE_PRODUCER,
    DUMP_LOG_SEGMENTS,
    GET_OFFSETS,
    LEADER_ELECTION,
    TOPIC_COMMAND,
    ApacheKafka,
)
from tests.interop.clients import CLIENTS, IDEMPOTENT, Message
from tests.interop.conftest import Target

pytestmark = pytest.mark.java

TOOL_TIMEOUT = 90.0


def run_tool(kafka: ApacheKafka, main_class: str, *args: str, input: str | None = None) -> str:
    proc = kafka.run_java_tool(main_class, list(args), TOOL_TIMEOUT, input=input)
    assert proc.returncode == 0, (
        f"{main_class} {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\n"
        f"stderr:\n{proc.stderr}")
    return proc.stdout


def test_kafka_topics_create_list_describe(target: Target, apache_kafka: ApacheKafka) -> None:
    topic = f"tools-topics-{uuid.uuid4().hex[:8]}"
    bootstrap = ("--bootstrap-server", target.bootstrap)
    out = run_tool(apache_kafka, TOPIC_COMMAND, *bootstrap, "--create", "--topic", topic,
                   "--partitions", "3", "--replication-factor", "1",
                   "--config", "retention.ms=3600000")
    assert f"Created topic {topic}." in out

    assert topic in run_tool(apache_kafka, TOPIC_COMMAND, *bootstrap, "--list").split()

    described = run_tool(apache_kafka, TOPIC_COMMAND, *bootstrap, "--describe", "--topic",
                         topic)
    assert re.search(rf"Topic: {re.escape(topic)}\s.*PartitionCount: 3\s.*ReplicationFactor: 1",
                     described), described
    assert "retention.ms=3600000" in described, described
    for partition in range(3):
        assert re.search(rf"Topic: {re.escape(topic)}\s+Partition: {partition}\s+Leader: \d+\s+"
                         r"Replicas: \d+\s+Isr: \d+", described), described

    # Creating it again is an error the tool reports (TopicExistsException), not a crash.
    again = apache_kafka.run_java_tool(TOPIC_COMMAND, [*bootstrap, "--create", "--topic", topic,
                                                       "--partitions", "1"], TOOL_TIMEOUT)
    assert again.returncode != 0 and "already exists" in (again.stdout + again.stderr)


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_console_producer_to_console_consumer(target: Target, apache_kafka: ApacheKafka,
                                              codec: str) -> None:
    topic = target.create_topic(1, prefix=f"tools-console-{codec}")
    lines = [f"h1:v{i},h2:x\tkey-{i % 5}\tvalue {i} {'.' * (i % 40)}" for i in range(200)]
    run_tool(apache_kafka, CONSOLE_PRODUCER, "--bootstrap-server", target.bootstrap,
             "--topic", topic, "--compression-codec", codec,
             "--property", "parse.key=true", "--property", "parse.headers=true",
             input="\n".join(lines) + "\n")
    out = run_tool(apache_kafka, CONSOLE_CONSUMER, "--bootstrap-server", target.bootstrap,
                   "--topic", topic, "--partition", "0", "--offset", "earliest",
                   "--max-messages", str(len(lines)), "--timeout-ms", "30000",
                   "--property", "print.key=true", "--property", "print.headers=true",
                   "--consumer-property", "enable.auto.commit=false")
    assert out.splitlines() == lines


def _hex(i: int) -> bytes:
    return hashlib.sha512(b"%d" % i).hexdigest().encode()


def test_dump_log_segments_reads_what_the_target_wrote(target: Target,
                                                        apache_kafka: ApacheKafka) -> None:
    """Several lz4 batches into a topic with small segments, then Kafka's reader checks the
    first (rolled, so sealed and trimmed) segment and its offset and time indexes."""
    topic = target.create_topic(1, prefix="tools-dump", config={"segment.bytes": "100000"})
    base_ts = int(time.time() * 1000) - 100_000
    # Hex digests: printable, and barely compressible, so the segments fill up.
    messages = [Message(b"k%d" % i, b"payload-%05d-" % i + _hex(i), (("h", b"%d" % i),),
                        base_ts + i) for i in range(3000)]
    for start in range(0, len(messages), 300):  # one flush per chunk: >= 10 batches
        CLIENTS[0].produce(target.bootstrap, topic, messages[start:start + 300], "lz4",
                           IDEMPOTENT, 60)
    partition_dir = target.partition_dir(topic, 0)
    segments = sorted(partition_dir.glob("*.log"))
    assert len(segments) >= 2, f"segment.bytes=100000 should have rolled: {segments}"
    first, next_base = segments[0], int(segments[1].stem)
    assert first.name == "0" * 20 + ".log"

    out = run_tool(apache_kafka, DUMP_LOG_SEGMENTS, "--files", str(first), "--deep-iteration",
                   "--print-data-log")
    batches = [line for line in out.splitlines() if line.startswith("baseOffset:")]
    assert batches, out[:2000]
    assert all("compresscodec: lz4" in b for b in batches), (
        "the producer's lz4 batches are not stored as lz4:\n" + "\n".join(batches[:3]))
    assert all("isvalid: true" in b for b in batches), "\n".join(batches[:3])
    offsets = [int(m) for m in re.findall(r"\| offset: (\d+) ", out)]
    assert offsets == list(range(next_base)), "records of the first segment"
    payloads = re.findall(r"payload: (payload-\d+-[0-9a-f]+)", out)
    assert payloads == [m.value.decode() for m in messages[:next_base]]
    assert re.search(r"headerKeys: \[h\]", out)

    for suffix, entry in ((".index", r"offset: \d+ position: \d+"),
                          (".timeindex", r"timestamp: \d+ offset: \d+")):
        path = first.with_suffix(suffix)
        assert path.exists(), f"no {suffix} file beside {first.name}"
        checked = run_tool(apache_kafka, DUMP_LOG_SEGMENTS, "--files", str(path),
                           "--index-sanity-check")
        assert "passed sanity check" in checked, checked
        dumped = run_tool(apache_kafka, DUMP_LOG_SEGMENTS, "--files", str(path))
        assert re.search(entry, dumped), f"{suffix} has no entries:\n{dumped[:1000]}"
        assert "Mismatches" not in dumped and "out of order" not in dumped.lower(), dumped


def test_kafka_leader_election_reports_only_partitions_that_needed_one(
        target: Target, apache_kafka: ApacheKafka) -> None:
    """kafka-leader-election --all-topic-partitions (ElectLeaders with null partitions):
    partitions led by their preferred replica are left out of the answer, so the tool does
    not list the whole cluster as "already elected"; named partitions still are."""
    topic = target.create_topic(2, prefix="tools-election")
    bootstrap = ("--bootstrap-server", target.bootstrap, "--election-type", "preferred")
    everything = run_tool(apache_kafka, LEADER_ELECTION, *bootstrap, "--all-topic-partitions")
    assert "already elected" not in everything, everything
    named = run_tool(apache_kafka, LEADER_ELECTION, *bootstrap, "--topic", topic,
                     "--partition", "0")
    assert f"Valid replica already elected for partitions {topic}-0" in named, named


def test_kafka_get_offsets_max_timestamp_is_the_first_record_holding_it(
        target: Target, apache_kafka: ApacheKafka) -> None:
    """kafka-get-offsets --time max-timestamp (ListOffsets -3): of several records sharing
    the largest timestamp, the first one's offset."""
    topic = target.create_topic(1, prefix="tools-maxts")
    base = int(time.time() * 1000) - 60_000
    stamps = [base, base + 5, base + 9, base + 9, base + 9, base + 3, base + 9]
    messages = [Message(b"k", b"v%d" % i, (), ts) for i, ts in enumerate(stamps)]
    CLIENTS[0].produce(target.bootstrap, topic, messages, "none", IDEMPOTENT, 60)
    out = run_tool(apache_kafka, GET_OFFSETS, "--bootstrap-server", target.bootstrap,
                   "--topic", topic, "--time", "-3")
    assert out.split() == [f"{topic}:0:2"], out
