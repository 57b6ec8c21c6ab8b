"""The asyncio consumer: manual assignment or a consumer group, ``poll`` or the paper's stream.

``async for record in consumer`` (and ``for record in consumer`` on the synchronous facade) is
the paper's message stream: it never ends and blocks until new records arrive. ``poll`` returns
whatever is buffered (up to ``max_poll_records``) or waits up to its timeout.

Positions: a partition without one (new assignment, ``seek_to_*``, OFFSET_OUT_OF_RANGE) is
reset before fetching — to the group's committed offset if there is one, else by
``auto_offset_reset`` (earliest, latest, or none = raise :class:`NoOffsetForPartition`).

Groups: ``group_protocol="classic"`` (the default: JoinGroup/SyncGroup, client-side assignors,
:mod:`.group`) or ``"consumer"`` (KIP-848: the coordinator assigns, the member reconciles,
:mod:`.consumer_group_member`; ``group_remote_assignor`` and ``subscribed_topic_regex`` belong
to it). Both call the same ``on_assign``/``on_revoke`` listeners.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

from odradek.clock import monotonic_s

from .aio import wait_event
from .batch_codec import ConsumerRecord
from .cluster_client import ClusterClient
from .consumer_group_member import ConsumerGroupMember
from .errors import KafkaClientError, NoOffsetForPartition
from .fetcher import Fetcher
from .group import GroupMembership
from .metadata import TopicPartition
from .offsets import EARLIEST, LATEST, OffsetAndTimestamp, list_offsets
from .security import ClientSecurity
from .transactions import ConsumerGroupMetadata

__all__ = ["AsyncConsumer", "RebalanceListener"]

log = logging.getLogger(__name__)

RebalanceListener = Callable[[list[TopicPartition]], Any]
_RESETS = {"earliest": EARLIEST, "smallest": EARLIEST, "beginning": EARLIEST,
           "latest": LATEST, "largest": LATEST, "end": LATEST, "none": None}


class AsyncConsumer:
    def __init__(self, *topics: str, bootstrap_servers: str | Iterable[str],
                 group_id: str | None = None, client_id: str = "odradek",
                 auto_offset_reset: str = "latest", enable_auto_commit: bool = True,
                 auto_commit_interval_ms: int = 5_000,
                 partition_assignment_strategy: Sequence[str] = ("range",
                                                                 "cooperative-sticky"),
                 session_timeout_ms: int = 45_000, heartbeat_interval_ms: int = 3_000,
                 max_poll_interval_ms: int = 300_000, rebalance_timeout_ms: int | None = None,
                 group_instance_id: str | None = None, max_poll_records: int = 500,
                 fetch_min_bytes: int = 1, fetch_max_bytes: int = 52_428_800,
                 fetch_max_wait_ms: int = 500, max_partition_fetch_bytes: int = 1_048_576,
                 isolation_level: str = "read_uncommitted", check_crcs: bool = True,
                 request_timeout_ms: int = 30_000, retry_backoff_ms: int = 100,
                 metadata_max_age_ms: int = 300_000,
                 key_deserializer: Callable[[bytes | None], Any] | None = None,
                 value_deserializer: Callable[[bytes | None], Any] | None = None,
                 on_assign: RebalanceListener | None = None,
                 on_revoke: RebalanceListener | None = None, group_protocol: str = "classic",
                 group_remote_assignor: str | None = None,
                 subscribed_topic_regex: str | None = None, **security: Any) -> None:
        if auto_offset_reset not in _RESETS:
            raise ValueError(f"auto_offset_reset must be earliest, latest or none; got "
                             f"{auto_offset_reset!r}")
        if group_protocol not in ("classic", "consumer"):
            raise ValueError(f"group_protocol must be classic or consumer; got "
                             f"{group_protocol!r}")
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError("isolation_level must be read_uncommitted or read_committed")
        self.client = ClusterClient(bootstrap_servers, client_id=client_id,
                                    request_timeout_ms=request_timeout_ms,
                                    retry_backoff_ms=retry_backoff_ms,
                                    metadata_max_age_ms=metadata_max_age_ms,
                                    security=ClientSecurity.create(**security))
        self.fetcher = Fetcher(self.client, fetch_min_bytes=fetch_min_bytes,
                               fetch_max_bytes=fetch_max_bytes,
                               fetch_max_wait_ms=fetch_max_wait_ms,
                               max_partition_fetch_bytes=max_partition_fetch_bytes,
                               isolation_level=1 if isolation_level == "read_committed" else 0,
                               check_crcs=check_crcs)
        self.group_id = group_id
        self.auto_offset_reset = _RESETS[auto_offset_reset]
        self.enable_auto_commit = enable_auto_commit and group_id is not None
        self.auto_commit_interval = auto_commit_interval_ms / 1000
        self.max_poll_records = max_poll_records
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self._group_settings: dict[str, Any] = {
            "assignors": tuple(partition_assignment_strategy),
            "session_timeout_ms": session_timeout_ms,
            "heartbeat_interval_ms": heartbeat_interval_ms,
            "max_poll_interval_ms": max_poll_interval_ms,
            "rebalance_timeout_ms": rebalance_timeout_ms or max_poll_interval_ms,
            "group_instance_id": group_instance_id,
        }
        self.group_protocol = group_protocol
        self._remote_assignor = group_remote_assignor
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._group: GroupMembership | None = None
        self._manual = False
        self._started = False
        self._closed = False
        self._last_commit = monotonic_s()
        self._committed_positions: dict[TopicPartition, int] = {}
        if topics or subscribed_topic_regex:
            self.subscribe(list(topics), subscribed_topic_regex=subscribed_topic_regex)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        await self.client.refresh_metadata()
        self.fetcher.start()

    async def __aenter__(self) -> AsyncConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self, commit: bool = True) -> None:
        """Commit (with auto-commit on), leave the group, stop fetching, close sockets."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._group is not None:
                if commit and self.enable_auto_commit and self._group.stable:
                    try:
                        await self.commit()
                    except KafkaClientError as exc:
                        log.warning("final commit failed: %s", exc)
                await self._group.close()
        finally:
            await self.fetcher.stop()
            await self.client.close()

    # ------------------------------------------------------------------ assignment

    def subscribe(self, topics: Sequence[str] = (), *,
                  on_assign: RebalanceListener | None = None,
                  on_revoke: RebalanceListener | None = None,
                  subscribed_topic_regex: str | None = None) -> None:
        """Join ``group_id`` consuming ``topics``, or every topic that matches
        ``subscribed_topic_regex`` (evaluated by the coordinator: ``group_protocol="consumer"``
        only); partitions are assigned by the group."""
        if self.group_id is None:
            raise KafkaClientError("subscribe() needs a group_id; use assign() without one")
        if self._manual:
            raise KafkaClientError("cannot subscribe(): partitions were assigned manually")
        if subscribed_topic_regex is not None and self.group_protocol != "consumer":
            raise ValueError("subscribed_topic_regex needs group_protocol='consumer'")
        if not topics and not subscribed_topic_regex:
            raise ValueError("subscribe() needs at least one topic")
        self._on_assign = on_assign or self._on_assign
        self._on_revoke = on_revoke or self._on_revoke
        self.client.add_topics(topics)
        group = self._group
        if group is not None:
            group.topics = sorted(set(topics))
            if isinstance(group, ConsumerGroupMember):
                group.topic_regex = subscribed_topic_regex
            group.request_rejoin()
            return
        callbacks: dict[str, Any] = {"on_assigned": self._assigned, "on_revoked": self._revoked,
                                     "on_lost": self._lost, "wake": self.fetcher.data_ready.set}
        settings = self._group_settings
        if self.group_protocol == "consumer":
            # group.consumer.heartbeat.interval.ms and the assignors are the broker's here.
            self._group = ConsumerGroupMember(
                self.client, self.group_id, topics, topic_regex=subscribed_topic_regex,
                remote_assignor=self._remote_assignor,
                session_timeout_ms=settings["session_timeout_ms"],
                rebalance_timeout_ms=settings["rebalance_timeout_ms"],
                max_poll_interval_ms=settings["max_poll_interval_ms"],
                group_instance_id=settings["group_instance_id"], **callbacks)
            return
        self._group = GroupMembership(self.client, self.group_id, topics, **callbacks,
                                      **settings)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly ``partitions`` (no group management)."""
        if self._group is not None:
            raise KafkaClientError("cannot assign(): the consumer is subscribed to a group")
        self._manual = True
        self.fetcher.assign(TopicPartition(*tp) for tp in partitions)

    def assignment(self) -> set[TopicPartition]:
        return set(self.fetcher.assignment)

    async def _assigned(self, added: list[TopicPartition]) -> None:
        assert self._group is not None
        self.fetcher.assign(self._group.assignment)
        committed = await self._group.committed(added) if added else {}
        for tp in added:
            offset = committed.get(tp)
            if offset is not None:
                self.fetcher.seek(tp, offset)
            self._committed_positions[tp] = offset if offset is not None else -1
        await self._call(self._on_assign, added)

    async def _revoked(self, revoked: list[TopicPartition]) -> None:
        if self.enable_auto_commit:
            offsets = {tp: s.position for tp, s in self.fetcher.assignment.items()
                       if tp in revoked and s.position is not None}
            try:
                await self._group_commit(offsets)
            except KafkaClientError as exc:
                log.warning("commit on revoke failed: %s", exc)
        await self._call(self._on_revoke, revoked)
        remaining = [tp for tp in self.fetcher.assignment if tp not in revoked]
        self.fetcher.assign(remaining)

    async def _lost(self, lost: list[TopicPartition]) -> None:
        await self._call(self._on_revoke, lost)
        self.fetcher.assign([])

    @staticmethod
    async def _call(listener: RebalanceListener | None, partitions: list[TopicPartition]
                    ) -> None:
        if listener is None:
            return
        result = listener(partitions)
        if asyncio.iscoroutine(result):
            await result

    # ------------------------------------------------------------------ positions

    def seek(self, tp: TopicPartition | tuple[str, int], offset: int) -> None:
        if offset < 0:
            raise ValueError("offset must be >= 0 (use seek_to_beginning/end)")
        self.fetcher.seek(TopicPartition(*tp), offset)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        for tp in partitions or tuple(self.fetcher.assignment):
            self.fetcher.request_reset(TopicPartition(*tp), EARLIEST)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        for tp in partitions or tuple(self.fetcher.assignment):
            self.fetcher.request_reset(TopicPartition(*tp), LATEST)

    async def seek_to_timestamp(self, timestamp_ms: int,
                                *partitions: TopicPartition) -> None:
        """Position each partition at its first record with timestamp >= ``timestamp_ms``
        (at the end when there is none)."""
        targets = list(partitions or self.fetcher.assignment)
        found = await self.offsets_for_times({tp: timestamp_ms for tp in targets})
        ends = await self.end_offsets([tp for tp, v in found.items() if v is None])
        for tp in targets:
            hit = found.get(tp)
            self.fetcher.seek(tp, hit.offset if hit is not None else ends[tp])

    async def position(self, tp: TopicPartition | tuple[str, int]) -> int:
        """The offset of the next record ``poll`` returns for ``tp`` (resolving a reset)."""
        tp = TopicPartition(*tp)
        state = self.fetcher._state(tp)
        if state.position is None:
            await self._reset_positions()
        assert state.position is not None
        return state.position

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return await list_offsets(self.client, {TopicPartition(*tp): ts
                                                for tp, ts in timestamps.items()})

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]
                                ) -> dict[TopicPartition, int]:
        found = await list_offsets(self.client, {TopicPartition(*tp): EARLIEST
                                                 for tp in partitions})
        return {tp: v.offset if v else 0 for tp, v in found.items()}

    async def end_offsets(self, partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        query = {TopicPartition(*tp): LATEST for tp in partitions}
        if not query:
            return {}
        found = await list_offsets(self.client, query)
        return {tp: v.offset if v else 0 for tp, v in found.items()}

    def pause(self, *partitions: TopicPartition) -> None:
        self.fetcher.pause(TopicPartition(*tp) for tp in partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.fetcher.resume(TopicPartition(*tp) for tp in partitions)

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, s in self.fetcher.assignment.items() if s.paused}

    async def partitions_for_topic(self, topic: str) -> list[int]:
        metadata = await self.client.refresh_metadata([topic])
        return metadata.partitions_for(topic)

    async def topics(self) -> list[str]:
        self.client.track_all_topics()
        return sorted((await self.client.refresh_metadata()).topics)

    async def _reset_positions(self) -> None:
        pending = {tp: s for tp, s in self.fetcher.assignment.items() if s.position is None}
        if not pending:
            self.fetcher.needs_reset.clear()
            return
        query: dict[TopicPartition, int] = {}
        for tp, state in pending.items():
            if state.reset_to is not None:
                query[tp] = state.reset_to
            elif self.auto_offset_reset is None:
                raise NoOffsetForPartition(
                    f"{tp.topic}-{tp.partition} has no committed offset and "
                    f"auto_offset_reset is none")
            else:
                query[tp] = self.auto_offset_reset
        found = await list_offsets(self.client, query)
        missing = [tp for tp, v in found.items() if v is None]
        ends = await self.end_offsets(missing) if missing else {}
        for tp, value in found.items():
            current = self.fetcher.assignment.get(tp)
            if current is not None and current.position is None:
                self.fetcher.seek(tp, value.offset if value is not None else ends[tp])
        self.fetcher.needs_reset.clear()

    # ------------------------------------------------------------------ commits

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, generation and member id, for a transactional producer's
        ``send_offsets_to_transaction`` (a member rebalanced out cannot commit)."""
        if self.group_id is None:
            raise KafkaClientError("group_metadata needs a consumer with group_id")
        group = self._group
        if group is None:
            return ConsumerGroupMetadata(self.group_id)
        return ConsumerGroupMetadata(self.group_id, group.generation, group.member_id,
                                     group.group_instance_id)

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (default: the current positions) to the group."""
        if self._group is None:
            raise KafkaClientError("commit() needs a group_id and subscribe()")
        if offsets is None:
            offsets = {tp: s.position for tp, s in self.fetcher.assignment.items()
                       if s.position is not None}
        await self._group_commit(dict(offsets))

    async def _group_commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        assert self._group is not None
        changed = {tp: o for tp, o in offsets.items() if self._committed_positions.get(tp) != o}
        if not changed:
            return
        await self._group.commit(changed)
        self._committed_positions.update(changed)

    async def committed(self, tp: TopicPartition | tuple[str, int]) -> int | None:
        if self._group is None:
            raise KafkaClientError("committed() needs a group_id")
        return (await self._group.committed([TopicPartition(*tp)])).get(TopicPartition(*tp))

    async def _maybe_auto_commit(self) -> None:
        if not self.enable_auto_commit or self._group is None or not self._group.stable:
            return
        now = monotonic_s()
        if now - self._last_commit < self.auto_commit_interval:
            return
        self._last_commit = now
        try:
            await self.commit()
        except KafkaClientError as exc:
            log.warning("auto-commit failed: %s", exc)

    # ------------------------------------------------------------------ polling

    async def poll(self, timeout_ms: float = 1000, max_records: int | None = None
                   ) -> list[ConsumerRecord]:
        """Records in fetch order (per partition in offset order), or [] after ``timeout``."""
        if self._closed:
            raise KafkaClientError("consumer is closed")
        if not self._started:
            await self.start()
        limit = max_records or self.max_poll_records
        deadline = monotonic_s() + timeout_ms / 1000
        fetcher = self.fetcher
        while True:
            if self._group is not None:
                remaining = max(deadline - monotonic_s(), 0)
                if not await self._group.ensure_active(remaining):
                    if monotonic_s() >= deadline:
                        return []
                    continue
                await self._maybe_auto_commit()
            if fetcher.errors:
                raise fetcher.errors.popleft()
            records = fetcher.drain(limit)
            if records:
                if self.key_deserializer or self.value_deserializer:
                    self._deserialize(records)
                return records
            if fetcher.needs_reset.is_set() or any(
                    s.position is None for s in fetcher.assignment.values()):
                await self._reset_positions()
                fetcher.wake()
            remaining = deadline - monotonic_s()
            if remaining <= 0:
                return []
            if not fetcher.assignment and self._group is None:
                await asyncio.sleep(remaining)  # nothing assigned: just honour the timeout
                return []
            if not await wait_event(fetcher.data_ready, remaining):
                return []
            if not fetcher.has_buffered:
                fetcher.data_ready.clear()

    def _deserialize(self, records: list[ConsumerRecord]) -> None:
        kd, vd = self.key_deserializer, self.value_deserializer
        for r in records:
            if kd is not None:
                r.key = kd(r.key)
            if vd is not None:
                r.value = vd(r.value)

    async def getone(self) -> ConsumerRecord:
        while True:
            records = await self.poll(timeout_ms=60_000, max_records=1)
            if records:
                return records[0]

    async def stream(self, timeout_ms: float = 1000) -> AsyncIterator[ConsumerRecord]:
        """The paper's stream: yields records forever, blocking for new ones."""
        while True:
            for record in await self.poll(timeout_ms):
                yield record

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self.stream()
