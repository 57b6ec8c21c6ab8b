"""An idempotent producer keeps a partition's records in append order across a producer id
reset: the retried batches are re-sequenced in the order they were appended.

Found by the chaos run (tests/longrun, seed 462479739): odradek's producer wrote one record
of chaos-metrics-0 with sequence 0 under a new producer id, then a batch of 30 records
appended ten seconds *earlier* with sequence 1. The mechanism, replayed here without a
broker: batch A is retried (re-enqueued with its old sequence), the producer id is reset
(queued batches lose their sequence), then batch B, appended after A, fails too and is
re-enqueued with its old sequence. ``reenqueue`` orders retries by sequence and skips past
none with -1, so B lands in front of A, and the next drain numbers B before A. Retries
now go back in creation order, and a partition with a batch in flight under the old id is
not drained until that batch is back (the second test).

A broker with no state for a producer id takes any first sequence, so a partition sends one
batch at a time until its sequence 0 is answered (the third test): found against Apache
Kafka right after CreateTopics, where the first batch got NOT_LEADER_OR_FOLLOWER, a later
pipelined one was written first, and the producer id reset then put the first one after it
(tests/client/test_send_encoded.py, offsets 259/260 instead of 49/50).
"""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode

from odradek.client.errors import BrokerResponseError, ConnectionFailed
from odradek.client.metadata import TopicPartition
from odradek.client.producer import AsyncProducer

TP = TopicPartition("t", 0)


def _acked_first_batch(producer: AsyncProducer, now: float) -> None:
    """Sequence 0 sent and acknowledged: the broker holds the producer's state."""
    producer.accumulator.append(TP, 0, None, b"first", None)
    (first,) = producer.sender.drain_for_node([TP], now)
    producer.sender.finish(first, 0)


def test_retries_across_a_producer_id_reset_are_resequenced_in_append_order() -> None:
    producer = AsyncProducer("127.0.0.1:1", batch_size=1)  # one record per batch
    producer.sender.producer_id, producer.sender.producer_epoch = 7, 0
    now = time.monotonic()
    _acked_first_batch(producer, now)
    producer.accumulator.append(TP, 0, None, b"A", None)
    producer.accumulator.append(TP, 0, None, b"B", None)
    (a,) = producer.sender.drain_for_node([TP], now)
    (b,) = producer.sender.drain_for_node([TP], now)
    assert (a.base_sequence, b.base_sequence) == (1, 2)

    # A's request fails retriably; then B's answer is UNKNOWN_PRODUCER_ID.
    producer.sender.retry_or_fail(a, ConnectionFailed("produce to broker 2 timed out"))
    producer.sender.reset_producer_id()
    producer.sender.retry_or_fail(
        b, BrokerResponseError(ErrorCode.unknown_producer_id, "produce to t-0"))

    producer.sender.producer_id = 8  # InitProducerId answered with a new id
    (first,) = producer.sender.drain_for_node([TP], now + 1)
    producer.sender.finish(first, 0)  # sequence 0 under the new id acknowledged
    (second,) = producer.sender.drain_for_node([TP], now + 1)
    order = "A, B" if first is a else "B, A"
    assert first is a and second is b, (
        f"re-sequenced in the order {order}: B (appended after A) got sequence "
        f"{b.base_sequence}, A got {a.base_sequence}, so B is written first")


def test_a_partition_waits_for_its_batch_in_flight_under_the_old_producer_id() -> None:
    """A is still in flight under the old id when B fails with UNKNOWN_PRODUCER_ID: B must
    not be numbered under the new id (and written) before A is back and numbered first."""
    producer = AsyncProducer("127.0.0.1:1", batch_size=1)
    producer.sender.producer_id, producer.sender.producer_epoch = 7, 0
    now = time.monotonic()
    _acked_first_batch(producer, now)
    producer.accumulator.append(TP, 0, None, b"A", None)
    producer.accumulator.append(TP, 0, None, b"B", None)
    producer.accumulator.append(TP, 0, None, b"C", None)
    (a,) = producer.sender.drain_for_node([TP], now)
    (b,) = producer.sender.drain_for_node([TP], now)
    (c,) = producer.accumulator.batches[TP]
    producer.sender.reset_producer_id()
    producer.sender.retry_or_fail(b, BrokerResponseError(ErrorCode.unknown_producer_id, "t-0"))
    producer.sender.producer_id = 8

    assert producer.sender.drain_for_node([TP], now + 1) == [], "A is still in flight under 7"
    assert producer.accumulator.ready(now + 1, 8)[0] == []
    producer.sender.retry_or_fail(a, ConnectionFailed("produce to broker 2 timed out"))
    (first,) = producer.sender.drain_for_node([TP], now + 1)
    assert producer.sender.drain_for_node([TP], now + 1) == [], "sequence 0 is unanswered"
    producer.sender.finish(first, 0)
    drained = [first] + [producer.sender.drain_for_node([TP], now + 1)[0] for _ in range(2)]
    assert drained == [a, b, c]
    assert [batch.base_sequence for batch in drained] == [0, 1, 2]
    assert all(batch.producer_id == 8 for batch in drained)


def test_a_partition_sends_one_batch_until_its_first_sequence_is_answered() -> None:
    """The first batch to a partition just created fails retriably while a later one would
    already be taken: nothing after sequence 0 is sent until it is answered, and after a
    retriable failure it goes first again."""
    producer = AsyncProducer("127.0.0.1:1", batch_size=1)
    producer.sender.producer_id, producer.sender.producer_epoch = 7, 0
    for value in (b"A", b"B", b"C"):
        producer.accumulator.append(TP, 0, None, value, None)
    now = time.monotonic()
    (a,) = producer.sender.drain_for_node([TP], now)
    assert a.base_sequence == 0
    assert producer.sender.drain_for_node([TP], now) == []
    assert producer.accumulator.ready(now, 7)[0] == []

    producer.sender.retry_or_fail(a, BrokerResponseError(
        ErrorCode.not_leader_or_follower, "produce to t-0"))
    (again,) = producer.sender.drain_for_node([TP], now + 1)
    assert again is a and a.base_sequence == 0
    producer.sender.finish(a, 0)
    (b,) = producer.sender.drain_for_node([TP], now + 1)
    (c,) = producer.sender.drain_for_node([TP], now + 1)  # pipelined once 0 is acknowledged
    assert [b.base_sequence, c.base_sequence] == [1, 2]

    plain = AsyncProducer("127.0.0.1:1", batch_size=1, enable_idempotence=False)
    for value in (b"A", b"B"):
        plain.accumulator.append(TP, 0, None, value, None)
    drained = [plain.sender.drain_for_node([TP], now) for _ in range(2)]
    assert [len(batches) for batches in drained] == [1, 1], "without idempotence: not held"
