"""odradek's client reading transactional data: read_committed consumers and range readers
skip aborted transactions and markers, read_uncommitted sees everything — against Apache
Kafka 3.9 (the reference) and odradek. The transactions are written by librdkafka."""

from __future__ import annotations

import time

from confluent_kafka import Producer as ConfluentProducer

from odradek.client import Consumer, TopicPartition
from odradek.client.batch_codec import ConsumerRecord, decode_fetched
from odradek.client.range_reader import RangeReader
from odradek.client.read_committed import aborted_batch_offsets, without_batches
from odradek.protocol.control_records import ControlType, TxnMarker, encode_marker_batch
from odradek.protocol.records import Record, encode_batch, rewrite_offsets

from .conftest import Target, create_topic

COMMITTED = [b"c%d" % i for i in range(10)] + [b"plain"] + [b"d%d" % i for i in range(5)]


def _write_history(bootstrap: str, topic: str) -> None:
    """committed txn c0-c9, aborted txn a0-a9, a plain record, committed txn d0-d4."""
    txn = ConfluentProducer({"bootstrap.servers": bootstrap, "transactional.id": f"w-{topic}"})
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(10):
        txn.produce(topic, b"c%d" % i, partition=0)
    txn.commit_transaction(30)
    txn.begin_transaction()
    for i in range(10):
        txn.produce(topic, b"a%d" % i, partition=0)
    txn.flush(30)
    txn.abort_transaction(30)
    plain = ConfluentProducer({"bootstrap.servers": bootstrap})
    plain.produce(topic, b"plain", partition=0)
    assert plain.flush(30) == 0
    txn.begin_transaction()
    for i in range(5):
        txn.produce(topic, b"d%d" % i, partition=0)
    txn.commit_transaction(30)


def _consume(bootstrap: str, topic: str, isolation: str, want: int) -> list[bytes | None]:
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        isolation_level=isolation)
    values: list[bytes | None] = []
    try:
        consumer.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + 20
        while len(values) < want and time.monotonic() < deadline:
            values += [record.value for record in consumer.poll(500)]
        values += [record.value for record in consumer.poll(1000)]  # nothing more
    finally:
        consumer.close()
    return values


def test_consumer_and_range_reader_skip_aborted_transactions(target: Target,
                                                            topic_name: str) -> None:
    create_topic(target.bootstrap, topic_name, 1)
    _write_history(target.bootstrap, topic_name)
    assert _consume(target.bootstrap, topic_name, "read_committed", 16) == COMMITTED
    everything = _consume(target.bootstrap, topic_name, "read_uncommitted", 26)
    assert sorted(v or b"" for v in everything) == sorted(
        COMMITTED + [b"a%d" % i for i in range(10)])
    with RangeReader(target.bootstrap, isolation_level="read_committed") as reader:
        out: list[ConsumerRecord] = []
        for chunk in reader.chunks((topic_name, 0), 0, 29):  # 26 records + 3 markers
            decode_fetched(chunk.records, topic_name, 0, chunk.fetch_offset, out)
    assert [record.value for record in out] == COMMITTED


def _at(offset: int, batch: bytes) -> bytes:
    """``batch`` placed at ``offset`` (the CRC does not cover the base offset)."""
    data = bytearray(batch)
    rewrite_offsets(data, 0, offset, 0)
    return bytes(data)


def _txn(pid: int, value: bytes) -> bytes:
    return encode_batch([Record(timestamp=0, value=value)], producer_id=pid, producer_epoch=0,
                        base_sequence=0, is_transactional=True)


def _marker(pid: int, commit: bool) -> bytes:
    return encode_marker_batch(
        TxnMarker(pid, 0, ControlType.COMMIT if commit else ControlType.ABORT, 0), 0)


def test_aborted_batches_follow_kafkas_consumer_rules() -> None:
    # pid 1: committed (0, marker 1), aborted (2, 3, marker 4), then a new txn (5, open);
    # pid 2: aborted and interleaved (6, marker 7); a plain batch (8)
    blob = b"".join([
        _at(0, _txn(1, b"x")), _at(1, _marker(1, True)),
        _at(2, _txn(1, b"y")), _at(3, _txn(1, b"y")), _at(4, _marker(1, False)),
        _at(5, _txn(1, b"z")), _at(6, _txn(2, b"w")), _at(7, _marker(2, False)),
        _at(8, encode_batch([Record(timestamp=0, value=b"p")])),
    ])
    dropped = aborted_batch_offsets(blob, [(1, 2), (2, 6)])
    assert dropped == {2, 3, 6}
    assert aborted_batch_offsets(blob, []) == frozenset()
    out: list[ConsumerRecord] = []
    assert decode_fetched(blob, "t", 0, 0, out, skip=dropped) == 9  # advances past them
    assert [r.value for r in out] == [b"x", b"z", b"p"]
    kept: list[ConsumerRecord] = []
    decode_fetched(without_batches(blob, dropped), "t", 0, 0, kept)
    assert [r.value for r in kept] == [b"x", b"z", b"p"]
