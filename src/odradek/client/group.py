"""Group membership for the consumer (Kafka's classic protocol): join, sync, heartbeat, leave,
and the group's committed offsets.

The rebalance runs as a task the consumer's ``poll`` waits on, so a long join (other members
joining) never blocks the event loop or fetches of partitions still owned. Eager assignors
(range, roundrobin) revoke everything before rejoining; a cooperative one (cooperative-sticky)
keeps consuming through the rebalance, revokes only what moved away and then rejoins so the new
owner can take it (KIP-429).

Error handling follows the Java client: MEMBER_ID_REQUIRED → rejoin with the id the broker
gave; UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / FENCED_INSTANCE_ID → forget the member id and
rejoin; REBALANCE_IN_PROGRESS → rejoin; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE → find the
coordinator again. A commit refused because the group moved on raises :class:`CommitFailed`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey

from .assignors import (
    ASSIGNORS,
    COOPERATIVE,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    validate_assignment,
)
from .cluster_client import ClusterClient
from .errors import BrokerResponseError, KafkaClientError
from .metadata import TopicPartition

__all__ = ["CommitFailed", "GroupMembership"]

log = logging.getLogger(__name__)

_RESET_MEMBER = {
    ErrorCode.unknown_member_id, ErrorCode.illegal_generation, ErrorCode.fenced_instance_id,
}
_REDISCOVER = {ErrorCode.not_coordinator, ErrorCode.coordinator_not_available}

PartitionsCallback = Callable[[list[TopicPartition]], Awaitable[None]]


class CommitFailed(KafkaClientError):
    """The group rebalanced: this member's generation may no longer commit."""


