"""Real clients produce and consume through the target broker and get exactly their messages.

The matrix is client x codec (3 x 5 = 15 cases, ``ODRADEK_INTEROP_MESSAGES`` messages each:
30,000 by default, a few hundred batches per case, so kafka-python's pure-Python codec does
not set the suite's pace; 100,000 or more for a heavier run), with keys, headers and explicit
timestamps, into a 3-partition topic using each client's own key partitioner. Delivery
settings rotate across the cases instead of multiplying them (the full cross product would
not fit the suite's time budget on 2 cores):
case (client c, codec k) uses ``MODES[(c + k) % 4]``, so every client runs every mode and
every codec meets several modes.

What is asserted depends on what the delivery mode guarantees:

* acks=all with idempotence, acks=all and acks=1 (these two with ``retries=0``, so nothing is
  reordered by a retry and every failure surfaces): every message comes back once, intact
  (key, value, headers in order, CreateTime timestamp), at the partition and offset its
  delivery report named, in send order per partition, offsets dense from 0.
* acks=0: the producer learns neither success nor offset, so loss is allowed. Asserted: the
  records are intact, at the partition the client chose, without duplicates, in send order
  per partition (an in-order subsequence), and at least one arrived. (On loopback nothing
  is lost in practice; the count is in the test's output, not in an assertion.)
"""

from __future__ import annotations

import os
import time
from collections import defaultdict

import pytest

from tests.interop.clients import (
    CLIENTS,
    CODECS,
    MODES,
    Client,
    Delivery,
    Message,
    ProducerMode,
    Record,
)
from tests.interop.conftest import Target
from tests.interop.segments import CODEC_IDS, batch_headers

MESSAGES = int(os.environ.get("ODRADEK_INTEROP_MESSAGES", "30000"))
PARTITIONS = 3
PRODUCE_TIMEOUT = 240.0
CONSUME_TIMEOUT = 240.0
ACKS0_SETTLE = 20.0


def make_messages(tag: str, count: int, base_ts: int) -> list[Message]:
    """Keyed (300 distinct keys), ~100-byte values, three headers (one repeated key and one
    empty value), increasing CreateTime timestamps."""
    pad = b"." * 60
    return [
        Message(
            key=b"key-%03d" % (i % 300),
            value=b"%s-%08d-" % (tag.encode(), i) + pad,
            headers=(("seq", b"%d" % i), ("tag", tag.encode()), ("seq", b"")),
            timestamp=base_ts + i,
        )
        for i in range(count)
    ]


def expected_by_partition(
    messages: list[Message], deliveries: list[Delivery]
) -> dict[int, list[tuple[Message, Delivery]]]:
    out: dict[int, list[tuple[Message, Delivery]]] = defaultdict(list)
    for message, delivery in zip(messages, deliveries, strict=True):
        out[delivery.partition].append((message, delivery))
    return out


def assert_intact(record: Record, message: Message) -> None:
    assert (record.key, record.value, record.headers, record.timestamp) == (
        message.key, message.value, message.headers, message.timestamp
    ), f"partition {record.partition} offset {record.offset} differs from what was sent"


def check_exact(messages: list[Message], deliveries: list[Delivery],
                records: dict[int, list[Record]]) -> None:
    expected = expected_by_partition(messages, deliveries)
    for partition in range(PARTITIONS):
        got = records.get(partition, [])
        want = expected.get(partition, [])
        assert len(got) == len(want), (
            f"partition {partition}: consumed {len(got)} records, produced {len(want)}")
        for index, (record, (message, delivery)) in enumerate(zip(got, want, strict=True)):
            assert record.offset == index, f"partition {partition}: offsets not dense from 0"
            assert delivery.offset == record.offset, (
                f"partition {partition}: delivery report said offset {delivery.offset}, "
                f"record is at {record.offset}")
            assert_intact(record, message)


