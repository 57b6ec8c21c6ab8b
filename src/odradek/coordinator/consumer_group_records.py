"""KIP-848 consumer groups in ``__consumer_offsets``: Apache Kafka's record types, the records
a change of a group needs, and the group rebuilt from them on load.

Keys (non-flexible; the int16 key version is the record type) and values (value version 0,
flexible: compact strings and arrays, an empty tagged-field section after each struct)::

    3 ConsumerGroupMetadata          key: group            value: epoch int32
    5 ConsumerGroupMemberMetadata    key: group, member    value: instanceId string?,
          rackId string?, clientId string, clientHost string, subscribedTopicNames [string],
          subscribedTopicRegex string?, rebalanceTimeoutMs int32, serverAssignor string?,
          tagged field 0 classicMemberMetadata (members speaking the classic protocol), a
          nullable struct: presence int8 (1), sessionTimeoutMs int32,
          supportedProtocols [name string, metadata bytes]
    6 ConsumerGroupTargetAssignmentMetadata  key: group    value: assignmentEpoch int32
    7 ConsumerGroupTargetAssignmentMember    key: group, member
          value: topicPartitions [topicId uuid, partitions [int32]]
    8 ConsumerGroupCurrentMemberAssignment   key: group, member
          value: memberEpoch int32, previousMemberEpoch int32, state int8 (0 stable,
          1 unrevoked, 2 unreleased), assignedPartitions [topicId, partitions],
          partitionsPendingRevocation [topicId, partitions]

Partitions are written by topic id, as Kafka does, so a topic deleted and re-created under
the same name does not inherit the old one's assignment; on load, ids the cluster no longer
has are dropped. What is written is the difference between two :class:`Snapshot` s of the
group (before and after a heartbeat), tombstones for members that left.

After a load every member gets a fresh session timeout (as in Kafka), and the subscribed
topics' partition counts are adopted from the first heartbeat instead of bumping the group
epoch, so a coordinator failover does not start a rebalance.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from odradek.protocol.binary import BinaryReader, BinaryWriter
from odradek.protocol.records import Record
from odradek.types import TopicPartition

from .consumer_group import ClassicMetadata, ConsumerGroup, ConsumerMember
from .reconciliation import MemberAssignment, MemberState, Partitions

__all__ = [
    "CONSUMER_GROUP_KEY_TYPES",
    "Snapshot",
    "changed_records",
    "conversion_records",
    "deletion_records",
    "finish_load",
    "replay_consumer_group_record",
    "snapshot",
]

METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 3, 5, 6, 7, 8
CONSUMER_GROUP_KEY_TYPES = frozenset(
    {METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
_STATE_BYTES = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1,
                MemberState.UNRELEASED_PARTITIONS: 2}
_STATES = {byte: state for state, byte in _STATE_BYTES.items()}

MemberMetadata = tuple[str | None, str | None, str, str, tuple[str, ...], str | None, int,
                       str | None, ClassicMetadata | None]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the records describe, compared before and after a change."""

    group_epoch: int
    assignment_epoch: int
    target: Mapping[str, Partitions]
    metadata: Mapping[str, MemberMetadata]
    assignments: Mapping[str, MemberAssignment]


def _metadata(m: ConsumerMember) -> MemberMetadata:
    return (m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
            m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor, m.classic)


_T = TypeVar("_T")


def snapshot(group: ConsumerGroup | None) -> Snapshot:
    if group is None:
        return Snapshot(0, 0, {}, {}, {})
    return Snapshot(group.group_epoch, group.assignment_epoch, dict(group.target),
                    {m.member_id: _metadata(m) for m in group.members.values()},
                    {m.member_id: m.assignment for m in group.members.values()})


def changed_records(group_id: str, before: Snapshot, after: Snapshot,
                    topic_ids: Mapping[str, uuid.UUID], now_ms: int) -> list[Record]:
    """The records that take the log from ``before`` to ``after`` (Kafka's order: member
    metadata, group epoch, target assignment, current assignments)."""
    records: list[Record] = []

    def add(key_type: int, member: str | None, value: bytes | None) -> None:
        records.append(Record(timestamp=now_ms, key=_key(key_type, group_id, member),
                              value=value))

    def per_member(key_type: int, old: Mapping[str, _T], new: Mapping[str, _T],
                   encode: Callable[[_T], bytes]) -> None:
        """A record for each member whose entry changed, a tombstone for each one gone."""
        for member, entry in new.items():
            if old.get(member) != entry:
                add(key_type, member, encode(entry))
        for member in old.keys() - new.keys():
            add(key_type, member, None)

    per_member(MEMBER_METADATA, before.metadata, after.metadata, _member_metadata_value)
    if after.group_epoch != before.group_epoch:
        add(METADATA, None, _value(lambda w: w.int32(after.group_epoch)))
    per_member(TARGET_MEMBER, before.target, after.target, lambda partitions: _value(partial(
        _partitions, partitions=partitions, topic_ids=topic_ids)))
    if after.assignment_epoch != before.assignment_epoch:
        add(TARGET_METADATA, None, _value(lambda w: w.int32(after.assignment_epoch)))
    per_member(CURRENT_ASSIGNMENT, before.assignments, after.assignments,
               lambda assignment: _value(partial(
                   _current_assignment, assignment=assignment, topic_ids=topic_ids)))
    return records