class GroupMembership:
    # OffsetCommit codes that mean this member may no longer commit: it must rejoin.
    commit_refused: frozenset[int] = frozenset({*_RESET_MEMBER, ErrorCode.rebalance_in_progress})

    def __init__(self, client: ClusterClient, group_id: str, topics: Sequence[str], *,
                 assignors: Sequence[str] = ("range", "cooperative-sticky"),
                 session_timeout_ms: int = 45_000, rebalance_timeout_ms: int = 300_000,
                 heartbeat_interval_ms: int = 3_000, max_poll_interval_ms: int = 300_000,
                 group_instance_id: str | None = None,
                 on_assigned: PartitionsCallback, on_revoked: PartitionsCallback,
                 on_lost: PartitionsCallback, wake: Callable[[], None]) -> None:
        unknown = [a for a in assignors if a not in ASSIGNORS]
        if unknown or not assignors:
            raise ValueError(f"unknown partition assignment strategy {unknown}; choose from "
                             f"{', '.join(ASSIGNORS)}")
        self.client = client
        self.group_id = group_id
        self.topics = sorted(set(topics))
        self.assignors = list(assignors)
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.max_poll_interval = max_poll_interval_ms / 1000
        self.group_instance_id = group_instance_id
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.assignment: list[TopicPartition] = []
        self.needs_rejoin = True
        self.coordinator: int | None = None
        self.last_poll = monotonic_s()
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self._on_lost = on_lost
        self._wake = wake
        self._rebalance: asyncio.Task[None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._closed = False

    # ------------------------------------------------------------------ driving

    @property
    def stable(self) -> bool:
        return not self.needs_rejoin and self.generation >= 0

    async def ensure_active(self, timeout: float) -> bool:
        """Run (or keep waiting for) a rebalance; True once the member is stable."""
        self.last_poll = monotonic_s()
        if self._heartbeat is None:
            self._heartbeat = asyncio.get_running_loop().create_task(self._heartbeat_loop())
        if not self.needs_rejoin:
            return True
        if self._rebalance is None or self._rebalance.done():
            if self._rebalance is not None and self._rebalance.exception() is not None:
                exc = self._rebalance.exception()
                self._rebalance = None
                assert exc is not None
                if not isinstance(exc, KafkaClientError) or not exc.retriable:
                    raise exc
            self._rebalance = asyncio.get_running_loop().create_task(self._join_and_sync())
        try:
            await asyncio.wait_for(asyncio.shield(self._rebalance), timeout)
        except TimeoutError:
            return False
        except KafkaClientError as exc:
            if exc.retriable:
                log.warning("rebalance of %s failed, retrying: %s", self.group_id, exc)
                return False
            raise
        return not self.needs_rejoin

    def request_rejoin(self) -> None:
        self.needs_rejoin = True
        self._wake()

    async def _coordinator(self) -> int:
        if self.coordinator is None:
            self.coordinator = await self.client.find_coordinator(self.group_id)
        return self.coordinator

    async def _send(self, api_key: int, body: Mapping[str, Any]) -> Any:
        node = await self._coordinator()
        try:
            return await self.client.send(node, api_key, body)
        except KafkaClientError:
            self.coordinator = None
            raise

    def _handle_code(self, code: int) -> None:
        if code in _REDISCOVER:
            self.coordinator = None
        if code in _RESET_MEMBER:
            self.member_id = ""
            self.generation = -1

    # ------------------------------------------------------------------ join / sync

    async def _join_and_sync(self) -> None:
        cooperative = self.protocol in COOPERATIVE
        if not cooperative and self.assignment:
            revoked, self.assignment = self.assignment, []
            await self._on_revoked(revoked)
        backoff = self.client.retry_backoff
        while not self._closed:
            self.needs_rejoin = True
            subscription = Subscription(self.topics, None,
                                        list(self.assignment), self.generation)
            metadata = encode_subscription(subscription, version=1)
            body = {
                "group_id": self.group_id, "session_timeout": self.session_timeout_ms,
                "rebalance_timeout": self.rebalance_timeout_ms, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": "consumer",
                "protocols": [{"name": name, "metadata": metadata} for name in self.assignors],
                "reason": None,
            }
            try:
                join = await asyncio.wait_for(
                    self._send(ApiKey.JOIN_GROUP, body),
                    self.rebalance_timeout_ms / 1000 + 5)
            except (TimeoutError, KafkaClientError) as exc:
                log.debug("JoinGroup failed: %s", exc)
                self.coordinator = None
                await asyncio.sleep(backoff)
                continue
            code = join.error_code
            if code == ErrorCode.member_id_required:
                self.member_id = join.member_id
                continue
            if code:
                self._handle_code(code)
                error = BrokerResponseError(code, f"JoinGroup {self.group_id!r}")
                if not (error.retriable or code in _RESET_MEMBER or code in _REDISCOVER
                        or code == ErrorCode.rebalance_in_progress):
                    raise error
                await asyncio.sleep(backoff)
                continue
            self.member_id = join.member_id
            generation = int(join.generation_id)
            protocol = join.protocol_name
            assignments: list[dict[str, Any]] = []
            if join.leader == join.member_id:
                assignments = await self._lead(protocol, join.members)
            try:
                sync = await self._send(ApiKey.SYNC_GROUP, {
                    "group_id": self.group_id, "generation_id": generation,
                    "member_id": self.member_id, "group_instance_id": self.group_instance_id,
                    "protocol_type": "consumer", "protocol_name": protocol,
                    "assignments": assignments})
            except KafkaClientError as exc:
                log.debug("SyncGroup failed: %s", exc)
                await asyncio.sleep(backoff)
                continue
            code = sync.error_code
            if code:
                self._handle_code(code)
                if code in (ErrorCode.rebalance_in_progress, *_RESET_MEMBER, *_REDISCOVER):
                    continue
                raise BrokerResponseError(code, f"SyncGroup {self.group_id!r}")
            self.generation = generation
            self.protocol = protocol
            new = sorted(decode_assignment(sync.assignment))
            old = set(self.assignment)
            revoked = sorted(old - set(new))
            added = sorted(set(new) - old)
            self.needs_rejoin = False
            if revoked:
                # Only a cooperative member still holds partitions here; give them up, then
                # rejoin so their new owners can receive them.
                self.assignment = [tp for tp in self.assignment if tp not in revoked]
                await self._on_revoked(revoked)
                self.needs_rejoin = True
            self.assignment = new
            log.info("group %s generation %d (%s): assigned %s", self.group_id, generation,
                     protocol, new)
            await self._on_assigned(added)
            if not self.needs_rejoin:
                return

    async def _lead(self, protocol: str, members: Iterable[Any]) -> list[dict[str, Any]]:
        subscriptions = {m.member_id: decode_subscription(m.metadata) for m in members}
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        metadata = await self.client.refresh_metadata(topics)
        counts = {t: len(metadata.partitions_for(t)) for t in topics}
        assignment = ASSIGNORS[protocol](subscriptions, counts)
        validate_assignment(assignment)
        log.debug("leader of %s assigns %s", self.group_id, assignment)
        return [{"member_id": m, "assignment": encode_assignment(parts)}
                for m, parts in assignment.items()]

    # ------------------------------------------------------------------ heartbeat

    async def _heartbeat_loop(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.heartbeat_interval)
            if self.generation < 0 or (self._rebalance and not self._rebalance.done()):
                continue
            if monotonic_s() - self.last_poll > self.max_poll_interval:
                log.warning("poll() not called for max.poll.interval.ms: leaving group %s",
                            self.group_id)
                await self.leave()
                continue
            try:
                response = await self._send(ApiKey.HEARTBEAT, {
                    "group_id": self.group_id, "generation_id": self.generation,
                    "member_id": self.member_id, "group_instance_id": self.group_instance_id})
            except KafkaClientError as exc:
                log.debug("heartbeat failed: %s", exc)
                continue
            code = response.error_code
            if code == ErrorCode.none:
                continue
            self._handle_code(code)
            if code in _RESET_MEMBER:
                lost, self.assignment = self.assignment, []
                await self._on_lost(lost)
            if code in (ErrorCode.rebalance_in_progress, *_RESET_MEMBER):
                self.request_rejoin()

    # ------------------------------------------------------------------ offsets

    async def commit(self, offsets: Mapping[TopicPartition, int],
                     metadata: str = "") -> None:
        if not offsets:
            return
        grouped: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in offsets.items():
            grouped.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": offset,
                "committed_leader_epoch": -1, "committed_metadata": metadata,
                "commit_timestamp": -1})
        for attempt in range(5):
            try:
                response = await self._send(ApiKey.OFFSET_COMMIT, {
                    "group_id": self.group_id,
                    "generation_id_or_member_epoch": self.generation,
                    "member_id": self.member_id, "group_instance_id": self.group_instance_id,
                    "retention_time_ms": -1,
                    "topics": [{"name": t, "partitions": p} for t, p in grouped.items()]})
            except KafkaClientError:
                await asyncio.sleep(self.client.retry_backoff * (attempt + 1))
                continue
            codes = {p.error_code for t in response.topics for p in t.partitions} - {0}
            if not codes:
                return
            code = min(codes)
            self._handle_code(code)
            if code in self.commit_refused:
                self.request_rejoin()
                raise CommitFailed(f"commit of group {self.group_id!r} refused: "
                                   f"{BrokerResponseError(code)}; the group rebalanced")
            error = BrokerResponseError(code, f"OffsetCommit {self.group_id!r}")
            if not error.retriable and code not in _REDISCOVER:
                raise error
            await asyncio.sleep(self.client.retry_backoff * (attempt + 1))
        raise KafkaClientError(f"commit for group {self.group_id!r} failed after retries")

    async def committed(self, partitions: Iterable[TopicPartition]
                        ) -> dict[TopicPartition, int | None]:
        grouped: dict[str, list[int]] = {}
        for tp in partitions:
            grouped.setdefault(tp.topic, []).append(tp.partition)
        if not grouped:
            return {}
        for attempt in range(10):
            try:
                response = await self._send(ApiKey.OFFSET_FETCH, {
                    "group_id": self.group_id, "require_stable": False,
                    "topics": [{"name": t, "partition_indexes": p} for t, p in grouped.items()]})
            except KafkaClientError:
                await asyncio.sleep(self.client.retry_backoff * (attempt + 1))
                continue
            code = int(getattr(response, "error_code", 0))
            codes = {code} | {p.error_code for t in response.topics for p in t.partitions}
            codes.discard(0)
            if codes:
                self._handle_code(min(codes))
                error = BrokerResponseError(min(codes), f"OffsetFetch {self.group_id!r}")
                if not error.retriable and min(codes) not in _REDISCOVER:
                    raise error
                await asyncio.sleep(self.client.retry_backoff * (attempt + 1))
                continue
            return {TopicPartition(t.name, int(p.partition_index)):
                    int(p.committed_offset) if int(p.committed_offset) >= 0 else None
                    for t in response.topics for p in t.partitions}
        raise KafkaClientError(f"OffsetFetch for group {self.group_id!r} failed after retries")

    # ------------------------------------------------------------------ leaving

    async def leave(self) -> None:
        if self.member_id and self.generation >= 0:
            try:
                await self._send(ApiKey.LEAVE_GROUP, {
                    "group_id": self.group_id, "member_id": self.member_id,
                    "members": [{"member_id": self.member_id,
                                 "group_instance_id": self.group_instance_id,
                                 "reason": "consumer closed"}]})
            except KafkaClientError as exc:
                log.debug("LeaveGroup failed: %s", exc)
        self.member_id = ""
        self.generation = -1
        self.needs_rejoin = True

    async def close(self) -> None:
        self._closed = True
        for task in (self._heartbeat, self._rebalance):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await self.leave()
