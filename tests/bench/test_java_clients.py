"""The paper benchmark's Java-tool rows: output parsers on lines the tools printed on this
machine, the producer's ``batch.size`` against the real v2 record encoding, and the log
reader that shows how many records each produce request carried."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_paper import log_batches
from bench.kafka_tools import ToolFailed
from bench.peers.java_clients import (
    ToolRun,
    kafka_batch_bytes,
    parse_activemq_consumer,
    parse_activemq_producer,
    parse_perf_test,
)
from odradek.protocol.records import Record, encode_batch

# RabbitMQ PerfTest 2.22.1 against RabbitMQ 3.10 (30,000 persistent 200-byte messages).
PERF_TEST_PRODUCER = """\
id: test-112153-731, starting producer #0
id: test-112153-731, starting producer #0, channel #0
id: test-112153-731, time 1.002 s, sent: 14504 msg/s
id: test-112153-731, time 2.005 s, sent: 9838 msg/s
test stopped (Producer reached message limit)
id: test-112153-731, sending rate avg: 12043 msg/s
id: test-112153-731, receiving rate avg: 0 msg/s
"""
PERF_TEST_CONSUMER = """\
id: test-112348-743, starting consumer #0
id: test-112348-743, starting consumer #0, channel #0
id: test-112348-743, time 1.001 s, received: 13450 msg/s, min/median/75th/95th/99th \
consumer latency: 0/0/0/0/0 µs
id: test-112348-743, time 2.027 s, received: 13293 msg/s, min/median/75th/95th/99th \
consumer latency: 0/0/0/0/0 µs
test stopped (Consumer reached message limit)
id: test-112348-743, sending rate avg: 0 msg/s
id: test-112348-743, receiving rate avg: 14360 msg/s
id: test-112348-743, consumer latency min/median/75th/95th/99th 0/0/0/0/0 µs
"""
# ActiveMQ 5.17's console tasks with the bench's log4j layout (``%r %m%n``).
ACTIVEMQ_PRODUCER = """\
Extensions classpath:
  [/tmp/odradek-bench-activemq-tool/lib,/usr/share/activemq/lib]
ACTIVEMQ_HOME: /usr/share/activemq
0 Connecting to URL: tcp://127.0.0.1:46273?jms.useAsyncSend=true as user: null
0 Producing messages to queue://q1
1 Using persistent messages
3 Sleeping between sends 0 ms
3 Running 1 parallel threads
373 producer-1 Started to calculate elapsed time ...
4063 producer-1 Produced: 30000 messages
4091 producer-1 Elapsed time in second : 3 s
4102 producer-1 Elapsed time in milli second : 3692 milli seconds
"""
ACTIVEMQ_CONSUMER = """\
0 Connecting to URL: tcp://127.0.0.1:46273?jms.prefetchPolicy.queuePrefetch=1000 as user: null
0 Consuming queue://q1
6 Sleeping between receives 0 ms
6 Running 1 parallel threads
468 consumer-1 wait until 30000 messages are consumed
6359 consumer-1 Consumed: 30000 messages
6363 consumer-1 Consumer thread finished
"""


def test_perf_test_rates() -> None:
    sent = parse_perf_test(PERF_TEST_PRODUCER, "sending", "Producer", 30_000)
    assert sent.messages == 30_000 and sent.seconds == pytest.approx(30_000 / 12043)
    received = parse_perf_test(PERF_TEST_CONSUMER, "receiving", "Consumer", 30_000)
    assert received.messages == 30_000 and received.seconds == pytest.approx(30_000 / 14360)


def test_perf_test_must_reach_its_limit() -> None:
    stopped_early = PERF_TEST_PRODUCER.replace("(Producer reached message limit)",
                                               "(Reached time limit)")
    with pytest.raises(ToolFailed, match="message limit"):
        parse_perf_test(stopped_early, "sending", "Producer", 30_000)
    with pytest.raises(ToolFailed, match="receiving rate"):  # the consumer printed 0 msg/s
        parse_perf_test(PERF_TEST_PRODUCER.replace("Producer", "Consumer"), "receiving",
                        "Consumer", 30_000)


def test_activemq_producer_and_consumer() -> None:
    assert parse_activemq_producer(ACTIVEMQ_PRODUCER) == ToolRun(30_000, 3.692)
    received = parse_activemq_consumer(ACTIVEMQ_CONSUMER)
    assert received.messages == 30_000 and received.seconds == pytest.approx(5.891)


@pytest.mark.parametrize("out", [ACTIVEMQ_PRODUCER.split("4063")[0],
                                 ACTIVEMQ_CONSUMER.replace("Consumed:", "Got:")])
def test_activemq_without_summary(out: str) -> None:
    parse = parse_activemq_producer if "Producing" in out else parse_activemq_consumer
    with pytest.raises(ToolFailed, match="no summary"):
        parse(out)


def _batch_bytes(count: int, spread_ms: int) -> int:
    """The v2 batch the Java producer would build: ``count`` 200-byte values, timestamps
    spread over ``spread_ms``."""
    records = [Record(timestamp=1_700_000_000_000 + i * spread_ms // max(count - 1, 1),
                      key=None, value=b"m" * 200) for i in range(count)]
    return len(encode_batch(records))


@pytest.mark.parametrize("batch", [1, 50])
@pytest.mark.parametrize("spread_ms", [0, 63, 5_000])
def test_batch_size_fits_exactly_batch_records(batch: int, spread_ms: int) -> None:
    limit = kafka_batch_bytes(batch)
    assert _batch_bytes(batch, spread_ms) <= limit < _batch_bytes(batch + 1, 0)


def test_log_batches_counts_what_the_segments_hold(tmp_path: Path) -> None:
    records = [Record(timestamp=1_700_000_000_000, key=None, value=b"m" * 200)] * 50
    first = tmp_path / "broker-0" / "t-0" / "00000000000000000000.log"
    first.parent.mkdir(parents=True)
    first.write_bytes(b"".join(encode_batch(records[:1], base_offset=i) for i in range(3)))
    (first.parent / "00000000000000000003.log").write_bytes(
        encode_batch(records, base_offset=3))
    other = tmp_path / "broker-0" / "t2-0" / "00000000000000000000.log"  # another topic
    other.parent.mkdir()
    other.write_bytes(encode_batch(records))
    assert log_batches(tmp_path, "t") == (4, 53)
    assert log_batches(tmp_path, "missing") == (0, 0)
