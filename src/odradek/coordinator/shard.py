"""Every group of one ``__consumer_offsets`` partition (sans-IO).

The broker that leads offsets partition *p* coordinates exactly the groups that hash to *p*
(:func:`~odradek.coordinator.partitioning.partition_for_group`), so a shard is the unit that
is loaded when leadership arrives and dropped when it leaves. It routes requests to groups,
applies the request-level rules that need the group table (a group is created by its first
JoinGroup or by a simple offset commit; an unknown group is UNKNOWN_MEMBER_ID for
JoinGroup-with-id/SyncGroup/Heartbeat), and turns the log back into groups
(:meth:`CoordinatorShard.replay`). Offsets are applied by replaying the very records that
were committed to the log, so the cache and the log cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from odradek.config_sections import GroupCoordinatorConfig
from odradek.protocol.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import Record
from odradek.types import TopicPartition

from .errors import GroupIdNotFound, NonEmptyGroup
from .group import Group, JoinRequest
from .group_state import GroupState
from .offsets import (
    OffsetAndMetadata,
    expired_offsets,
    offset_tombstone,
    validate_offset_commit,
)
from .offsets_topic_format import (
    GroupMetadataKey,
    OffsetCommitKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    offset_commit_key_partition,
    offset_commit_key_prefix,
    offset_commit_key_topic,
    offset_commit_value_bytes,
)
from .results import JoinResult, Output, Reply, SyncResult

__all__ = [
    "CommitPlan",
    "CoordinatorShard",
    "GroupListing",
    "OffsetCommitEntry",
    "PartitionOffset",
]



class OffsetCommitEntry(NamedTuple):
    """One partition of an OffsetCommit (a named tuple: built per partition per request)."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    expire_timestamp_ms: int = -1  # OffsetCommit v2-v4 retention_time_ms, made absolute


@dataclass(frozen=True, slots=True)
class CommitPlan:
    """Per-partition outcome of validation, and the records to append for accepted ones.

    ``offsets`` holds the same accepted offsets decoded, so that once the append commits
    :meth:`CoordinatorShard.apply_offset_commit` can install them without decoding the
    records just encoded (that round trip was a quarter of a commit's CPU time).
    """

    errors: dict[TopicPartition, ErrorCode]
    records: list[Record]
    group_id: str = ""
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    topic: str
    partition: int
    offset: int = -1
    leader_epoch: int = -1
    metadata: str = ""


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: GroupState


