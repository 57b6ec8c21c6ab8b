"""An idempotent producer recovers from a sequence gap that retries can never close.

The perf-produce hang: the first batch to a new partition failed retriably while a later,
pipelined batch was accepted (a broker with no state for a producer id takes any first
sequence), so every retry of the first one got OUT_OF_ORDER_SEQUENCE_NUMBER until
delivery.timeout.ms. No broker is needed to check the decision.
"""

from __future__ import annotations

from odradek.client.metadata import TopicPartition
from odradek.client.producer import AsyncProducer

TP = TopicPartition("t", 0)


def _producer_with_batches(*sequences: int) -> tuple[AsyncProducer, list]:
    producer = AsyncProducer("127.0.0.1:1", batch_size=1)
    producer.sender.producer_id = 7
    batches = []
    for sequence in sequences:
        producer.accumulator.append(TP, 0, None, b"v", None)
        batch = producer.accumulator.batches[TP][-1]
        batch.producer_id, batch.base_sequence = 7, sequence
        batches.append(batch)
    return producer, batches


def test_out_of_order_on_the_earliest_pending_batch_is_an_unfillable_gap() -> None:
    producer, (first, second) = _producer_with_batches(0, 1)
    assert producer.sender.is_unfillable_gap(first)
    assert not producer.sender.is_unfillable_gap(second), "an earlier batch may still fill the gap"


def test_unfillable_gap_resets_the_producer_id_and_resequences() -> None:
    producer, (first, _second) = _producer_with_batches(0, 1)
    first.encoded = b"old"
    producer.sender.reset_producer_id()
    assert producer.sender.producer_id == -1
    assert first.encoded is None and first.base_sequence == -1
    assert not producer.sender.is_unfillable_gap(first), "a re-sequenced batch is no gap"
