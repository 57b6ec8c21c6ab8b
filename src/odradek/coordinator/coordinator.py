"""The asyncio face of the group coordinator: futures, timers and log appends.

All decisions are made by the sans-IO :class:`~odradek.coordinator.shard.CoordinatorShard`;
this adapter only

* parks JoinGroup/SyncGroup as futures keyed by a token and completes them when the shard
  answers that token (:mod:`.parked`: a rebalance never blocks the event loop, and every
  wait is bounded by a group deadline: initial delay, rebalance timeout or pending-sync
  timeout);
* turns each group's next deadline into one ``loop.call_at`` timer;
* appends records to ``__consumer_offsets`` through the :class:`OffsetsLog`, releasing the
  replies attached to them only after the append commits;
* loads a shard when this broker becomes leader of an offsets partition (requests get
  COORDINATOR_LOAD_IN_PROGRESS meanwhile) and drops it on resignation (NOT_COORDINATOR);
* holds transactional offset commits (TxnOffsetCommit) as pending, per producer, until
  the transaction's marker reaches the offsets partition (:mod:`.txn_offsets`): COMMIT
  installs them (by replaying their records), ABORT drops them.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from odradek.clock import wall_ms
from odradek.config_sections import GroupCoordinatorConfig
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import Record
from odradek.types import TopicPartition

from .append_errors import append_error_to_coordinator_error, commit_failed
from .appends import OffsetsAppender
from .consumer_group import ConsumerGroup, ConsumerHeartbeat, HeartbeatResult
from .errors import CoordinatorLoadInProgress, InvalidGroupId, NotCoordinator
from .group import Group, JoinRequest
from .group_members import GroupDescription
from .group_state import GroupState
from .offsets import CommitPlan, OffsetCommitEntry
from .offsets_log import OffsetsLog
from .parked import ParkedRequests
from .partitioning import partition_for_group
from .results import AppendRecords, JoinResult, Output, Reply, StoreGroup, SyncResult
from .shard import CoordinatorShard, GroupListing, PartitionOffset
from .txn_offsets import PendingTxnOffsets

__all__ = ["GroupCoordinator", "GroupDescription"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
LeaveAnswer = tuple[ErrorCode, list[ErrorCode]]
"""LeaveGroup's (top-level error, one error per member)."""


@dataclass
class _Slot:
    """One offsets partition this broker leads: loading, then active."""

    shard: CoordinatorShard
    loaded: bool = False
    load_task: asyncio.Task[None] | None = None
    timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    pending_txn: PendingTxnOffsets = field(default_factory=PendingTxnOffsets)


