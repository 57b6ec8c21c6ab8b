"""Transactions with Apache Kafka's Java client and tools against the target.

TransactionalMessageCopier (Kafka's own system-test tool: the Java consumer and the Java
transactional producer, offsets sent to the transaction, random aborts that rewind) copies
a partition; the output read with the console consumer at read_committed holds every input
exactly once. ``kafka-transactions`` (TransactionsCommand) then lists and describes the
copier's transactional id through the Admin client (ListTransactions,
DescribeTransactions), and finds and aborts a hanging transaction (DescribeProducers,
WriteTxnMarkers from the admin). Runs against odradek and, with the apache target, against
Kafka.
"""

from __future__ import annotations

import re
import time
import uuid

import pytest

from tests.harness.apache_kafka import CONSOLE_CONSUMER, CONSOLE_PRODUCER, ApacheKafka
from tests.interop.conftest import Target

from .test_java_tools import run_tool

pytestmark = pytest.mark.java

COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
COUNT = 400


def test_java_transactional_copier_is_exactly_once_and_the_tool_sees_it(
    target: Target, apache_kafka: ApacheKafka
) -> None:
    source = target.create_topic(1, prefix="java-txn-in")
    sink = target.create_topic(1, prefix="java-txn-out")
    lines = [f"line-{i}" for i in range(COUNT)]
    run_tool(apache_kafka, CONSOLE_PRODUCER, "--bootstrap-server", target.bootstrap,
             "--topic", source, input="\n".join(lines) + "\n")
    transactional_id = f"copier-{uuid.uuid4().hex[:8]}"
    run_tool(apache_kafka, COPIER, "--broker-list", target.bootstrap, "--input-topic", source,
             "--input-partition", "0", "--output-topic", sink, "--max-messages", str(COUNT),
             "--transaction-size", "40", "--transactional-id", transactional_id,
             "--consumer-group", f"g-{transactional_id}", "--enable-random-aborts",
             "--use-group-metadata")
    out = run_tool(apache_kafka, CONSOLE_CONSUMER, "--bootstrap-server", target.bootstrap,
                   "--topic", sink, "--partition", "0", "--offset", "earliest",
                   "--isolation-level", "read_committed", "--timeout-ms", "10000",
                   "--consumer-property", "enable.auto.commit=false")
    copied = [line for line in out.splitlines() if line.startswith("line-")]
    assert sorted(copied) == sorted(lines), (
        f"{len(copied)} copied, {len(set(copied))} distinct of {COUNT}")

    listed = run_tool(apache_kafka, TRANSACTIONS, "--bootstrap-server", target.bootstrap,
                      "list")
    assert re.search(rf"^{re.escape(transactional_id)}\s+\d+\s+\d+\s+\w+", listed,
                     re.MULTILINE), listed
    described = run_tool(apache_kafka, TRANSACTIONS, "--bootstrap-server", target.bootstrap,
                         "describe", "--transactional-id", transactional_id)
    assert re.search(r"CompleteCommit|CompleteAbort|Empty", described), described


def test_java_tool_finds_and_aborts_a_hanging_transaction(
    target: Target, apache_kafka: ApacheKafka
) -> None:
    """A transactional batch whose producer vanished and whose coordinator never heard of
    it holds the partition's LSO forever: ``describe-producers`` shows it (DescribeProducers),
    ``find-hanging`` lists it (no transactional id owns that producer), and ``abort`` writes
    its ABORT marker (WriteTxnMarkers from the admin), so read_committed readers move on."""
    if target.name != "odradek":
        pytest.skip("Kafka verifies transactional appends (KIP-890): no hanging batch to make")
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as ConfluentPartition

    from odradek.protocol.records import Record, encode_batch
    from tests.broker.helpers import batch, produce_request
    from tests.broker.wire import WireClient

    topic = target.create_topic(1, prefix="java-hanging")
    producer_id = 9_000_000 + uuid.uuid4().int % 1_000_000
    hanging = encode_batch([Record(timestamp=int(time.time() * 1000) - 120_000, key=None,
                                   value=b"never-decided")],
                           producer_id=producer_id, producer_epoch=0, base_sequence=0,
                           is_transactional=True)
    host, port = target.bootstrap.rsplit(":", 1)
    with WireClient(int(port), host) as client:
        for data in (hanging, batch(b"after")):
            response = client.request(produce_request(topic, data))
            assert response.responses[0].partition_responses[0].error_code == 0
    tool = ("--bootstrap-server", target.bootstrap)

    described = run_tool(apache_kafka, TRANSACTIONS, *tool, "describe-producers",
                         "--topic", topic, "--partition", "0")
    assert re.search(rf"^{producer_id}\s+0\s+\S+\s+0\s+\d+\s+0\s*$", described,
                     re.MULTILINE), described
    found = run_tool(apache_kafka, TRANSACTIONS, *tool, "find-hanging", "--topic", topic,
                     "--max-transaction-timeout", "1")
    assert re.search(rf"^{re.escape(topic)}\s+0\s+{producer_id}\s+0\s+\S+\s+0\s", found,
                     re.MULTILINE), found

    run_tool(apache_kafka, TRANSACTIONS, *tool, "abort", "--topic", topic, "--partition", "0",
             "--start-offset", "0")
    after = run_tool(apache_kafka, TRANSACTIONS, *tool, "find-hanging", "--topic", topic,
                     "--max-transaction-timeout", "1")
    assert str(producer_id) not in after, after
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        consumer.assign([ConfluentPartition(topic, 0, 0)])
        seen: list[bytes | None] = []
        deadline = time.monotonic() + 15
        while not seen and time.monotonic() < deadline:
            seen += [m.value() for m in consumer.consume(10, timeout=0.5)
                     if m.error() is None and m.value() is not None]
    finally:
        consumer.close()
    assert seen == [b"after"], "the abort must let the LSO pass the hanging transaction"