def conversion_records(group_id: str, before: ConsumerGroup | None,
                       after: ConsumerGroup | None, topic_ids: Mapping[str, uuid.UUID],
                       now_ms: int) -> list[Record]:
    """The records of a group that starts or stops being a consumer group (an upgrade from,
    a downgrade to, a classic group): all of ``after`` from nothing (Kafka's
    ``createConsumerGroupRecords``), or tombstones of everything ``before`` wrote."""
    if after is not None:
        return changed_records(group_id, snapshot(None), snapshot(after), topic_ids, now_ms)
    gone = snapshot(before)
    emptied = Snapshot(gone.group_epoch, gone.assignment_epoch, {}, {}, {})
    return (changed_records(group_id, gone, emptied, topic_ids, now_ms)
            + deletion_records(group_id, now_ms))


# ---------------------------------------------------------------------------------- replay


def replay_consumer_group_record(
    groups: dict[str, ConsumerGroup], new_group: Callable[[str], ConsumerGroup],
    key: bytes, value: bytes | None, topic_names: Mapping[uuid.UUID, str], now_ms: int,
) -> None:
    """Apply one record while loading (then call :func:`finish_load`)."""
    reader = BinaryReader(key)
    key_type = reader.int16()
    group_id = reader.string()
    member_id = reader.string() if key_type not in (METADATA, TARGET_METADATA) else None
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return
        group = groups[group_id] = new_group(group_id)
    body = BinaryReader(value or b"\x00\x00", flexible=True)
    body.int16()  # value version 0
    if key_type == METADATA:
        if value is None:
            del groups[group_id]
        else:
            group.group_epoch = body.int32()
    elif key_type == TARGET_METADATA and value is not None:
        group.assignment_epoch = body.int32()
    elif key_type == MEMBER_METADATA and member_id is not None:
        _replay_member(group, member_id, body if value is not None else None, now_ms)
    elif key_type == TARGET_MEMBER and member_id is not None:
        if value is None:
            group.target.pop(member_id, None)
        else:
            group.target[member_id] = _read_partitions(body, topic_names)
    elif key_type == CURRENT_ASSIGNMENT and member_id is not None:
        member = group.members.get(member_id)
        if member is not None and value is not None:
            epoch, previous = body.int32(), body.int32()
            state = _STATES.get(body.int8(), MemberState.STABLE)
            assigned = _read_partitions(body, topic_names)
            member.assignment = MemberAssignment(state, epoch, previous, assigned,
                                                 _read_partitions(body, topic_names))
            # Kafka's onLoaded: a member still revoking gets its rebalance timeout again (its
            # heartbeats alone would keep it, and the partitions it holds, forever).
            member.rebalance_deadline_ms = (
                now_ms + member.rebalance_timeout_ms
                if state is MemberState.UNREVOKED_PARTITIONS else None)


def finish_load(groups: Iterable[ConsumerGroup]) -> None:
    """Rebuild what the records do not hold: who owns each partition, the static ids."""
    for group in groups:
        group.rebuild_indexes()
        group.partition_counts_known = False


def _replay_member(group: ConsumerGroup, member_id: str, body: BinaryReader | None,
                   now_ms: int) -> None:
    if body is None:
        group.members.pop(member_id, None)
        return
    instance_id, rack_id = body.nullable_string(), body.nullable_string()
    client_id, client_host = body.string(), body.string()
    names = tuple(body.string() for _ in range(body.array_length()))
    regex = body.nullable_string()
    rebalance_timeout_ms = body.int32()
    assignor = body.nullable_string()
    classic = _read_classic_metadata(body)
    member = group.members.get(member_id)
    if member is None:
        member = group.members[member_id] = ConsumerMember(
            member_id, instance_id, rack_id, client_id, client_host, rebalance_timeout_ms)
    member.instance_id, member.rack_id = instance_id, rack_id
    member.client_id, member.client_host = client_id, client_host
    member.subscribed_topic_names, member.subscribed_topic_regex = names, regex
    member.rebalance_timeout_ms, member.server_assignor = rebalance_timeout_ms, assignor
    member.classic = classic
    member.session_deadline_ms = now_ms + member.session_timeout_ms(group.config)


