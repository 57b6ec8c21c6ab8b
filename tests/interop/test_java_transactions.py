"""Transactions with Apache Kafka's Java client and tools against the target.

TransactionalMessageCopier (Kafka's own system-test tool: the Java consumer and the Java
transactional producer, offsets sent to the transaction, random aborts that rewind) copies
a partition; the output read with the console consumer at read_committed holds every input
exactly once. ``kafka-transactions`` (TransactionsCommand) then lists and describes the
copier's transactional id through the Admin client (ListTransactions,
DescribeTransactions). Runs against odradek and, with the apache target, against Kafka.
"""

from __future__ import annotations

import re
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
