"""Keys and values of ``__transaction_state`` records, in Kafka's exact byte format.

Why Kafka's format: the transaction log is compacted by key like ``__consumer_offsets``, and
writing what Kafka writes lets Kafka's tools read it (``kafka-console-consumer --formatter
...TransactionLogMessageFormatter``) and lets a coordinator load a Kafka-written log. Same
conventions as :mod:`odradek.coordinator.offsets_topic_format`: every key and value starts
with an int16 version, big-endian integers, int16-length strings, int32-count arrays;
version 1 values are flexible (compact lengths, tagged fields) — read, never written.

Key, version 0 (``TransactionLogKey``)::

    transactionalId string

Value, version 0 (``TransactionLogValue``); a null value (tombstone) removes an expired id::

    producerId int64, producerEpoch int16, transactionTimeoutMs int32,
    transactionStatus int8 (see :class:`TxnStatus`),
    transactionPartitions [topic string, partitionIds [int32]] (nullable),
    transactionLastUpdateTimestampMs int64, transactionStartTimestampMs int64
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from odradek.protocol.binary import BinaryReader, BinaryWriter
from odradek.types import TopicPartition

__all__ = [
    "MalformedTransactionRecord",
    "TxnLogValue",
    "TxnStatus",
    "decode_txn_key",
    "decode_txn_value",
    "encode_txn_key",
    "encode_txn_value",
]

KEY_VERSION = 0
VALUE_VERSION = 0


class MalformedTransactionRecord(ValueError):
    """A ``__transaction_state`` key or value could not be decoded."""


class TxnStatus(IntEnum):
    """Kafka's ``TransactionState`` ids, as stored in ``transactionStatus``."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: TxnStatus
    partitions: frozenset[TopicPartition]
    last_update_ms: int
    start_ms: int


def encode_txn_key(transactional_id: str) -> bytes:
    writer = BinaryWriter()
    writer.int16(KEY_VERSION)
    writer.string(transactional_id)
    return bytes(writer.out)


def decode_txn_key(buf: bytes) -> str:
    reader = BinaryReader(buf, error=MalformedTransactionRecord)
    version = reader.int16()
    if version != KEY_VERSION:
        raise MalformedTransactionRecord(f"unknown transaction log key version {version}")
    return reader.string()


def encode_txn_value(value: TxnLogValue) -> bytes:
    """Version 0. Partitions are grouped by topic, topics and ids in sorted order, so equal
    states encode to equal bytes."""
    writer = BinaryWriter()
    writer.int16(VALUE_VERSION)
    writer.int64(value.producer_id)
    writer.int16(value.producer_epoch)
    writer.int32(value.timeout_ms)
    writer.int8(int(value.status))
    by_topic: dict[str, list[int]] = {}
    for key in sorted(value.partitions):
        by_topic.setdefault(key.topic, []).append(key.partition)
    writer.int32(len(by_topic))
    for topic, ids in by_topic.items():
        writer.string(topic)
        writer.int32(len(ids))
        for partition in ids:
            writer.int32(partition)
    writer.int64(value.last_update_ms)
    writer.int64(value.start_ms)
    return bytes(writer.out)


def decode_txn_value(buf: bytes) -> TxnLogValue:
    reader = BinaryReader(buf, error=MalformedTransactionRecord)
    version = reader.int16()
    if version not in (0, 1):
        raise MalformedTransactionRecord(f"unknown transaction log value version {version}")
    reader.flexible = version >= 1
    producer_id = reader.int64()
    producer_epoch = reader.int16()
    timeout_ms = reader.int32()
    status_code = reader.int8()
    try:
        status = TxnStatus(status_code)
    except ValueError:
        raise MalformedTransactionRecord(f"unknown transaction status {status_code}") from None
    partitions: set[TopicPartition] = set()
    for _ in range(reader.array_length()):
        topic = reader.string()
        for _ in range(reader.array_length()):
            partitions.add(TopicPartition(topic, reader.int32()))
        reader.skip_tagged_fields()
    last_update_ms = reader.int64()
    start_ms = reader.int64()
    reader.skip_tagged_fields()
    return TxnLogValue(producer_id, producer_epoch, timeout_ms, status, frozenset(partitions),
                       last_update_ms, start_ms)