def _read_classic_metadata(body: BinaryReader) -> ClassicMetadata | None:
    """The value's tagged fields: tag 0 is the classic member metadata, others skipped."""
    classic = None
    for _ in range(body.uvarint() if body.more else 0):
        tag, size = body.uvarint(), body.uvarint()
        field_bytes = body._take(size)
        if tag != 0:
            continue
        struct = BinaryReader(field_bytes, flexible=True)
        if struct.int8() < 0:  # a nullable struct's presence byte
            continue
        session_timeout_ms = struct.int32()
        protocols = []
        for _ in range(struct.array_length()):
            name, metadata = struct.string(), struct.bytes_()
            struct.skip_tagged_fields()
            protocols.append((name, metadata))
        classic = ClassicMetadata(session_timeout_ms, tuple(protocols))
    return classic


# ---------------------------------------------------------------------------------- bytes


def _key(key_type: int, group_id: str, member_id: str | None) -> bytes:
    writer = BinaryWriter()
    writer.int16(key_type)
    writer.string(group_id)
    if member_id is not None:
        writer.string(member_id)
    return bytes(writer.out)


def _value(fill: Callable[[BinaryWriter], None], tagged_fields: bytes = b"\x00") -> bytes:
    """Value version 0; ``tagged_fields``: the struct's tagged-field section (none)."""
    writer = BinaryWriter()
    writer.int16(0)
    fill(writer)
    writer.out += tagged_fields
    return bytes(writer.out)


def _uvarint(writer: BinaryWriter, value: int) -> None:
    while value > 0x7F:
        writer.out.append((value & 0x7F) | 0x80)
        value >>= 7
    writer.out.append(value)


def _compact_string(writer: BinaryWriter, value: str | None) -> None:
    if value is None:
        _uvarint(writer, 0)
        return
    data = value.encode()
    _uvarint(writer, len(data) + 1)
    writer.out += data


def _member_metadata_value(metadata: MemberMetadata) -> bytes:
    instance_id, rack_id, client_id, client_host, names, regex, timeout, assignor, classic = (
        metadata)

    def fill(writer: BinaryWriter) -> None:
        _compact_string(writer, instance_id)
        _compact_string(writer, rack_id)
        _compact_string(writer, client_id)
        _compact_string(writer, client_host)
        _uvarint(writer, len(names) + 1)
        for name in names:
            _compact_string(writer, name)
        _compact_string(writer, regex)
        writer.int32(timeout)
        _compact_string(writer, assignor)

    return _value(fill, b"\x00" if classic is None else _classic_metadata(classic))


def _classic_metadata(classic: ClassicMetadata) -> bytes:
    """A tagged-field section holding tag 0, the classic member metadata (a nullable
    struct: a presence byte 1, then its fields)."""
    struct = BinaryWriter()
    struct.int8(1)
    struct.int32(classic.session_timeout_ms)
    _uvarint(struct, len(classic.protocols) + 1)
    for name, metadata in classic.protocols:
        _compact_string(struct, name)
        _uvarint(struct, len(metadata) + 1)
        struct.out += metadata
        struct.out += b"\x00"
    struct.out += b"\x00"
    writer = BinaryWriter()
    _uvarint(writer, 1)  # one tagged field
    _uvarint(writer, 0)  # its tag
    _uvarint(writer, len(struct.out))
    return bytes(writer.out + struct.out)


def _partitions(writer: BinaryWriter, partitions: Partitions,
                topic_ids: Mapping[str, uuid.UUID]) -> None:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        if topic in topic_ids:
            by_topic.setdefault(topic, []).append(partition)
    _uvarint(writer, len(by_topic) + 1)
    for topic, indexes in by_topic.items():
        writer.out += topic_ids[topic].bytes
        _uvarint(writer, len(indexes) + 1)
        for index in indexes:
            writer.int32(index)
        writer.out += b"\x00"


def _current_assignment(writer: BinaryWriter, assignment: MemberAssignment,
                        topic_ids: Mapping[str, uuid.UUID]) -> None:
    writer.int32(assignment.member_epoch)
    writer.int32(assignment.previous_member_epoch)
    writer.int8(_STATE_BYTES[assignment.state])
    _partitions(writer, assignment.assigned, topic_ids)
    _partitions(writer, assignment.pending_revocation, topic_ids)


def _read_partitions(body: BinaryReader, topic_names: Mapping[uuid.UUID, str]) -> Partitions:
    result: set[TopicPartition] = set()
    for _ in range(body.array_length()):
        high, low = body.int64(), body.int64()
        topic_id = uuid.UUID(int=((high % 2**64) << 64) | (low % 2**64))
        indexes = [body.int32() for _ in range(body.array_length())]
        body.skip_tagged_fields()
        name = topic_names.get(topic_id)
        if name is not None:
            result.update(TopicPartition(name, index) for index in indexes)
    return frozenset(result)


def deletion_records(group_id: str, now_ms: int) -> list[Record]:
    """Tombstones of a deleted (empty) group's group-level records."""
    return [Record(timestamp=now_ms, key=_key(key_type, group_id, None), value=None)
            for key_type in (TARGET_METADATA, METADATA)]