def check_acks0(messages: list[Message], deliveries: list[Delivery],
                records: dict[int, list[Record]]) -> int:
    expected = expected_by_partition(messages, deliveries)
    total = 0
    for partition in range(PARTITIONS):
        got = records.get(partition, [])
        want = iter(expected.get(partition, []))
        offsets = [r.offset for r in got]
        assert offsets == sorted(set(offsets)), f"partition {partition}: duplicate offsets"
        for record in got:  # an in-order subsequence of what was sent to this partition
            for message, _ in want:
                if message.value == record.value:
                    assert_intact(record, message)
                    break
            else:
                raise AssertionError(
                    f"partition {partition} offset {record.offset}: record {record.value!r} "
                    "was not sent to this partition, or is out of order / duplicated")
        total += len(got)
    assert total > 0, "acks=0: not a single message arrived"
    return total


def check_keyed_partitioning(records: dict[int, list[Record]]) -> None:
    partition_of_key: dict[bytes | None, int] = {}
    for partition, batch in records.items():
        for record in batch:
            seen = partition_of_key.setdefault(record.key, partition)
            assert seen == partition, f"key {record.key!r} in partitions {seen} and {partition}"
    assert len({p for p, batch in records.items() if batch}) == PARTITIONS, (
        "300 keys should spread over all partitions")


def wait_for_end_offsets(client: Client, target: Target, topic: str, want: dict[int, int],
                         timeout: float) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    while True:
        end = client.end_offsets(target.bootstrap, topic, range(PARTITIONS), 30)
        if end == want or time.monotonic() > deadline:
            return end
        time.sleep(0.1)


CASES = [
    pytest.param(client, codec, MODES[(c + k) % len(MODES)],
                 id=f"{client.name}-{codec}-{MODES[(c + k) % len(MODES)].name}")
    for c, client in enumerate(CLIENTS)
    for k, codec in enumerate(CODECS)
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("client", "codec", "mode"), CASES)
def test_produce_consume_matrix(target: Target, client: Client, codec: str,
                                mode: ProducerMode) -> None:
    topic = target.create_topic(PARTITIONS, prefix=f"matrix-{client.name}-{codec}")
    messages = make_messages(f"{client.name}/{codec}/{mode.name}", MESSAGES,
                             base_ts=int(time.time() * 1000) - MESSAGES)

    started = time.monotonic()
    deliveries = client.produce(target.bootstrap, topic, messages, codec, mode,
                                PRODUCE_TIMEOUT)
    produced = time.monotonic()
    assert len(deliveries) == len(messages)
    assert {d.partition for d in deliveries} <= set(range(PARTITIONS))
    if mode.acks != 0:
        assert all(d.offset is not None for d in deliveries), "acks>=1 must report offsets"

    counts: dict[int, int] = defaultdict(int)
    for d in deliveries:
        counts[d.partition] += 1
    sent = {p: counts[p] for p in range(PARTITIONS)}
    if mode.acks == 0:
        # flush() returned once the requests were written, not appended: wait (bounded)
        # for the high watermarks to reach what was sent; what is missing then is lost.
        end = wait_for_end_offsets(client, target, topic, sent, ACKS0_SETTLE)
    else:
        end = client.end_offsets(target.bootstrap, topic, range(PARTITIONS), 30)
        assert end == sent, "high watermarks must equal the acknowledged counts"
    records = client.consume(target.bootstrap, topic, dict.fromkeys(range(PARTITIONS), 0),
                             end, CONSUME_TIMEOUT)
    consumed = time.monotonic()

    if mode.acks == 0:
        arrived = check_acks0(messages, deliveries, records)
    else:
        check_exact(messages, deliveries, records)
        arrived = len(messages)
    check_keyed_partitioning(records)
    if target.log_dir is not None:  # the producer's codec must reach the log unchanged
        for partition in range(PARTITIONS):
            stored = {h.codec for h in batch_headers(target.partition_dir(topic, partition))}
            assert stored <= {CODEC_IDS[codec]}, (
                f"partition {partition}: {client.name} asked for {codec} (id "
                f"{CODEC_IDS[codec]}) but the log holds batches with codec ids {sorted(stored)}"
                " (librdkafka silently drops lz4 when ApiVersions lacks FindCoordinator)")
    print(f"{client.name} {codec} acks={mode.acks_label} idempotent={mode.idempotent}: "
          f"{arrived}/{len(messages)} messages; produce {produced - started:.1f}s, "
          f"consume {consumed - produced:.1f}s")