class GroupCoordinator:
    def __init__(
        self,
        config: GroupCoordinatorConfig,
        offsets_log: OffsetsLog,
        *,
        clock: Callable[[], int] = wall_ms,
        new_uuid: Callable[[], str] = lambda: str(uuid.uuid4()),
        topic_ids: Callable[[], Mapping[str, uuid.UUID]] = dict,
        partition_counts: Callable[[], Mapping[str, int]] | None = None,
    ) -> None:
        """``topic_ids``: the cluster's topic ids by name, which consumer-group records
        are written with (and resolved by when a partition's groups load);
        ``partition_counts``: every topic's partition count, which a classic member joining
        a consumer group is assigned from (without it, the group's last known counts)."""
        self.config = config
        self._topic_ids = topic_ids
        self._partition_counts = partition_counts
        self.offsets_log = offsets_log
        self._appender = OffsetsAppender(offsets_log, config.offset_commit_timeout_ms)
        self._clock = clock
        self._new_uuid = new_uuid
        self._slots: dict[int, _Slot] = {}
        self._parked = ParkedRequests(2 * config.offset_commit_timeout_ms)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._expiry_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the periodic offset expiry (``offsets.retention.check.interval.ms``)."""
        if self._expiry_task is None:
            self._expiry_task = asyncio.get_running_loop().create_task(self._expiry_loop())

    async def close(self) -> None:
        for partition in list(self._slots):
            self.on_resign(partition)
        tasks = [t for t in (self._expiry_task, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._expiry_task = None

    def partition_for(self, group_id: str) -> int:
        return partition_for_group(group_id, self.config.offsets_topic_num_partitions)

    def on_become_leader(self, partition: int) -> asyncio.Task[None]:
        """This broker now leads ``partition`` of ``__consumer_offsets``: load its groups."""
        self.on_resign(partition)
        slot = _Slot(CoordinatorShard(partition, self.config, self._new_uuid))
        self._slots[partition] = slot
        slot.load_task = asyncio.get_running_loop().create_task(self._load(partition, slot))
        return slot.load_task

    def on_resign(self, partition: int) -> None:
        """Leadership of ``partition`` moved away: fail parked requests, forget the groups."""
        slot = self._slots.pop(partition, None)
        if slot is None:
            return
        if slot.load_task is not None and not slot.load_task.done():
            slot.load_task.cancel()
        for timer in slot.timers.values():
            timer.cancel()
        self._deliver(slot.shard.unload(self._clock()))

    async def _load(self, partition: int, slot: _Slot) -> None:
        records: list[Record] = []
        for count, record in enumerate(self.offsets_log.read_all(partition), 1):
            records.append(record)
            if count % 1000 == 0:
                await asyncio.sleep(0)  # a large partition must not stall other requests
        topic_names = {topic_id: name for name, topic_id in self._topic_ids().items()}
        slot.shard.replay(records, self._clock(), loading=True, topic_names=topic_names)
        slot.pending_txn = PendingTxnOffsets(self.offsets_log.open_transactions(partition))
        slot.loaded = True
        for group_id in list(slot.shard.groups):
            self._reschedule(slot, group_id)
        log.info("loaded %d groups from %s-%d", len(slot.shard.groups),
                 "__consumer_offsets", partition)

    def _active_slot(self, group_id: str) -> _Slot:
        slot = self._slots.get(self.partition_for(group_id))
        if slot is None:
            raise NotCoordinator(f"not the coordinator of group {group_id!r}")
        if not slot.loaded:
            raise CoordinatorLoadInProgress(f"loading the partition of group {group_id!r}")
        return slot

    def _membership_slot(self, group_id: str) -> _Slot:
        if not group_id:
            raise InvalidGroupId("group id must not be empty")
        return self._active_slot(group_id)

    # ------------------------------------------------------------------ membership

    async def join_group(self, group_id: str, request: JoinRequest) -> JoinResult:
        try:
            slot = self._membership_slot(group_id)
        except KafkaError as exc:
            return JoinResult(exc.code, request.member_id)
        token, future = self._parked.park()
        topics = None if self._partition_counts is None else self._partition_counts()
        self._handle(slot, group_id, slot.shard.join(self._clock(), token, group_id, request,
                                                     topics, self._topic_ids()))
        bound_ms = request.rebalance_timeout_ms + self.config.initial_rebalance_delay_ms
        return await self._parked.wait(token, future, bound_ms, JoinResult(
            ErrorCode.rebalance_in_progress, request.member_id))

    async def sync_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        assignments: Mapping[str, bytes],
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult:
        try:
            slot = self._membership_slot(group_id)
        except KafkaError as exc:
            return SyncResult(exc.code)
        group = slot.shard.group(group_id)
        bound_ms = group.membership.rebalance_timeout_ms if group is not None else 0
        token, future = self._parked.park()
        self._handle(slot, group_id, slot.shard.sync(
            self._clock(), token, group_id, member_id, group_instance_id, generation_id,
            assignments, protocol_type, protocol_name,
        ))
        return await self._parked.wait(token, future, bound_ms,
                                       SyncResult(ErrorCode.rebalance_in_progress))

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        try:
            slot = self._membership_slot(group_id)
        except KafkaError as exc:
            return exc.code
        error = slot.shard.heartbeat(
            self._clock(), group_id, member_id, group_instance_id, generation_id
        )
        self._reschedule(slot, group_id)
        return error

    def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> LeaveAnswer | Awaitable[LeaveAnswer]:
        """(top-level error, per-member errors) for LeaveGroup v3+; v0-v2 use the single
        member's error as the top-level one. Members leaving a consumer group change its
        records: as in Kafka, the answer waits until they are written (a member told it
        left must not reappear after a coordinator failover), and carries the write's error
        if that fails. A classic group's leave writes nothing until its next generation."""
        try:
            slot = self._membership_slot(group_id)
        except KafkaError as exc:
            return exc.code, [exc.code] * len(members)
        top, errors, out = slot.shard.leave(self._clock(), group_id, members,
                                            self._topic_ids())
        writes = self._deliver(out, slot)
        self._reschedule(slot, group_id)
        return (top, errors) if not writes else self._leave_when_written(top, errors, writes)

    async def _leave_when_written(self, top: ErrorCode, errors: list[ErrorCode],
                                  writes: list[asyncio.Task[ErrorCode]]) -> LeaveAnswer:
        for write in writes:
            # shielded: a client hanging up must not cancel the group's own write
            error = await asyncio.shield(write)
            if error is not ErrorCode.none:
                return error, [error] * len(errors)
        return top, errors

    def consumer_group_heartbeat(
        self, group_id: str, request: ConsumerHeartbeat, topics: Mapping[str, int],
        topic_ids: Mapping[str, uuid.UUID],
    ) -> HeartbeatResult | Awaitable[HeartbeatResult]:
        """ConsumerGroupHeartbeat (KIP-848); ``topics``: every topic's partition count. The
        answer waits until the records of what changed are committed, as in Kafka."""
        try:
            slot = self._membership_slot(group_id)
        except KafkaError as exc:
            return HeartbeatResult(exc.code, str(exc) or None)
        result, records, out = slot.shard.consumer_heartbeat(self._clock(), group_id, request,
                                                             topics, topic_ids)
        self._handle(slot, group_id, out)
        if not records:
            return result
        try:
            pending = self._appender.start(slot.shard.partition, records)
        except KafkaError as exc:
            return HeartbeatResult(append_error_to_coordinator_error(exc.code), str(exc))
        return result if pending is None else self._heartbeat_when_appended(result, pending)

    async def _heartbeat_when_appended(self, result: HeartbeatResult,
                                       pending: Awaitable[None]) -> HeartbeatResult:
        try:
            await self._appender.bounded(pending)
        except KafkaError as exc:
            return HeartbeatResult(append_error_to_coordinator_error(exc.code), str(exc))
        return result

    def describe_consumer_group(self, group_id: str) -> tuple[ErrorCode, ConsumerGroup | None]:
        """ConsumerGroupDescribe: the group, or GROUP_ID_NOT_FOUND as Kafka answers for
        groups that do not exist or are classic."""
        try:
            slot = self._active_slot(group_id)
        except KafkaError as exc:
            return exc.code, None
        group = slot.shard.consumer_groups.get(group_id)
        return (ErrorCode.none if group else ErrorCode.group_id_not_found), group

    # ------------------------------------------------------------------ offsets

    async def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        entries: Sequence[OffsetCommitEntry],
    ) -> dict[TopicPartition, ErrorCode]:
        result = self.commit_offsets_nowait(group_id, member_id, group_instance_id,
                                            generation_id, entries)
        return result if isinstance(result, dict) else await result

    def commit_offsets_nowait(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        entries: Sequence[OffsetCommitEntry],
    ) -> dict[TopicPartition, ErrorCode] | Awaitable[dict[TopicPartition, ErrorCode]]:
        """OffsetCommit: the per-partition errors, or an awaitable of them while the append
        waits for the high watermark. When the append commits at once (the offsets
        partition's leader is its whole ISR) the answer comes back with no task at all."""
        try:
            slot = self._active_slot(group_id)
        except KafkaError as exc:
            return {TopicPartition(e.topic, e.partition): exc.code for e in entries}
        plan = slot.shard.prepare_offset_commit(
            self._clock(), group_id, member_id, group_instance_id, generation_id, entries
        )
        self._reschedule(slot, group_id)
        if not plan.records:
            return plan.errors
        try:
            pending = self._appender.start(slot.shard.partition, plan.records)
        except KafkaError as exc:
            return commit_failed(plan, exc)
        if pending is not None:
            return self._commit_when_appended(slot, plan, pending)
        if self._slots.get(slot.shard.partition) is slot:
            slot.shard.apply_offset_commit(plan, self._clock())
        return plan.errors

    async def _commit_when_appended(self, slot: _Slot, plan: CommitPlan,
                                    pending: Awaitable[None]) -> dict[TopicPartition, ErrorCode]:
        try:
            await self._appender.bounded(pending)
        except KafkaError as exc:
            return commit_failed(plan, exc)
        if self._slots.get(slot.shard.partition) is slot:
            slot.shard.apply_offset_commit(plan, self._clock())
        return plan.errors

    async def commit_txn_offsets(
        self,
        group_id: str,
        producer: tuple[int, int],
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        entries: Sequence[OffsetCommitEntry],
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: validated like OffsetCommit, written as the producer's
        transactional batch, installed only when the transaction commits."""
        try:
            slot = self._active_slot(group_id)
        except KafkaError as exc:
            return {TopicPartition(e.topic, e.partition): exc.code for e in entries}
        plan = slot.shard.prepare_offset_commit(
            self._clock(), group_id, member_id, group_instance_id, generation_id, entries
        )
        if not plan.records:
            return plan.errors
        try:
            await self._appender.append(slot.shard.partition, plan.records, producer)
        except KafkaError as exc:
            return commit_failed(plan, exc)
        if self._slots.get(slot.shard.partition) is slot:
            slot.pending_txn.add(producer[0], plan.records)
        return plan.errors

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker of ``producer_id`` is in offsets partition ``partition``."""
        slot = self._slots.get(partition)
        if slot is None:
            return
        records = slot.pending_txn.complete(producer_id, commit)
        if records:
            slot.shard.replay(records, self._clock(), loading=False)

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> tuple[ErrorCode, list[PartitionOffset]]:
        try:
            slot = self._active_slot(group_id)
        except KafkaError as exc:
            return exc.code, []
        return ErrorCode.none, slot.shard.fetch_offsets(group_id, partitions)

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]:
        """Partitions of ``group_id`` with a transactional commit still pending: OffsetFetch
        with ``require_stable`` answers them UNSTABLE_OFFSET_COMMIT (:mod:`.txn_offsets`)."""
        slot = self._slots.get(self.partition_for(group_id))
        return set() if slot is None else slot.pending_txn.unstable(group_id)

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        try:
            slot = self._membership_slot(group_id)
        except KafkaError as exc:
            return exc.code, {}
        top, errors, records = slot.shard.delete_offsets(self._clock(), group_id, partitions)
        self._reschedule(slot, group_id)  # the group may be gone with its last offset
        if records:
            try:
                await self._appender.append(slot.shard.partition, records)
            except KafkaError as exc:
                return append_error_to_coordinator_error(exc.code), {}
        return top, errors

    # ------------------------------------------------------------------ admin

    def describe_group(self, group_id: str) -> GroupDescription:
        try:
            slot = self._active_slot(group_id)
        except KafkaError as exc:
            return GroupDescription(group_id, exc.code)
        group = slot.shard.describe(group_id)
        if group is None:
            return GroupDescription(group_id, ErrorCode.none)  # Kafka: state Dead, no error
        return GroupDescription(
            group_id,
            ErrorCode.none,
            group.state.value,
            group.protocol_type or "",
            (group.protocol_name or "") if group.state is GroupState.STABLE else "",
            tuple(group.describe_members()),
        )

    def loaded_groups(self) -> Iterator[Group]:
        """Every group of the offsets partitions loaded here, with or without members (the
        consumer-lag metrics: a group whose members all left still has offsets to report)."""
        for slot in list(self._slots.values()):
            if slot.loaded:
                yield from list(slot.shard.groups.values())

    def list_groups(
        self, states_filter: Iterable[str] = ()
    ) -> tuple[ErrorCode, list[GroupListing]]:
        """Groups of every loaded partition; COORDINATOR_LOAD_IN_PROGRESS while any loads.
        States match case-insensitively, as ListGroups' filter does in Kafka."""
        wanted = {name.lower() for name in states_filter} or None
        listings: list[GroupListing] = []
        error = ErrorCode.none
        for slot in self._slots.values():
            if not slot.loaded:
                error = ErrorCode.coordinator_load_in_progress
                continue
            listings.extend(slot.shard.list_groups(wanted))
        return error, listings

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            try:
                slot = self._membership_slot(group_id)
            except KafkaError as exc:
                results[group_id] = exc.code
                continue
            error, records = slot.shard.delete_group(self._clock(), group_id)
            self._cancel_timer(slot, group_id)
            if records:
                try:
                    await self._appender.append(slot.shard.partition, records)
                except KafkaError as exc:
                    error = append_error_to_coordinator_error(exc.code)
            results[group_id] = error
        return results

    async def expire_offsets_once(self) -> int:
        """Run one retention pass over every loaded partition; the tombstones written."""
        written = 0
        for slot in list(self._slots.values()):
            if not slot.loaded:
                continue
            records = slot.shard.expire_offsets(self._clock())
            if records:
                try:
                    await self._appender.append(slot.shard.partition, records)
                    written += len(records)
                except KafkaError as exc:
                    log.warning("could not write expired-offset tombstones: %s", exc)
        return written

    async def _expiry_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.offsets_retention_check_interval_ms / 1000)
            await self.expire_offsets_once()

    # ------------------------------------------------------------------ plumbing

    def _handle(self, slot: _Slot, group_id: str, outputs: list[Output]) -> None:
        self._deliver(outputs, slot)
        self._reschedule(slot, group_id)

    def _deliver(self, outputs: Iterable[Output],
                 slot: _Slot | None = None) -> list[asyncio.Task[ErrorCode]]:
        """Answer the replies and start the appends, in order; the tasks of the
        consumer-group appends (:class:`AppendRecords`), for a request that waits on them."""
        writes: list[asyncio.Task[ErrorCode]] = []
        for output in outputs:
            if isinstance(output, Reply):
                self._parked.answer(output)
            elif slot is None:
                continue
            elif isinstance(output, StoreGroup):
                appended = self._appender.begin(slot.shard.partition, [output.record])
                self._spawn(self._store_group(slot, output, appended))
            else:
                appended = self._appender.begin(slot.shard.partition, list(output.records))
                writes.append(self._spawn(self._append_records(output, appended)))
        return writes

    def _spawn(self, coroutine: Coroutine[Any, Any, _T]) -> asyncio.Task[_T]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _store_group(self, slot: _Slot, store: StoreGroup,
                           appended: Awaitable[None]) -> None:
        try:
            await appended
        except KafkaError as exc:
            error = append_error_to_coordinator_error(exc.code)
            for reply in store.replies:
                self._parked.answer(reply.with_error(error))
            if self._slots.get(slot.shard.partition) is slot:
                out = slot.shard.on_store_failed(self._clock(), store.group_id,
                                                 store.generation_id)
                self._handle(slot, store.group_id, out)
            return
        for reply in store.replies:
            self._parked.answer(reply)

    async def _append_records(self, append: AppendRecords,
                              appended: Awaitable[None]) -> ErrorCode:
        try:
            await appended
        except KafkaError as exc:
            error = append_error_to_coordinator_error(exc.code)
            log.warning("could not write consumer-group records: %s", exc)
            for reply in append.replies:
                self._parked.answer(reply.with_error(error))
            return error
        for reply in append.replies:
            self._parked.answer(reply)
        return ErrorCode.none

    def _reschedule(self, slot: _Slot, group_id: str) -> None:
        self._cancel_timer(slot, group_id)
        deadline = slot.shard.next_deadline(group_id)
        if deadline is None or self._slots.get(slot.shard.partition) is not slot:
            return
        delay = max(deadline - self._clock(), 0) / 1000
        slot.timers[group_id] = asyncio.get_running_loop().call_later(
            delay, self._fire, slot, group_id
        )

    def _cancel_timer(self, slot: _Slot, group_id: str) -> None:
        timer = slot.timers.pop(group_id, None)
        if timer is not None:
            timer.cancel()

    def _fire(self, slot: _Slot, group_id: str) -> None:
        slot.timers.pop(group_id, None)
        if self._slots.get(slot.shard.partition) is not slot:
            return
        records = slot.shard.expire_consumer_members(self._clock(), group_id, self._topic_ids())
        if records:
            self._spawn(self._append_expiry(self._appender.begin(slot.shard.partition,
                                                                 records)))
        self._handle(slot, group_id, slot.shard.poll(self._clock(), group_id))

    async def _append_expiry(self, appended: Awaitable[None]) -> None:
        """Members removed by a timer: no client waits, so a failure is only logged (a
        reload then brings them back until their session times out again)."""
        try:
            await appended
        except KafkaError as exc:
            log.warning("could not write expired consumer-group members: %s", exc)