class CoordinatorShard:
    def __init__(
        self,
        partition: int,
        config: GroupCoordinatorConfig,
        new_uuid: Callable[[], str],
    ) -> None:
        self.partition = partition
        self.config = config
        self._new_uuid = new_uuid
        self.groups: dict[str, Group] = {}

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def _create_group(self, group_id: str, now_ms: int) -> Group:
        group = Group(group_id, self.config, now_ms, self._new_uuid)
        self.groups[group_id] = group
        return group

    # ------------------------------------------------------------------ membership

    def join(self, now_ms: int, token: int, group_id: str, request: JoinRequest) -> list[Output]:
        group = self.groups.get(group_id)
        if group is None:
            if request.member_id:
                return [Reply(token, JoinResult(ErrorCode.unknown_member_id, request.member_id))]
            group = self._create_group(group_id, now_ms)
        out = group.join(now_ms, token, request)
        self._forget_if_unused(group)
        return out

    def sync(
        self,
        now_ms: int,
        token: int,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        assignments: Mapping[str, bytes],
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> list[Output]:
        group = self.groups.get(group_id)
        if group is None:
            return [Reply(token, SyncResult(ErrorCode.unknown_member_id))]
        return group.sync(
            now_ms, token, member_id, group_instance_id, generation_id, assignments,
            protocol_type, protocol_name,
        )

    def heartbeat(
        self, now_ms: int, group_id: str, member_id: str, group_instance_id: str | None,
        generation_id: int,
    ) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        return group.heartbeat(now_ms, member_id, group_instance_id, generation_id)

    def leave(
        self, now_ms: int, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode], list[Output]]:
        """(top-level error, one error per member, outputs)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.none, [ErrorCode.unknown_member_id] * len(members), []
        try:
            errors, out = group.leave(now_ms, members)
        except KafkaError as exc:
            return exc.code, [exc.code] * len(members), []
        return ErrorCode.none, errors, out

    def _forget_if_unused(self, group: Group) -> None:
        """A group created by a JoinGroup that failed at once (bad session timeout, or
        MEMBER_ID_REQUIRED) holds nothing worth keeping, except pending member ids."""
        if (
            group.state is GroupState.EMPTY
            and not group.members
            and not group.membership.pending_members
            and not group.offsets
            and group.generation_id == 0
            and group.protocol_type is None
        ):
            self.groups.pop(group.group_id, None)

    # ------------------------------------------------------------------ timers

    def next_deadline(self, group_id: str) -> int | None:
        group = self.groups.get(group_id)
        return None if group is None else group.next_deadline()

    def poll(self, now_ms: int, group_id: str) -> list[Output]:
        group = self.groups.get(group_id)
        if group is None:
            return []
        out = group.poll(now_ms)
        self._forget_if_unused(group)
        return out

    def on_store_failed(self, now_ms: int, group_id: str, generation_id: int) -> list[Output]:
        group = self.groups.get(group_id)
        return [] if group is None else group.on_store_failed(now_ms, generation_id)

    # ------------------------------------------------------------------ offsets

    def prepare_offset_commit(
        self,
        now_ms: int,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        entries: Sequence[OffsetCommitEntry],
    ) -> CommitPlan:
        """Validate an OffsetCommit; nothing changes until :meth:`replay` of the records."""
        group = self.groups.get(group_id)
        try:
            if group is None:
                if generation_id >= 0:
                    # A generation for a group we do not know: a zombie from another era.
                    return self._reject(entries, ErrorCode.illegal_generation)
                group = self._create_group(group_id, now_ms)
            member = validate_offset_commit(group, member_id, group_instance_id, generation_id)
        except KafkaError as exc:
            return self._reject(entries, exc.code)
        if member is not None:
            group.touch_member(now_ms, member)
        errors: dict[TopicPartition, ErrorCode] = {}
        records = []
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        # The hottest group path. Each partition's record key is encoded once per group
        # (kept in ``group.offset_keys``), and the per-partition tuples are built with
        # tuple.__new__: a named tuple's own constructor is a Python call of its own.
        keys = group.offset_keys
        key_prefix: bytes | None = None
        max_metadata = self.config.offset_metadata_max_bytes
        none, too_large = ErrorCode.none, ErrorCode.offset_metadata_too_large
        new = tuple.__new__
        for topic, index, committed, epoch, metadata, expire in entries:
            tp = new(TopicPartition, (topic, index))
            if not metadata:
                metadata = ""
            elif len(metadata.encode()) > max_metadata:
                errors[tp] = too_large
                continue
            errors[tp] = none
            key = keys.get(tp)
            if key is None:
                if key_prefix is None:
                    key_prefix = offset_commit_key_prefix(group_id)
                key = keys[tp] = (key_prefix + offset_commit_key_topic(topic)
                                  + offset_commit_key_partition(index))
            records.append(Record(  # positional (offset_delta, timestamp, key, value): cheaper
                0, now_ms, key, offset_commit_value_bytes(committed, epoch, metadata, now_ms,
                                                          expire),
            ))
            accepted[tp] = new(OffsetAndMetadata, (committed, epoch, metadata, now_ms, expire))
        return CommitPlan(errors, records, group_id, accepted)

    def apply_offset_commit(self, plan: CommitPlan, now_ms: int) -> None:
        """Install a plan's offsets once its records are committed; the same effect as
        :meth:`replay` of ``plan.records`` (a group deleted meanwhile comes back, as it
        would on replay)."""
        if not plan.offsets:
            return
        group = self.groups.get(plan.group_id)
        if group is None:
            group = self._create_group(plan.group_id, now_ms)
        group.offsets.update(plan.offsets)

    @staticmethod
    def _reject(entries: Sequence[OffsetCommitEntry], error: ErrorCode) -> CommitPlan:
        return CommitPlan({TopicPartition(e.topic, e.partition): error for e in entries}, [])

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> list[PartitionOffset]:
        """Committed offsets; ``None`` asks for all of them. Unknown ones are offset -1."""
        group = self.groups.get(group_id)
        committed = {} if group is None else group.offsets
        wanted = sorted(committed) if partitions is None else list(partitions)
        result = []
        for topic, partition in wanted:
            offset = committed.get(TopicPartition(topic, partition))
            if offset is None:
                result.append(PartitionOffset(topic, partition))
            else:
                result.append(
                    PartitionOffset(
                        topic, partition, offset.offset, offset.leader_epoch, offset.metadata
                    )
                )
        return result

    def delete_offsets(
        self, now_ms: int, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode], list[Record]]:
        """OffsetDelete: allowed for partitions no member of a live group consumes."""
        group = self.groups.get(group_id)
        try:
            if group is None or group.state is GroupState.DEAD:
                raise GroupIdNotFound(f"group {group_id} does not exist")
            live = group.state is not GroupState.EMPTY and group.protocol_type is not None
            if live and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise NonEmptyGroup(f"group {group_id} is not empty")
        except KafkaError as exc:
            return exc.code, {}, []
        protected = (group.subscribed_topics or frozenset()) if live else frozenset()
        errors: dict[TopicPartition, ErrorCode] = {}
        records = []
        for topic, partition in partitions:
            if topic in protected:
                errors[TopicPartition(topic, partition)] = ErrorCode.group_subscribed_to_topic
                continue
            errors[TopicPartition(topic, partition)] = ErrorCode.none
            group.offset_keys.pop(TopicPartition(topic, partition), None)
            if group.offsets.pop(TopicPartition(topic, partition), None) is not None:
                records.append(offset_tombstone(group_id, topic, partition, now_ms))
        records.extend(self._remove_if_abandoned(group, now_ms))
        return ErrorCode.none, errors, records

    def expire_offsets(self, now_ms: int) -> list[Record]:
        """Drop expired offsets, and groups left empty with none; the tombstones to write."""
        records: list[Record] = []
        for group in list(self.groups.values()):
            for topic, partition in expired_offsets(
                group, now_ms, self.config.offsets_retention_ms
            ):
                del group.offsets[TopicPartition(topic, partition)]
                group.offset_keys.pop(TopicPartition(topic, partition), None)
                records.append(offset_tombstone(group.group_id, topic, partition, now_ms))
            records.extend(self._remove_if_abandoned(group, now_ms))
        return records

    def _remove_if_abandoned(self, group: Group, now_ms: int) -> list[Record]:
        """An empty group with no committed offsets left is gone, as in Kafka's
        ``cleanupGroupMetadata`` after OffsetDelete or offset expiry: it turns Dead, its
        tombstone is written, and ListGroups stops showing it."""
        if (
            group.state is GroupState.EMPTY
            and not group.offsets
            and not group.membership.pending_members
        ):
            return self._remove_group(group, now_ms)
        return []

    # ------------------------------------------------------------------ admin

    def describe(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def list_groups(self, states: Iterable[GroupState] | None = None) -> list[GroupListing]:
        wanted = None if states is None else set(states)
        return [
            GroupListing(g.group_id, g.protocol_type or "", g.state)
            for g in self.groups.values()
            if wanted is None or g.state in wanted
        ]

    def delete_group(self, now_ms: int, group_id: str) -> tuple[ErrorCode, list[Record]]:
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.group_id_not_found, []
        if group.state is not GroupState.EMPTY:
            return ErrorCode.non_empty_group, []
        records = [
            offset_tombstone(group_id, topic, partition, now_ms)
            for topic, partition in group.offsets
        ]
        records.extend(self._remove_group(group, now_ms))
        return ErrorCode.none, records

    def _remove_group(self, group: Group, now_ms: int) -> list[Record]:
        group.mark_dead(now_ms)
        del self.groups[group.group_id]
        return [
            Record(
                timestamp=now_ms,
                key=encode_group_metadata_key(GroupMetadataKey(group.group_id)),
                value=None,
            )
        ]

    def unload(self, now_ms: int) -> list[Output]:
        """Leadership moved away: answer every parked request NOT_COORDINATOR, forget all."""
        out: list[Output] = []
        for group in self.groups.values():
            out.extend(group.mark_dead(now_ms))
        self.groups.clear()
        return out

    # ------------------------------------------------------------------ log replay

    def replay(self, records: Iterable[Record], now_ms: int, loading: bool) -> None:
        """Apply offsets-topic records. While ``loading``, group metadata records rebuild
        groups too; afterwards only offsets are replayed (live groups already hold their
        membership, and replaying it would undo later changes)."""
        for record in records:
            if record.key is None:
                continue
            key = decode_key(record.key)
            if isinstance(key, OffsetCommitKey):
                self._replay_offset(key, record.value, now_ms)
            elif isinstance(key, GroupMetadataKey) and loading:
                self._replay_group(key.group, record.value, now_ms)

    def _replay_offset(self, key: OffsetCommitKey, value: bytes | None, now_ms: int) -> None:
        group = self.groups.get(key.group)
        if value is None:
            if group is not None:
                group.offsets.pop(TopicPartition(key.topic, key.partition), None)
                group.offset_keys.pop(TopicPartition(key.topic, key.partition), None)
            return
        if group is None:
            group = self._create_group(key.group, now_ms)
        group.offsets[TopicPartition(key.topic, key.partition)] = OffsetAndMetadata.from_value(
            decode_offset_commit_value(value)
        )

    def _replay_group(self, group_id: str, value: bytes | None, now_ms: int) -> None:
        existing = self.groups.get(group_id)
        if value is None:
            # Deleted group: its offsets were tombstoned by records of their own.
            self.groups.pop(group_id, None)
            return
        group = Group.from_metadata(
            group_id, decode_group_metadata_value(value), self.config, now_ms, self._new_uuid
        )
        if existing is not None:
            group.offsets = existing.offsets
            group.offset_keys = existing.offset_keys
        self.groups[group_id] = group
