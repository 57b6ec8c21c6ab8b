"""Fetching for the consumer: per-partition positions, one pipelined Fetch per broker.

Each broker leading an assigned partition has at most one Fetch in flight. When its response
arrives the raw record bytes are parked per partition (decoded only when the application polls)
and the next Fetch for that broker's *other* partitions goes out at once, so the network works
while the application processes; a partition is fetched again as soon as its parked data has
been handed out. That keeps memory bounded (``max.partition.fetch.bytes`` per partition) and
never lets a slow application stall the fetch of partitions it has already drained.

A response for a partition whose position moved meanwhile (seek, reset, reassignment) is
dropped, so a seek is exact. Positions are plain offsets; ``None`` means "needs a reset"
(``auto.offset.reset``), which the consumer resolves with ListOffsets.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey

from .aio import wait_event
from .batch_codec import ConsumerRecord, decode_fetched
from .cluster_client import STALE_METADATA_CODES, ClusterClient
from .errors import BrokerResponseError, KafkaClientError
from .metadata import TopicPartition
from .read_committed import aborted_batch_offsets

__all__ = ["AssignedPartition", "Fetcher"]

log = logging.getLogger(__name__)


@dataclass
class AssignedPartition:
    """What the consumer tracks for one partition assigned to it: the next offset to fetch,
    whether the application paused it, the watermarks of the last answer, a pending reset."""

    position: int | None = None
    paused: bool = False
    high_watermark: int = -1
    log_start_offset: int = -1
    reset_to: int | None = None  # pending timestamp to reset to (-2 earliest, -1 latest)


@dataclass
class _CompletedFetch:
    tp: TopicPartition
    fetch_offset: int
    raw: bytes | None
    aborted: tuple[tuple[int, int], ...] = ()  # (producer id, first offset), read_committed
    records: list[ConsumerRecord] = field(default_factory=list)
    index: int = 0
    next_offset: int = -1


class Fetcher:
    def __init__(self, client: ClusterClient, *, fetch_min_bytes: int = 1,
                 fetch_max_bytes: int = 52_428_800, fetch_max_wait_ms: int = 500,
                 max_partition_fetch_bytes: int = 1_048_576, isolation_level: int = 0,
                 check_crcs: bool = True) -> None:
        self.client = client
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.isolation_level = isolation_level
        self.check_crcs = check_crcs
        self.assignment: dict[TopicPartition, AssignedPartition] = {}
        self._completed: collections.deque[_CompletedFetch] = collections.deque()
        self._buffered: set[TopicPartition] = set()
        self._in_flight: dict[int, asyncio.Task[None]] = {}
        self._wakeup = asyncio.Event()
        self.data_ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.errors: collections.deque[BaseException] = collections.deque()
        self.needs_reset = asyncio.Event()
        self._stopped = False

    # ------------------------------------------------------------------ assignment

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = set(partitions)
        for tp in list(self.assignment):
            if tp not in wanted:
                del self.assignment[tp]
        for tp in wanted:
            self.assignment.setdefault(tp, AssignedPartition())
        self._completed = collections.deque(c for c in self._completed if c.tp in wanted)
        self._buffered = {c.tp for c in self._completed}
        self.client.add_topics({tp.topic for tp in wanted})
        self.wake()

    def seek(self, tp: TopicPartition, offset: int) -> None:
        state = self._state(tp)
        state.position = offset
        state.reset_to = None
        self._drop_buffered(tp)
        self.wake()

    def request_reset(self, tp: TopicPartition, timestamp: int) -> None:
        state = self._state(tp)
        state.position = None
        state.reset_to = timestamp
        self._drop_buffered(tp)
        self.needs_reset.set()
        self.wake()

    def _drop_buffered(self, tp: TopicPartition) -> None:
        if tp in self._buffered:
            self._completed = collections.deque(c for c in self._completed if c.tp != tp)
            self._buffered.discard(tp)

    def _state(self, tp: TopicPartition) -> AssignedPartition:
        try:
            return self.assignment[tp]
        except KeyError:
            raise KafkaClientError(f"{tp.topic}-{tp.partition} is not assigned to this "
                                   f"consumer") from None

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._state(tp).paused = True

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._state(tp).paused = False
        self.wake()

    def wake(self) -> None:
        self._wakeup.set()

    # ------------------------------------------------------------------ handing out records

    def drain(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` buffered records in fetch order, advancing positions.

        Parked data of paused partitions stays parked; data of partitions no longer assigned
        is dropped. (Seeks and resets drop a partition's parked data when they happen, so the
        data found here always starts at the partition's position.)
        """
        out: list[ConsumerRecord] = []
        completed = self._completed
        i = 0
        while i < len(completed) and len(out) < max_records:
            fetch = completed[i]
            state = self.assignment.get(fetch.tp)
            if state is None:
                self._remove(i)
                continue
            if state.paused:
                i += 1
                continue
            if fetch.raw is not None:
                raw, fetch.raw = fetch.raw, None
                try:
                    skip = aborted_batch_offsets(raw, fetch.aborted) if fetch.aborted else (
                        frozenset())
                    fetch.next_offset = decode_fetched(raw, fetch.tp.topic, fetch.tp.partition,
                                                       fetch.fetch_offset, fetch.records,
                                                       check_crcs=self.check_crcs, skip=skip)
                except Exception as exc:
                    self._remove(i)
                    if isinstance(exc, KafkaClientError):
                        raise
                    raise KafkaClientError(f"cannot decode {fetch.tp}: {exc}") from exc
            take = fetch.records[fetch.index:fetch.index + max_records - len(out)]
            out += take
            fetch.index += len(take)
            if take:
                state.position = take[-1].offset + 1
            if fetch.index >= len(fetch.records):
                if state.position is None or fetch.next_offset > state.position:
                    state.position = fetch.next_offset
                self._remove(i)
        if not any(not self.assignment.get(c.tp, AssignedPartition(paused=True)).paused
                   for c in completed):
            self.data_ready.clear()
        return out

    def _remove(self, index: int) -> None:
        fetch = self._completed[index]
        del self._completed[index]
        if not any(c.tp == fetch.tp for c in self._completed):
            self._buffered.discard(fetch.tp)
        self.wake()

    @property
    def has_buffered(self) -> bool:
        return bool(self._completed)

    # ------------------------------------------------------------------ the fetch loop

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(),
                                                                 name="odradek-fetcher")

    async def stop(self) -> None:
        self._stopped = True
        self.wake()
        tasks = [t for t in (self._task, *self._in_flight.values()) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = None
        self._in_flight.clear()

    async def _run(self) -> None:
        backoff = self.client.retry_backoff
        while not self._stopped:
            self._wakeup.clear()
            try:
                delay = await self._send_fetches()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("fetcher: %s", exc)
                delay = backoff
            await wait_event(self._wakeup, delay)

    async def _send_fetches(self) -> float:
        if self.client.needs_refresh:
            await self.client.refresh_metadata()
        metadata = self.client.metadata
        by_node: dict[int, list[tuple[TopicPartition, int]]] = {}
        missing_leader = False
        for tp, state in self.assignment.items():
            if state.position is None or state.paused or tp in self._buffered:
                continue
            leader = metadata.leader_for(tp)
            if leader < 0:
                missing_leader = True
                continue
            by_node.setdefault(leader, []).append((tp, state.position))
        if missing_leader:
            self.client.invalidate()
        for node, parts in by_node.items():
            if node in self._in_flight:
                continue
            task = asyncio.get_running_loop().create_task(self._fetch(node, parts))
            self._in_flight[node] = task
        return self.client.retry_backoff if missing_leader else 5.0

    async def _fetch(self, node: int, parts: list[tuple[TopicPartition, int]]) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in parts:
            topics.setdefault(tp.topic, []).append({
                "partition": tp.partition, "current_leader_epoch": -1, "fetch_offset": offset,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": self.max_partition_fetch_bytes})
        body = {
            "cluster_id": None, "replica_id": -1, "max_wait": self.fetch_max_wait_ms,
            "min_bytes": self.fetch_min_bytes, "max_bytes": self.fetch_max_bytes,
            "isolation_level": self.isolation_level, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            "forgotten_topics_data": [], "rack_id": "",
        }
        offsets = dict(parts)
        try:
            try:
                conn = await self.client.connection(node)
                response = await asyncio.wait_for(
                    conn.send(ApiKey.FETCH, body),
                    self.client.request_timeout + self.fetch_max_wait_ms / 1000)
            except (TimeoutError, KafkaClientError, OSError) as exc:
                log.debug("fetch from %d failed: %s", node, exc)
                self.client.drop_connection(node)
                await asyncio.sleep(self.client.retry_backoff)
                return
            if int(getattr(response, "error_code", 0)):
                log.warning("fetch from %d: %s", node,
                            BrokerResponseError(response.error_code))
                self.client.invalidate()
                await asyncio.sleep(self.client.retry_backoff)
                return
            got_data = False
            for topic in response.responses:
                for part in topic.partitions:
                    tp = TopicPartition(topic.topic, int(part.partition_index))
                    state = self.assignment.get(tp)
                    fetched_at = offsets.get(tp)
                    if state is None or fetched_at is None or state.position != fetched_at:
                        continue  # reassigned or seeked while the fetch was in flight
                    code = part.error_code
                    if code == ErrorCode.none:
                        state.high_watermark = int(part.high_watermark)
                        state.log_start_offset = int(getattr(part, "log_start_offset", -1))
                        if part.records:
                            self._completed.append(_CompletedFetch(
                                tp, fetched_at, bytes(part.records), _aborted_of(part)))
                            self._buffered.add(tp)
                            got_data = True
                    elif code == ErrorCode.offset_out_of_range:
                        self.errors.append(BrokerResponseError(
                            code, f"{tp.topic}-{tp.partition} offset {fetched_at}"))
                        state.position = None
                        self.needs_reset.set()
                    elif code in STALE_METADATA_CODES or BrokerResponseError(code).retriable:
                        self.client.invalidate()
                    else:
                        self.errors.append(BrokerResponseError(
                            code, f"fetch {tp.topic}-{tp.partition}"))
            if got_data or self.errors or self.needs_reset.is_set():
                self.data_ready.set()
        finally:
            self._in_flight.pop(node, None)
            self.wake()


def _aborted_of(part: Any) -> tuple[tuple[int, int], ...]:
    """The aborted transactions a read_committed Fetch answer names for a partition."""
    found = getattr(part, "aborted_transactions", None) or ()
    return tuple((int(txn.producer_id), int(txn.first_offset)) for txn in found)
