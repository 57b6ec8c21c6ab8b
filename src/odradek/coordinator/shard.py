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

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from odradek.config_sections import GroupCoordinatorConfig
from odradek.protocol.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import Record
from odradek.types import TopicPartition

from .classic_members import classic_heartbeat, classic_join, classic_sync
from .consumer_group import (
    LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerGroupState,
    ConsumerHeartbeat,
    HeartbeatResult,
)
from .consumer_group_records import (
    CONSUMER_GROUP_KEY_TYPES,
    changed_records,
    conversion_records,
    deletion_records,
    finish_load,
    replay_consumer_group_record,
    snapshot,
)
from .errors import GroupIdNotFound, NonEmptyGroup
from .group import Group, JoinRequest
from .group_conversion import downgrade_allowed
from .group_state import GroupState
from .migration import leave_consumer_group, remove_consumer_members, upgrade
from .offsets import (
    CommitPlan,
    OffsetAndMetadata,
    OffsetCommitEntry,
    commit_plan,
    expired_offsets,
    offset_tombstone,
    validate_offset_commit,
)
from .offsets_topic_format import (
    GroupMetadataKey,
    OffsetCommitKey,
    UnknownKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
)
from .results import AppendRecords, JoinResult, Output, Reply, SyncResult

__all__ = [
    "CoordinatorShard",
    "GroupListing",
    "PartitionOffset",
]


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
    state: GroupState | ConsumerGroupState
    group_type: str = "classic"  # ListGroups v5: "classic" or "consumer" (KIP-848)


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
        # KIP-848 groups' membership. Their committed offsets stay in ``groups``, in a
        # classic group without members, so every offsets path (commit, fetch, expiry,
        # replay) serves both kinds.
        self.consumer_groups: dict[str, ConsumerGroup] = {}

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def _create_group(self, group_id: str, now_ms: int) -> Group:
        group = Group(group_id, self.config, now_ms, self._new_uuid)
        self.groups[group_id] = group
        return group

    # ------------------------------------------------------------------ membership

    def _mixed(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group with members that classic requests for ``group_id`` go to."""
        group = self.consumer_groups.get(group_id)
        return group if group is not None and group.members else None

    def join(self, now_ms: int, token: int, group_id: str, request: JoinRequest,
             topics: Mapping[str, int] | None = None,
             topic_ids: Mapping[str, uuid.UUID] | None = None) -> list[Output]:
        """``topics``/``topic_ids`` (partition counts, ids by name) are needed when the
        group is a consumer group; without them its subscribed topics count as unchanged."""
        consumer_group = self._mixed(group_id)
        if consumer_group is not None:  # a classic member of a consumer group
            before = snapshot(consumer_group)
            result = classic_join(
                consumer_group, now_ms, request, self._new_uuid(),
                consumer_group.partition_counts if topics is None else topics)
            records = changed_records(group_id, before, snapshot(consumer_group),
                                      topic_ids or {}, now_ms)
            reply = Reply(token, result)
            return [AppendRecords(tuple(records), (reply,)) if records else reply]
        # An empty consumer group becomes classic: its records are tombstoned (Kafka's
        # maybeDeleteEmptyConsumerGroup), its offsets stay.
        dropped = self.consumer_groups.pop(group_id, None)
        records = ([] if dropped is None else
                   conversion_records(group_id, dropped, None, topic_ids or {}, now_ms))
        dropping: list[Output] = [AppendRecords(tuple(records))] if records else []
        group = self.groups.get(group_id)
        if group is None:
            if request.member_id:
                return [*dropping, Reply(token, JoinResult(ErrorCode.unknown_member_id,
                                                           request.member_id))]
            group = self._create_group(group_id, now_ms)
        out = group.join(now_ms, token, request)
        self._forget_if_unused(group)
        return [*dropping, *out]

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
        consumer_group = self._mixed(group_id)
        if consumer_group is not None:
            return [Reply(token, classic_sync(consumer_group, now_ms, member_id,
                                              group_instance_id, generation_id,
                                              protocol_type, protocol_name))]
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
        consumer_group = self._mixed(group_id)
        if consumer_group is not None:
            return classic_heartbeat(consumer_group, now_ms, member_id, group_instance_id,
                                     generation_id)
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        return group.heartbeat(now_ms, member_id, group_instance_id, generation_id)

    def leave(
        self, now_ms: int, group_id: str, members: Sequence[tuple[str, str | None]],
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> tuple[ErrorCode, list[ErrorCode], list[Output]]:
        """(top-level error, one error per member, outputs)."""
        consumer_group = self._mixed(group_id)
        if consumer_group is not None:
            errors, out = leave_consumer_group(self.groups, self.consumer_groups, consumer_group,
                                               members, now_ms, topic_ids or {}, self._new_uuid)
            return ErrorCode.none, errors, out
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.none, [ErrorCode.unknown_member_id] * len(members), []
        try:
            errors, out = group.leave(now_ms, members)
        except KafkaError as exc:
            return exc.code, [exc.code] * len(members), []
        return ErrorCode.none, errors, out

    def consumer_heartbeat(
        self, now_ms: int, group_id: str, request: ConsumerHeartbeat,
        topics: Mapping[str, int], topic_ids: Mapping[str, uuid.UUID],
    ) -> tuple[HeartbeatResult, list[Record], list[Output]]:
        """ConsumerGroupHeartbeat: its result, the records of what it changed, answers to
        classic requests it ends. As in Kafka, a classic group becomes a consumer group
        (upgraded if it has members: :mod:`odradek.coordinator.migration`), and the last
        consumer-protocol member leaving classic ones downgrades it. An epoch for a group
        this shard does not hold is UNKNOWN_MEMBER_ID (the member rejoins)."""
        group = self.consumer_groups.get(group_id)
        records: list[Record] = []
        out: list[Output] = []
        if group is None:
            classic = self.groups.get(group_id)
            if request.member_epoch != 0:
                return HeartbeatResult(ErrorCode.unknown_member_id,
                                       f"Group {group_id} has no member "
                                       f"{request.member_id}."), [], []
            if classic is not None and classic.state is not GroupState.EMPTY:
                try:
                    group, records, out = upgrade(self.groups, self.consumer_groups, classic,
                                                  now_ms, topic_ids)
                except GroupIdNotFound as exc:
                    return HeartbeatResult(exc.code, str(exc)), [], []
            else:
                group = self.consumer_groups[group_id] = ConsumerGroup(group_id, self.config)
        elif request.member_epoch == LEAVE_EPOCH and request.member_id in group.members and (
                downgrade_allowed(group, {request.member_id}, self.config)):
            records, out = remove_consumer_members(
                self.groups, self.consumer_groups, group, {request.member_id}, now_ms,
                topic_ids, self._new_uuid)
            return HeartbeatResult(member_id=request.member_id,
                                   member_epoch=LEAVE_EPOCH), records, out
        before = snapshot(group)
        result = group.heartbeat(now_ms, request, topics)
        records += changed_records(group_id, before, snapshot(group), topic_ids, now_ms)
        return result, records, out

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
        classic = None if group is None else group.next_deadline()
        consumer_group = self.consumer_groups.get(group_id)
        consumer = None if consumer_group is None else consumer_group.next_deadline()
        return min((d for d in (classic, consumer) if d is not None), default=None)

    def poll(self, now_ms: int, group_id: str) -> list[Output]:
        group = self.groups.get(group_id)
        if group is None:
            return []
        out = group.poll(now_ms)
        self._forget_if_unused(group)
        return out

    def expire_consumer_members(self, now_ms: int, group_id: str,
                                topic_ids: Mapping[str, uuid.UUID]) -> list[Record]:
        """Remove a consumer group's members past their deadlines; the records of it."""
        group = self.consumer_groups.get(group_id)
        if group is None:
            return []
        # A group downgraded here has no parked classic request yet: no outputs to deliver.
        records, _ = remove_consumer_members(self.groups, self.consumer_groups, group,
                                             group.expired(now_ms), now_ms, topic_ids,
                                             self._new_uuid)
        return records

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
        consumer_group = self.consumer_groups.get(group_id)
        stale: set[TopicPartition] = set()
        if consumer_group is not None:
            try:
                stale = consumer_group.validate_offset_commit(
                    member_id, generation_id,
                    [TopicPartition(e.topic, e.partition) for e in entries])
            except KafkaError as exc:
                return self._reject(entries, exc.code)
            if stale:
                entries = [e for e in entries if (e.topic, e.partition) not in stale]
            # Valid for the consumer group: stored like an admin's commit to its offsets.
            member_id, group_instance_id, generation_id = "", None, -1
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
            member.touch(now_ms)  # a commit also proves the member alive
        plan = commit_plan(group_id, group.offset_keys, entries, now_ms,
                           self.config.offset_metadata_max_bytes)
        for tp in stale:
            plan.errors[tp] = ErrorCode.stale_member_epoch
        return plan

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
        consumer_group = self.consumer_groups.get(group_id)
        subscribed = None  # a consumer group's topics, while it has members
        if consumer_group is not None and consumer_group.members:
            subscribed = frozenset(consumer_group.partition_counts)
        if group is None and consumer_group is not None:
            # A consumer group that committed nothing yet exists all the same, as in Kafka:
            # its subscribed topics are refused, the rest have nothing to delete.
            return ErrorCode.none, {
                tp: ErrorCode.group_subscribed_to_topic if tp.topic in (subscribed or ())
                else ErrorCode.none for tp in partitions}, []
        try:
            if group is None or group.state is GroupState.DEAD:
                raise GroupIdNotFound(f"group {group_id} does not exist")
            live = group.state is not GroupState.EMPTY and group.protocol_type is not None
            if live and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise NonEmptyGroup(f"group {group_id} is not empty")
        except KafkaError as exc:
            return exc.code, {}, []
        protected = subscribed if subscribed is not None else (
            (group.subscribed_topics or frozenset()) if live else frozenset())
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
        """The classic group, for DescribeGroups; a consumer group's offsets holder is not
        one (Kafka describes it as Dead: ConsumerGroupDescribe is the way to see it)."""
        return None if group_id in self.consumer_groups else self.groups.get(group_id)

    def list_groups(self, states: Iterable[str] | None = None) -> list[GroupListing]:
        """Every group, or those whose state is one of ``states`` (lower-case names)."""
        wanted = None if states is None else set(states)
        listings = [
            GroupListing(g.group_id, g.protocol_type or "", g.state)
            for g in self.groups.values()
            if g.group_id not in self.consumer_groups
        ]
        listings.extend(GroupListing(g.group_id, CONSUMER_PROTOCOL_TYPE, g.state, "consumer")
                        for g in self.consumer_groups.values())
        return [g for g in listings if wanted is None or g.state.value.lower() in wanted]

    def delete_group(self, now_ms: int, group_id: str) -> tuple[ErrorCode, list[Record]]:
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.members:
                return ErrorCode.non_empty_group, []
            del self.consumer_groups[group_id]
            tombstones = deletion_records(group_id, now_ms)
            if group_id not in self.groups:
                return ErrorCode.none, tombstones
            error, records = self.delete_group(now_ms, group_id)
            return error, tombstones + records
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
        self.consumer_groups.clear()
        return out

    # ------------------------------------------------------------------ log replay

    def replay(self, records: Iterable[Record], now_ms: int, loading: bool,
               topic_names: Mapping[uuid.UUID, str] | None = None) -> None:
        """Apply offsets-topic records. While ``loading``, group metadata records rebuild
        groups too (consumer groups' with ``topic_names`` resolving their topic ids);
        afterwards only offsets are replayed (live groups already hold their membership,
        and replaying it would undo later changes)."""
        for record in records:
            if record.key is None:
                continue
            key = decode_key(record.key)
            if isinstance(key, OffsetCommitKey):
                self._replay_offset(key, record.value, now_ms)
            elif isinstance(key, GroupMetadataKey) and loading:
                self._replay_group(key.group, record.value, now_ms)
            elif (isinstance(key, UnknownKey) and key.version in CONSUMER_GROUP_KEY_TYPES
                  and loading):
                replay_consumer_group_record(
                    self.consumer_groups, lambda g: ConsumerGroup(g, self.config),
                    record.key, record.value, topic_names or {}, now_ms)
        if loading:
            finish_load(self.consumer_groups.values())

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
            # Deleted group: its offsets were tombstoned by records of their own. A group
            # that became a consumer group keeps them (the offsets holder stays).
            if existing is not None and existing.offsets:
                holder = Group(group_id, self.config, now_ms, self._new_uuid)
                holder.offsets, holder.offset_keys = existing.offsets, existing.offset_keys
                self.groups[group_id] = holder
            else:
                self.groups.pop(group_id, None)
            return
        group = Group.from_metadata(
            group_id, decode_group_metadata_value(value), self.config, now_ms, self._new_uuid
        )
        if existing is not None:
            group.offsets = existing.offsets
            group.offset_keys = existing.offset_keys
        self.groups[group_id] = group
