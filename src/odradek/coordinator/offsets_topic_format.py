"""Keys and values of ``__consumer_offsets`` records, in Kafka's exact byte format.

The offsets topic is compacted by key, so a key names *what* a record is about and the latest
value wins; a null value (tombstone) deletes. Every key and value starts with an int16 schema
version; the rest follows the group coordinator's message schemas (Kafka's
``OffsetCommitKey``/``OffsetCommitValue``/``GroupMetadataKey``/``GroupMetadataValue``), so Kafka's
tools (``kafka-console-consumer --formatter ...OffsetsMessageFormatter``) can read what we
write and we can load what Kafka wrote. Integers are big-endian; a string is an int16 length
and UTF-8 bytes (-1 = null); ``bytes`` is an int32 length; an array is an int32 count.
Version 4 values are "flexible": compact lengths (unsigned varint of length + 1) and a tagged
field section after each struct — read for compatibility, never written.

Keys (the key version doubles as the record type)::

    offset commit    version 0 or 1: group string, topic string, partition int32
    group metadata   version 2:      group string

Values written (the versions Kafka 2.3+ writes)::

    offset commit   version 3: offset int64, leaderEpoch int32, metadata string,
                               commitTimestamp int64
    group metadata  version 3: protocolType string, generation int32, protocol string?,
                               leader string?, currentStateTimestamp int64,
                               members [memberId string, groupInstanceId string?,
                                        clientId string, clientHost string,
                                        rebalanceTimeout int32, sessionTimeout int32,
                                        subscription bytes, assignment bytes]

Older value versions differ only by presence: offset v0/v2 lack leaderEpoch, v1 has an extra
expireTimestamp int64 at the end; group metadata v0 lacks rebalanceTimeout, v0/v1 lack
currentStateTimestamp, v0-v2 lack groupInstanceId.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from odradek.protocol.binary import BinaryReader, BinaryWriter

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "GROUP_METADATA_VALUE_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "OFFSET_COMMIT_VALUE_VERSION",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MalformedOffsetsRecord",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "UnknownKey",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_commit_value",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "offset_commit_key_bytes",
    "offset_commit_key_partition",
    "offset_commit_key_prefix",
    "offset_commit_key_topic",
    "offset_commit_value_bytes",
]

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_KEY_HEAD = struct.Struct(">hh")  # version, group length
_V1_HEAD = struct.Struct(">hqh")  # version, offset, metadata length
_V3_HEAD = struct.Struct(">hqih")  # version, offset, leader epoch, metadata length
_I64_PAIR = struct.Struct(">qq")
_V3_NO_METADATA = struct.Struct(">hqihq")  # version 3 with empty metadata: the common value

class MalformedOffsetsRecord(ValueError):
    """A key or value in the offsets topic could not be decoded (truncated or unknown version)."""


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A record type this coordinator does not manage (e.g. KIP-848 consumer-group records).

    Loading skips these instead of failing, so a log written by a newer Kafka still loads.
    """

    version: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1  # only version 1 carries it; kept so old logs round-trip


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    rebalance_timeout: int = -1
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...]
    current_state_timestamp: int = -1


# ----------------------------------------------------------------------------- writing


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    return offset_commit_key_bytes(key.group, key.topic, key.partition)


def offset_commit_key_bytes(group: str, topic: str, partition: int) -> bytes:
    """The key of ``group``'s offset for ``topic``-``partition``."""
    return (offset_commit_key_prefix(group) + offset_commit_key_topic(topic)
            + _I32.pack(partition))


def offset_commit_key_prefix(group: str) -> bytes:
    """The bytes every offset key of ``group`` starts with (version and group): an
    OffsetCommit encodes them once, not once per partition."""
    group_bytes = group.encode()
    return _KEY_HEAD.pack(OFFSET_COMMIT_KEY_VERSION, len(group_bytes)) + group_bytes


def offset_commit_key_topic(topic: str) -> bytes:
    """The topic part of an offset key (between the group prefix and the partition)."""
    topic_bytes = topic.encode()
    return _I16.pack(len(topic_bytes)) + topic_bytes


