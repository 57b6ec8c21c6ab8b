"""Pre-encoded batches (``append_encoded``, the bulk path) in the accumulator and sender,
without a broker: they keep their place among per-record batches, are sequenced, retried and
re-sequenced after a producer id reset like any other, and resolve as one."""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode

from odradek.client.accumulator import ProducerBatch
from odradek.client.batch_codec import RecordsBuilder
from odradek.client.errors import BrokerResponseError, ConnectionFailed
from odradek.client.metadata import TopicPartition
from odradek.client.producer import AsyncProducer
from odradek.protocol.records import BATCH_HEADER_SIZE, parse_batch_header

TP = TopicPartition("t", 0)
TS = 1_700_000_000_000


def _records(n: int) -> bytes:
    builder = RecordsBuilder()
    for i in range(n):
        builder.append(TS, f"k{i}".encode(), f"v{i}".encode(), None)
    return bytes(builder.buffer)


def _drain(producer: AsyncProducer, n: int, now: float) -> list[ProducerBatch]:
    """``n`` batches of TP in turn, the broker acknowledging a sequence 0 before the next is
    sent (until it has, a partition sends one batch: see tests/client/test_retry_order.py)."""
    drained = []
    for _ in range(n):
        (batch,) = producer.sender.drain_for_node([TP], now)
        if batch.base_sequence == 0:
            producer.accumulator.release(batch)
        drained.append(batch)
    return drained


def test_encoded_batches_keep_their_place_and_sequence() -> None:
    producer = AsyncProducer("127.0.0.1:1")
    producer.sender.producer_id, producer.sender.producer_epoch = 7, 0
    acc = producer.accumulator
    acc.append(TP, TS, None, b"A", None)
    bulk = acc.append_encoded(TP, _records(3), 3, TS)
    acc.append(TP, TS, None, b"B", None)  # never appended into the sealed batch
    assert [b.record_count for b in acc.batches[TP]] == [1, 3, 1]
    now = time.monotonic()
    drained = _drain(producer, 3, now)
    assert [b.base_sequence for b in drained] == [0, 1, 4]

    encoded = drained[1].encoded
    assert encoded is not None
    header = parse_batch_header(memoryview(encoded), 0)
    assert (header.record_count, header.base_sequence, header.producer_id) == (3, 1, 7)
    assert (header.base_timestamp, header.max_timestamp) == (TS, TS)
    assert encoded[BATCH_HEADER_SIZE:] == _records(3)

    drained[1].complete(40)
    assert bulk.get(0).offset == 42  # the last of its three records


def test_encoded_batch_is_resequenced_after_a_producer_id_reset() -> None:
    producer = AsyncProducer("127.0.0.1:1")
    producer.sender.producer_id, producer.sender.producer_epoch = 7, 0
    acc = producer.accumulator
    now = time.monotonic()
    acc.append(TP, TS, None, b"first", None)
    _drain(producer, 1, now)  # sequence 0 acknowledged: what follows is pipelined
    acc.append_encoded(TP, _records(5), 5, TS)
    acc.append_encoded(TP, _records(2), 2, TS)
    (a,) = producer.sender.drain_for_node([TP], now)
    (b,) = producer.sender.drain_for_node([TP], now)
    producer.sender.retry_or_fail(a, ConnectionFailed("produce to broker 2 timed out"))
    producer.sender.reset_producer_id()
    producer.sender.retry_or_fail(b, BrokerResponseError(ErrorCode.unknown_producer_id, "t-0"))
    producer.sender.producer_id = 8
    drained = _drain(producer, 2, now + 1)
    assert drained == [a, b]
    assert [(x.base_sequence, x.producer_id) for x in drained] == [(0, 8), (5, 8)]
    assert a.encoded is not None and a.encoded[BATCH_HEADER_SIZE:] == _records(5)


def test_encoded_batch_failure_reaches_its_future() -> None:
    producer = AsyncProducer("127.0.0.1:1")
    future = producer.accumulator.append_encoded(TP, _records(2), 2, TS)
    (batch,) = producer.sender.drain_for_node([TP], time.monotonic())
    error = BrokerResponseError(ErrorCode.message_too_large, "produce to t-0")
    producer.sender.retry_or_fail(batch, error)
    assert future.exception(0) is error
    assert not producer.accumulator.has_incomplete
    assert producer.accumulator.used_bytes == 0
