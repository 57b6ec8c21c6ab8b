"""The classic consumer protocol's subscription and assignment bytes.

A consumer group's members ship these opaque to the coordinator inside JoinGroup and
SyncGroup (``protocol_type`` ``"consumer"``); Kafka's ``ConsumerProtocolSubscription`` and
``ConsumerProtocolAssignment`` schemas, big-endian and non-flexible, led by an int16
version::

    subscription v0  topics [string], user_data bytes?
                 v1  + owned_partitions [topic string, partitions [int32]]
                 v2  + generation_id int32
    assignment   v0+ assigned [topic string, partitions [int32]], user_data bytes?

Readers accept any version and ignore what newer versions append (Kafka requires this
forward compatibility). The client encodes and decodes both; the coordinator only reads
which topics a member subscribes to.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from odradek.types import TopicPartition

from .binary import BinaryReader, BinaryWriter

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "MalformedConsumerProtocol",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "subscribed_topics",
]

CONSUMER_PROTOCOL_TYPE = "consumer"


class MalformedConsumerProtocol(ValueError):
    """A subscription or assignment blob that cannot be parsed."""


@dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1


def _reader(data: bytes) -> BinaryReader:
    return BinaryReader(data, error=MalformedConsumerProtocol)


def _write_partitions(writer: BinaryWriter, partitions: Iterable[TopicPartition]) -> None:
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        grouped[tp.topic].append(tp.partition)
    writer.int32(len(grouped))
    for topic in sorted(grouped):
        writer.string(topic)
        writer.int32(len(grouped[topic]))
        for partition in sorted(grouped[topic]):
            writer.int32(partition)


def _read_partitions(reader: BinaryReader) -> list[TopicPartition]:
    out = []
    for _ in range(reader.array_length()):
        topic = reader.string()
        out += [TopicPartition(topic, reader.int32()) for _ in range(reader.array_length())]
    return out


def encode_subscription(sub: Subscription, version: int = 1) -> bytes:
    writer = BinaryWriter()
    writer.int16(version)
    writer.int32(len(sub.topics))
    for topic in sorted(sub.topics):
        writer.string(topic)
    writer.bytes_(sub.user_data)
    if version >= 1:
        _write_partitions(writer, sub.owned_partitions)
    if version >= 2:
        writer.int32(sub.generation_id)
    return bytes(writer.out)


def decode_subscription(data: bytes) -> Subscription:
    """:raises MalformedConsumerProtocol: the bytes are not a subscription."""
    reader = _reader(data)
    version = reader.int16()
    topics = [reader.string() for _ in range(reader.array_length())]
    user_data = reader.nullable_bytes()
    owned = _read_partitions(reader) if version >= 1 and reader.more else []
    generation = reader.int32() if version >= 2 and reader.more else -1
    return Subscription(topics, user_data, owned, generation)


def encode_assignment(partitions: Iterable[TopicPartition], user_data: bytes | None = None,
                      version: int = 1) -> bytes:
    writer = BinaryWriter()
    writer.int16(version)
    _write_partitions(writer, partitions)
    writer.bytes_(user_data)
    return bytes(writer.out)


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """:raises MalformedConsumerProtocol: the bytes are not an assignment (empty is none)."""
    if not data:
        return []
    reader = _reader(data)
    reader.int16()
    return _read_partitions(reader)


def subscribed_topics(subscription: bytes) -> frozenset[str] | None:
    """The topics of a member's subscription, or None if it does not parse (the
    coordinator treats a member it cannot read as subscribing to nothing it knows)."""
    reader = _reader(subscription)
    try:
        reader.int16()
        return frozenset(reader.string() for _ in range(reader.array_length()))
    except MalformedConsumerProtocol:
        return None