def offset_commit_key_partition(partition: int) -> bytes:
    return _I32.pack(partition)


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    writer = BinaryWriter()
    writer.int16(GROUP_METADATA_KEY_VERSION)
    writer.string(key.group)
    return bytes(writer.out)


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    return offset_commit_value_bytes(value.offset, value.leader_epoch, value.metadata,
                                     value.commit_timestamp, value.expire_timestamp)


def offset_commit_value_bytes(offset: int, leader_epoch: int, metadata: str,
                              commit_timestamp: int, expire_timestamp: int = -1) -> bytes:
    """Version 3, or version 1 when the commit carries an explicit expiry (OffsetCommit v2-v4
    with a retention time), because only version 1 has a field for it — Kafka does the same."""
    if not metadata and expire_timestamp < 0:  # one struct call for the usual commit
        return _V3_NO_METADATA.pack(OFFSET_COMMIT_VALUE_VERSION, offset, leader_epoch, 0,
                                    commit_timestamp)
    meta = metadata.encode()
    if expire_timestamp >= 0:
        return _V1_HEAD.pack(1, offset, len(meta)) + meta + _I64_PAIR.pack(
            commit_timestamp, expire_timestamp)
    return _V3_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, offset, leader_epoch, len(meta)) + (
        meta + _I64.pack(commit_timestamp))


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    writer = BinaryWriter()
    writer.int16(GROUP_METADATA_VALUE_VERSION)
    writer.string(value.protocol_type)
    writer.int32(value.generation)
    writer.string(value.protocol)
    writer.string(value.leader)
    writer.int64(value.current_state_timestamp)
    writer.int32(len(value.members))
    for member in value.members:
        writer.string(member.member_id)
        writer.string(member.group_instance_id)
        writer.string(member.client_id)
        writer.string(member.client_host)
        writer.int32(member.rebalance_timeout)
        writer.int32(member.session_timeout)
        writer.bytes_(member.subscription)
        writer.bytes_(member.assignment)
    return bytes(writer.out)


# ----------------------------------------------------------------------------- reading


def _reader(buf: bytes) -> BinaryReader:
    return BinaryReader(buf, error=MalformedOffsetsRecord)


def decode_key(buf: bytes) -> OffsetCommitKey | GroupMetadataKey | UnknownKey:
    """Decode an offsets-topic key; versions this coordinator does not use give ``UnknownKey``."""
    reader = _reader(buf)
    version = reader.int16()
    if version in (0, 1):
        return OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(reader.string())
    return UnknownKey(version)


def decode_offset_commit_value(buf: bytes) -> OffsetCommitValue:
    reader = _reader(buf)
    version = reader.int16()
    if not 0 <= version <= 4:
        raise MalformedOffsetsRecord(f"unknown offset commit value version {version}")
    reader.flexible = version >= 4
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else -1
    metadata = reader.string()
    commit_timestamp = reader.int64()
    expire_timestamp = reader.int64() if version == 1 else -1
    reader.skip_tagged_fields()
    return OffsetCommitValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


def decode_group_metadata_value(buf: bytes) -> GroupMetadataValue:
    reader = _reader(buf)
    version = reader.int16()
    if not 0 <= version <= 4:
        raise MalformedOffsetsRecord(f"unknown group metadata value version {version}")
    reader.flexible = version >= 4
    protocol_type = reader.string()
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    current_state_timestamp = reader.int64() if version >= 2 else -1
    members = []
    for _ in range(reader.array_length()):
        member_id = reader.string()
        group_instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout = reader.int32() if version >= 1 else -1
        session_timeout = reader.int32()
        subscription = reader.bytes_()
        assignment = reader.bytes_()
        reader.skip_tagged_fields()
        members.append(
            MemberMetadata(
                member_id=member_id,
                client_id=client_id,
                client_host=client_host,
                session_timeout=session_timeout,
                subscription=subscription,
                assignment=assignment,
                rebalance_timeout=rebalance_timeout,
                group_instance_id=group_instance_id,
            )
        )
    reader.skip_tagged_fields()
    return GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        members=tuple(members),
        current_state_timestamp=current_state_timestamp,
    )
