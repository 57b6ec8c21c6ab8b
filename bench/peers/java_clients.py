"""Each system's own Java load tool for the paper benchmark, and parsers for what they print.

At batch 1 a Python client sending one message per request is the limit for every broker
(the ``paper.*`` rows of :mod:`bench.bench_paper`), so the ``paper.*.java`` rows drive each
system with a JIT-compiled tool written by its own project:

* odradek and Apache Kafka: Kafka's ``ProducerPerformance`` / ``ConsumerPerformance``
  (:mod:`bench.kafka_tools`), acks=0, ``--throughput -1``, a 1-partition topic.
  ``batch.size`` is sized from the v2 record format so a batch holds exactly ``batch``
  200-byte records (:func:`kafka_batch_bytes`); with one partition the producer's sender
  takes one batch per partition per request, so batch 1 is one record per produce request
  (the bench reads the segment's batch headers back to show it). ``linger.ms`` 0 for
  batch 1, 10 for batch 50 (at full speed the batches fill long before that).
* RabbitMQ: its ``PerfTest`` (``com.rabbitmq:perf-test`` from Maven Central, fetched once
  into ``.cache/rabbitmq-perf-test/<version>/libs`` by ``bench/peers/rabbitmq-perf-test/
  pom.xml``): one producer, no publisher confirms, ``-f persistent`` (which also makes the
  queue durable), 200 bytes; one consumer with ``-a`` (auto-ack) and ``-q 1000``.
* ActiveMQ: the ``producer`` / ``consumer`` tasks of the broker's own console
  (``activemq.jar``, Debian's package), OpenWire over TCP to a queue, persistent
  ``BytesMessage`` of 200 bytes, ``jms.useAsyncSend=true`` (fire and forget); the consumer
  auto-acknowledges with a prefetch of 1000.

Each runner returns a :class:`ToolRun`: the messages the tool reports and the seconds of
its own measured send or receive phase (JVM start-up and connecting excluded for every
system alike). The producer rows add the time until the broker holds every message
(:mod:`bench.bench_paper`). ActiveMQ's producer closes its connection before it exits, and
the close waits for the broker's answer to a request queued behind every send, so the
broker has taken every message when the tool ends.

Every tool starts a JVM (1-2 s each on the shared machine): the ``.java`` rows run in quick
and full modes only, not in ``--tiny`` (the default test suite's size).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from bench.kafka_tools import (
    TOOL_JVM,
    ToolFailed,
    consumer_performance,
    producer_performance,
    run_command,
)
from bench.peers.brokers import _ACTIVEMQ_JVM, ACTIVEMQ_HOME
from tests.harness.apache_kafka import REPO_ROOT, ApacheKafka
from tests.harness.maven import copy_dependencies

PERF_TEST_VERSION = "2.22.1"
PERF_TEST_POM = Path(__file__).with_name("rabbitmq-perf-test") / "pom.xml"
PERF_TEST_CACHE = REPO_ROOT / ".cache" / "rabbitmq-perf-test"
PERF_TEST = "com.rabbitmq.perf.PerfTest"
TIMEOUT = 600.0

# Kafka's v2 record format: a 61-byte batch header; a 200-byte value without key or
# headers is a 209-byte record while its offset and timestamp deltas stay below 64.
BATCH_HEADER = 61
RECORD_200 = 209

# log4j 1.2 for ActiveMQ's console tasks: milliseconds since start, then the message; the
# consumer's line per message (``Received ID:...``) is dropped before it is formatted.
ACTIVEMQ_TOOL_LOG4J = """\
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.Target=System.out
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%r %m%n
log4j.appender.out.filter.1=org.apache.log4j.varia.StringMatchFilter
log4j.appender.out.filter.1.StringToMatch=Received ID:
log4j.appender.out.filter.1.AcceptOnMatch=false
"""


class ToolRun(NamedTuple):
    messages: int
    seconds: float  # the tool's own send (or receive) phase


# ------------------------------------------------------------------------- kafka protocol


def kafka_batch_bytes(batch: int) -> int:
    """A ``batch.size`` that fits exactly ``batch`` 200-byte records: the producer closes a
    batch when the next record would pass it, and half a record of slack covers deltas
    that take a second varint byte."""
    return BATCH_HEADER + batch * RECORD_200 + RECORD_200 // 2


def kafka_producer_props(batch: int) -> dict[str, object]:
    return {"acks": "0", "enable.idempotence": "false", "batch.size": kafka_batch_bytes(batch),
            "linger.ms": 0 if batch == 1 else 10, "compression.type": "none"}


def kafka_produce(kafka: ApacheKafka, bootstrap: str, topic: str, count: int,
                  batch: int, size: int) -> ToolRun:
    result = producer_performance(kafka, bootstrap, topic, count, size,
                                  kafka_producer_props(batch), timeout=TIMEOUT)
    records = int(result["records"])
    return ToolRun(records, records / result["msgs_per_s"] if result["msgs_per_s"] else 0.0)


def kafka_consume(kafka: ApacheKafka, bootstrap: str, topic: str, count: int,
                  size: int) -> ToolRun:
    """ConsumerPerformance with 200 KB fetches; its fetch phase (the group join excluded)."""
    result = consumer_performance(kafka, bootstrap, topic, count, size, timeout=TIMEOUT,
                                  consumer_props={"fetch.max.bytes": 204_800,
                                                  "max.partition.fetch.bytes": 204_800})
    return ToolRun(int(result["records"]), result["fetch_ms"] / 1000)


# ------------------------------------------------------------------------------ rabbitmq


def perf_test_libs(version: str = PERF_TEST_VERSION) -> Path:
    libs = PERF_TEST_CACHE / version / "libs"
    reason = copy_dependencies(PERF_TEST_POM, libs, properties={"perftest.version": version},
                               expect="perf-test-*.jar")
    if reason:
        raise ToolFailed(f"RabbitMQ PerfTest unavailable: {reason}")
    return libs


def _perf_test(port: int, args: Sequence[str]) -> str:
    cmd = ["java", *TOOL_JVM, "-cp", f"{perf_test_libs()}/*", PERF_TEST,
           "--uri", f"amqp://guest:guest@127.0.0.1:{port}", *args]
    return run_command(cmd, "PerfTest", TIMEOUT)


def rabbitmq_produce(port: int, queue: str, count: int, size: int) -> ToolRun:
    """One producer, persistent messages to a durable queue, no confirms."""
    out = _perf_test(port, ["--producers", "1", "--consumers", "0", "--queue", queue,
                            "--auto-delete", "false", "--flag", "persistent",
                            "--size", str(size), "--pmessages", str(count)])
    return parse_perf_test(out, "sending", "Producer", count)


def rabbitmq_consume(port: int, queue: str, count: int) -> ToolRun:
    """One consumer, auto-ack, prefetch 1000, from the queue the producer left."""
    out = _perf_test(port, ["--producers", "0", "--consumers", "1", "--queue", queue,
                            "--predeclared", "--auto-delete", "false", "--autoack",
                            "--qos", "1000", "--cmessages", str(count)])
    return parse_perf_test(out, "receiving", "Consumer", count)


_PERF_TEST_AVG = re.compile(r"(?P<kind>sending|receiving) rate avg: (?P<rate>\d+) msg/s")


def parse_perf_test(out: str, kind: str, role: str, count: int) -> ToolRun:
    """PerfTest's summary (``sending rate avg: 12043 msg/s``); the run must have stopped on
    its message limit (``test stopped (Producer reached message limit)``)."""
    if f"({role} reached message limit)" not in out:
        raise ToolFailed(f"PerfTest did not reach its {role.lower()} message limit: "
                         f"{out[-300:]!r}")
    rates = {m["kind"]: int(m["rate"]) for m in _PERF_TEST_AVG.finditer(out)}
    if not rates.get(kind):
        raise ToolFailed(f"PerfTest printed no {kind} rate: {out[-300:]!r}")
    return ToolRun(count, count / rates[kind])


# ------------------------------------------------------------------------------ activemq


def _activemq_task(task: str, args: Sequence[str]) -> str:
    log4j = Path(tempfile.gettempdir()) / "odradek-bench-activemq-tool-log4j.properties"
    log4j.write_text(ACTIVEMQ_TOOL_LOG4J)
    base = Path(tempfile.gettempdir()) / "odradek-bench-activemq-tool"
    cmd = ["java", *TOOL_JVM, *_ACTIVEMQ_JVM, f"-Dlog4j.configuration=file:{log4j}",
           f"-Dactivemq.home={ACTIVEMQ_HOME}", f"-Dactivemq.base={base}",
           f"-Dactivemq.conf={base / 'conf'}", f"-Dactivemq.data={base / 'data'}",
           "-jar", str(ACTIVEMQ_HOME / "bin" / "activemq.jar"), task, *args]
    return run_command(cmd, f"activemq {task}", TIMEOUT)


def activemq_produce(openwire_port: int, queue: str, count: int, size: int) -> ToolRun:
    out = _activemq_task("producer", [
        "--brokerUrl", f"tcp://127.0.0.1:{openwire_port}?jms.useAsyncSend=true",
        "--destination", f"queue://{queue}", "--persistent", "true",
        "--messageSize", str(size), "--messageCount", str(count)])
    return parse_activemq_producer(out)


def activemq_consume(openwire_port: int, queue: str, count: int) -> ToolRun:
    out = _activemq_task("consumer", [
        "--brokerUrl", f"tcp://127.0.0.1:{openwire_port}?jms.prefetchPolicy.queuePrefetch=1000",
        "--destination", f"queue://{queue}", "--ackMode", "AUTO_ACKNOWLEDGE",
        "--messageCount", str(count)])
    return parse_activemq_consumer(out)


_PRODUCED = re.compile(r"Produced: (?P<n>\d+) messages")
_ELAPSED = re.compile(r"Elapsed time in milli second : (?P<ms>\d+) milli seconds")
_WAIT = re.compile(r"^(?P<ms>\d+) \S+ wait until \d+ messages are consumed", re.M)
_CONSUMED = re.compile(r"^(?P<ms>\d+) \S+ Consumed: (?P<n>\d+) messages", re.M)


def parse_activemq_producer(out: str) -> ToolRun:
    """``Produced: 30000 messages`` and ``Elapsed time in milli second : 4029 milli seconds``
    (the send loop, timed by the tool)."""
    produced, elapsed = _PRODUCED.search(out), _ELAPSED.search(out)
    if produced is None or elapsed is None:
        raise ToolFailed(f"activemq producer printed no summary: {out[-300:]!r}")
    return ToolRun(int(produced["n"]), int(elapsed["ms"]) / 1000)


def parse_activemq_consumer(out: str) -> ToolRun:
    """The consumer prints no rate: its time is from ``wait until N messages are consumed``
    (subscribed) to ``Consumed: N messages``, by the log lines' millisecond stamps."""
    start, done = _WAIT.search(out), _CONSUMED.search(out)
    if start is None or done is None:
        raise ToolFailed(f"activemq consumer printed no summary: {out[-300:]!r}")
    return ToolRun(int(done["n"]), (int(done["ms"]) - int(start["ms"])) / 1000)
