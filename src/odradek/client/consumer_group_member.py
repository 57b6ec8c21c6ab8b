"""Group membership with the consumer group protocol (KIP-848, ``group_protocol="consumer"``).

There is no join, sync or group leader: the member heartbeats (ConsumerGroupHeartbeat) at the
interval the coordinator returns, and every answer may carry its new assignment, computed on
the broker. The member reconciles towards it one step at a time, as Kafka's
``ConsumerMembershipManager`` does:

1. partitions no longer assigned are **revoked first** — ``on_revoked`` commits their offsets
   (with auto-commit) and calls the application's listener — and the next heartbeat, sent at
   once, reports what the member still owns: that is the acknowledgement the coordinator
   waits for before it hands them to another member;
2. then the partitions newly assigned are taken (``on_assigned``: committed offsets, then
   the listener). The coordinator only sends partitions nobody else owns any more.

Every heartbeat carries the full subscription and the owned partitions (the protocol allows
sending only what changed; sending all keeps the member stateless about what the broker saw).

Errors: FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID → the partitions are lost (``on_lost``, no
commit: someone else may own them already) and the member rejoins with epoch 0 and the same
member id; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS and
connection failures → find the coordinator again and retry, keeping the epoch (a coordinator
failover must not rebalance); no successful heartbeat for ``session_timeout_ms`` → the
partitions are lost as well. Errors the member cannot fix (UNSUPPORTED_ASSIGNOR,
INVALID_REGULAR_EXPRESSION, GROUP_MAX_SIZE_REACHED, an authorization failure, ...) are raised
from the consumer's next ``poll``. Closing revokes what the member owns and leaves with epoch
-1, or -2 for a static member (``group_instance_id``), whose partitions the coordinator then
keeps for it until its session times out.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import millis

from .aio import wait_event
from .cluster_client import ClusterClient
from .errors import BrokerResponseError, KafkaClientError
from .group import GroupMembership, PartitionsCallback
from .metadata import TopicPartition

__all__ = ["ConsumerGroupMember"]

log = logging.getLogger(__name__)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
_FENCED = frozenset({ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id})
_REDISCOVER = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
                         ErrorCode.coordinator_load_in_progress})


class ConsumerGroupMember(GroupMembership):
    """The same surface as the classic :class:`GroupMembership` (the consumer drives either);
    commits and offset fetches are shared, with the member epoch in place of the generation."""

    commit_refused = frozenset({*_FENCED, ErrorCode.stale_member_epoch})

    def __init__(self, client: ClusterClient, group_id: str, topics: Sequence[str], *,
                 topic_regex: str | None = None, remote_assignor: str | None = None,
                 session_timeout_ms: int = 45_000, rebalance_timeout_ms: int = 300_000,
                 max_poll_interval_ms: int = 300_000, group_instance_id: str | None = None,
                 on_assigned: PartitionsCallback, on_revoked: PartitionsCallback,
                 on_lost: PartitionsCallback, wake: Callable[[], None]) -> None:
        super().__init__(client, group_id, topics, session_timeout_ms=session_timeout_ms,
                         rebalance_timeout_ms=rebalance_timeout_ms,
                         max_poll_interval_ms=max_poll_interval_ms,
                         group_instance_id=group_instance_id, on_assigned=on_assigned,
                         on_revoked=on_revoked, on_lost=on_lost, wake=wake)
        self.topic_regex = topic_regex
        self.remote_assignor = remote_assignor
        self.member_id = str(uuid.uuid4())  # ours for the consumer's lifetime (v1)
        self.generation = JOIN_EPOCH  # the member epoch: what OffsetCommit carries
        self._fenced = False
        self._fatal: BaseException | None = None
        self._joined = asyncio.Event()
        self._heartbeat_now = asyncio.Event()
        self._last_success = monotonic_s()

    # ------------------------------------------------------------------ driving

    async def ensure_active(self, timeout: float) -> bool:
        """Start the heartbeat loop (and rejoin after a poll timeout); True once joined.
        Nothing here waits for a rebalance: the loop reconciles in the background."""
        self.last_poll = monotonic_s()
        if self._fatal is not None:
            fatal, self._fatal = self._fatal, None
            self._heartbeat = None
            raise fatal
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.get_running_loop().create_task(self._heartbeat_loop())
        if self.needs_rejoin:
            await wait_event(self._joined, timeout)
        return not self.needs_rejoin

    def request_rejoin(self) -> None:
        """The subscription changed: tell the coordinator now."""
        self._heartbeat_now.set()

    def _handle_code(self, code: int) -> None:
        if code in _REDISCOVER:
            self.coordinator = None
        if code in _FENCED:
            self._fenced = True
            self._heartbeat_now.set()

    async def _heartbeat_loop(self) -> None:
        interval = self.heartbeat_interval
        while not self._closed:
            if monotonic_s() - self.last_poll > self.max_poll_interval:
                log.warning("poll() not called for max.poll.interval.ms: leaving group %s",
                            self.group_id)
                await self._lose("the poll interval expired")
                await self._send_leave(LEAVE_EPOCH)
                return  # the next poll() starts a new loop, which rejoins
            if self._fenced:
                await self._lose("the member was fenced")
            try:
                interval = await self._heartbeat_once()
            except KafkaClientError as exc:
                if not exc.retriable:  # e.g. a broker without KIP-848, a refused assignor
                    self._fatal = exc
                    self._joined.set()
                    return
                log.debug("ConsumerGroupHeartbeat to %s failed: %s", self.group_id, exc)
                self.coordinator = None
                interval = self.client.retry_backoff
                if self.assignment and monotonic_s() - self._last_success > (
                        self.session_timeout_ms / 1000):
                    await self._lose("no heartbeat succeeded within session.timeout.ms")
            if await wait_event(self._heartbeat_now, interval):
                self._heartbeat_now.clear()

    async def _lose(self, why: str) -> None:
        """Give up every partition without committing, and rejoin with epoch 0."""
        log.info("group %s: %s; rejoining", self.group_id, why)
        self._fenced = False
        self.generation = JOIN_EPOCH
        self.needs_rejoin = True
        self._joined.clear()
        lost, self.assignment = self.assignment, []
        if lost:
            await self._on_lost(lost)

    async def _heartbeat_once(self) -> float:
        """One heartbeat and the reconciliation its answer asks for; the seconds until the
        next one (none when a revocation must be acknowledged)."""
        epoch = self.generation
        response = await self._send(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                    await self._heartbeat_body(epoch))
        code = response.error_code
        if code:
            self._handle_code(code)
            if code in _FENCED or code in _REDISCOVER:
                log.info("ConsumerGroupHeartbeat to %s: %s", self.group_id, ErrorCode(code).name)
                return self.client.retry_backoff
            raise BrokerResponseError(code, f"ConsumerGroupHeartbeat {self.group_id!r}",
                                      response.error_message)
        self._last_success = monotonic_s()
        self.generation = int(response.member_epoch)
        interval = millis(response.heartbeat_interval) / 1000
        if response.assignment is not None and await self._reconcile(response.assignment):
            interval = 0  # acknowledge the revocation at once
        self.needs_rejoin = False
        self._joined.set()
        return interval

    async def _heartbeat_body(self, epoch: int) -> dict[str, Any]:
        metadata = await self.client.maybe_refresh()
        by_topic: dict[str, list[int]] = {}
        for tp in self.assignment:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        owned = []
        for topic, partitions in sorted(by_topic.items()):
            info = metadata.topics.get(topic)
            if info is not None and info.topic_id is not None:
                owned.append({"topic_id": uuid.UUID(info.topic_id), "partitions": partitions})
        return {
            "group_id": self.group_id, "member_id": self.member_id, "member_epoch": epoch,
            "instance_id": self.group_instance_id, "rack_id": None,
            "rebalance_timeout": self.rebalance_timeout_ms,
            "subscribed_topic_names": None if self.topic_regex else self.topics,
            "subscribed_topic_regex": self.topic_regex,
            "server_assignor": self.remote_assignor,
            "topic_partitions": owned,
        }

    async def _reconcile(self, assignment: Any) -> bool:
        """Move to ``assignment`` (revoke, then assign); True if something was revoked."""
        target = await self._resolve(assignment.topic_partitions)
        owned = set(self.assignment)
        revoked = sorted(owned - target)
        added = sorted(target - owned)
        if revoked:
            self.assignment = [tp for tp in self.assignment if tp not in target]
            await self._on_revoked(revoked)
        if added:
            self.client.add_topics({tp.topic for tp in added})
            self.assignment = sorted(target)
            log.info("group %s epoch %d: assigned %s", self.group_id, self.generation,
                     self.assignment)
            await self._on_assigned(added)
        return bool(revoked)

    async def _resolve(self, topic_partitions: Any) -> set[TopicPartition]:
        """Topic ids to names; an id the metadata does not know yet (a topic matched by the
        regular expression) triggers one refresh of every topic, and is otherwise left for
        the next answer (the coordinator repeats an assignment the member does not own)."""
        wanted = {str(t.topic_id): [int(p) for p in t.partitions] for t in topic_partitions}
        metadata = await self.client.maybe_refresh()
        names = {info.topic_id: name for name, info in metadata.topics.items()}
        if set(wanted) - set(names):
            self.client.track_all_topics()
            metadata = await self.client.refresh_metadata()
            names = {info.topic_id: name for name, info in metadata.topics.items()}
        return {TopicPartition(names[topic_id], p)
                for topic_id, partitions in wanted.items() if topic_id in names
                for p in partitions}

    # ------------------------------------------------------------------ leaving

    async def _send_leave(self, epoch: int) -> None:
        try:
            body = await self._heartbeat_body(epoch)
            await self._send(ApiKey.CONSUMER_GROUP_HEARTBEAT, body)
        except KafkaClientError as exc:
            log.debug("leaving group %s failed: %s", self.group_id, exc)
        self.generation = JOIN_EPOCH
        self.needs_rejoin = True
        self._joined.clear()

    async def leave(self) -> None:
        """Revoke what the member owns (committing it), then leave the group."""
        if self.needs_rejoin and not self.assignment:
            return
        revoked, self.assignment = self.assignment, []
        if revoked:
            await self._on_revoked(revoked)
        static = self.group_instance_id is not None
        await self._send_leave(STATIC_LEAVE_EPOCH if static else LEAVE_EPOCH)

    async def close(self) -> None:
        self._closed = True
        self._heartbeat_now.set()
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
        await self.leave()
