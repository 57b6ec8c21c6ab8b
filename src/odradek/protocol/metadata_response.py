"""The Metadata response (v0-v12), encoded directly to its frame.

Clients ask for the metadata of the topics they use on start, on every leadership change
and every ``metadata.max.age.ms``; librdkafka also asks before its first produce to each
topic. Answering with kio entities costs one generic conversion per broker, topic and
partition and then kio's generic writer; this module lays the frame out in one pass
instead. Layout (Kafka's ``MetadataResponse.json``):

* ``throttle_time_ms int32`` (v3+);
* brokers: ``node_id int32, host string, port int32, rack nullable string (v1+)``;
* ``cluster_id nullable string`` (v2+), ``controller_id int32`` (v1+);
* topics: ``error_code int16, name string`` (nullable from v12), ``topic_id uuid``
  (v10+), ``is_internal bool`` (v1+), partitions, ``topic_authorized_operations int32``
  (v8+);
* partitions: ``error_code int16, partition_index int32, leader_id int32,
  leader_epoch int32`` (v7+), ``replica_nodes [int32], isr_nodes [int32]``,
  ``offline_replicas [int32]`` (v5+);
* ``cluster_authorized_operations int32`` (v8-v10);
* v9+ (flexible): compact strings and arrays (unsigned varint of length + 1, 0 = null), an
  empty tagged-field section after each struct and at the end, and a response header v1.

``tests/protocol/test_metadata_response.py`` checks it byte for byte against kio.
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Sequence
from typing import NamedTuple

from .framing import size_prefix
from .primitives import array_length, string_field

__all__ = [
    "MAX_VERSION",
    "MIN_VERSION",
    "NO_AUTHORIZED_OPERATIONS",
    "MetadataBroker",
    "MetadataPartition",
    "MetadataTopic",
    "encode_metadata_response",
    "throttle_offset",
]

MIN_VERSION = 0
MAX_VERSION = 12
_FIRST_FLEXIBLE_VERSION = 9
NO_AUTHORIZED_OPERATIONS = -(2**31)
_NO_TAGS = b"\x00"

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_PARTITION = struct.Struct(">hii")  # error code, index, leader
_PARTITION_EPOCH = struct.Struct(">hiii")  # ... leader epoch (v7+)
_NULL_STRING = b"\xff\xff"
_NULL_COMPACT = b"\x00"
_FALSE, _TRUE = b"\x00", b"\x01"


class MetadataBroker(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None = None


class MetadataPartition(NamedTuple):
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: tuple[int, ...]
    isr_nodes: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


class MetadataTopic(NamedTuple):
    error_code: int
    name: str | None  # None only from v12: a topic asked for by an id we do not know
    topic_id: uuid.UUID
    is_internal: bool
    partitions: Sequence[MetadataPartition] = ()
    topic_authorized_operations: int = NO_AUTHORIZED_OPERATIONS


def _nullable(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return _NULL_COMPACT if flexible else _NULL_STRING
    return string_field(value, flexible)


@functools.lru_cache(maxsize=4096)
def _int32s(values: tuple[int, ...], flexible: bool) -> bytes:
    """A broker id array; a cluster has few distinct replica sets, so each is laid out
    once."""
    return array_length(len(values), flexible) + struct.pack(f">{len(values)}i", *values)


def encode_metadata_response(
    version: int, correlation_id: int, brokers: Sequence[MetadataBroker],
    cluster_id: str | None, controller_id: int, topics: Sequence[MetadataTopic], *,
    cluster_authorized_operations: int = NO_AUTHORIZED_OPERATIONS, throttle_ms: int = 0,
) -> bytes:
    """The whole response frame: size prefix, header, body."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"metadata response version {version} not in "
                         f"{MIN_VERSION}..{MAX_VERSION}")
    flexible = version >= _FIRST_FLEXIBLE_VERSION
    tags = _NO_TAGS if flexible else b""
    out = bytearray(_I32.pack(correlation_id))
    out += tags
    if version >= 3:
        out += _I32.pack(throttle_ms)
    out += array_length(len(brokers), flexible)
    for broker in brokers:
        out += _I32.pack(broker.node_id)
        out += string_field(broker.host, flexible)
        out += _I32.pack(broker.port)
        if version >= 1:
            out += _nullable(broker.rack, flexible)
        out += tags
    if version >= 2:
        out += _nullable(cluster_id, flexible)
    if version >= 1:
        out += _I32.pack(controller_id)
    out += array_length(len(topics), flexible)
    fixed = _PARTITION_EPOCH if version >= 7 else _PARTITION
    for topic in topics:
        out += _I16.pack(topic.error_code)
        out += _nullable(topic.name, flexible)
        if version >= 10:
            out += topic.topic_id.bytes
        if version >= 1:
            out += _TRUE if topic.is_internal else _FALSE
        out += array_length(len(topic.partitions), flexible)
        for p in topic.partitions:
            if fixed is _PARTITION_EPOCH:
                out += fixed.pack(p.error_code, p.partition_index, p.leader_id, p.leader_epoch)
            else:
                out += fixed.pack(p.error_code, p.partition_index, p.leader_id)
            out += _int32s(p.replica_nodes, flexible)
            out += _int32s(p.isr_nodes, flexible)
            if version >= 5:
                out += _int32s(p.offline_replicas, flexible)
            out += tags
        if version >= 8:
            out += _I32.pack(topic.topic_authorized_operations)
        out += tags
    if 8 <= version <= 10:
        out += _I32.pack(cluster_authorized_operations)
    out += tags
    return size_prefix(len(out)) + bytes(out)


def throttle_offset(version: int) -> int | None:
    """Where ``throttle_time_ms`` lies in the frame (None before v3, which has none)."""
    if version < 3:
        return None
    return 8 + (1 if version >= _FIRST_FLEXIBLE_VERSION else 0)
