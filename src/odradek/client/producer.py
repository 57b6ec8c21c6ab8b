"""The asyncio producer: the paper's ``send(topic, messages)`` and the modern per-record API.

``send`` picks a partition (:mod:`.partitioner`), appends the record to its partition's open
batch (:mod:`.accumulator`) and returns a :class:`~.accumulator.RecordFuture` at once; one
sender task drains ready batches, groups them by leader into one Produce request per broker
(at most ``max.in.flight.requests.per.connection`` outstanding per broker) and resolves the
batches from the response.

Delivery guarantees: idempotence is on by default (with acks=all): the producer gets a
producer id (InitProducerId), stamps each batch with per-partition sequence numbers when it is
first drained and reuses the same bytes on every retry, so a retry after a lost response is
deduplicated by the broker (DUPLICATE_SEQUENCE_NUMBER counts as success) and order holds with
5 requests in flight. Retriable failures (connection loss, NOT_LEADER_OR_FOLLOWER, ...) put the
batch back at the front of its partition after ``retry.backoff.ms`` and refresh metadata,
until ``delivery.timeout.ms``; then — and on any fatal error — the batch's futures raise.
``flush`` and ``close`` wait for every batch; ``close(timeout)`` fails (never drops) what is
left when the timeout passes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.clock import wall_ms
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import epoch_millis

from .accumulator import DeliveryCallback, ProducerBatch, RecordAccumulator, RecordFuture
from .aio import Wakeup, result_within, wait_event
from .cluster_client import STALE_METADATA_CODES, ClusterClient
from .errors import (
    BrokerResponseError,
    ClientClosed,
    ConnectionFailed,
    DeliveryTimeout,
    KafkaClientError,
    UnsupportedByBroker,
)
from .metadata import ClusterMetadata, TopicPartition
from .partitioner import DefaultPartitioner
from .producer_config import ProducerConfig, to_bytes

__all__ = ["AsyncProducer"]

log = logging.getLogger(__name__)

_SEQUENCE_WRAP = 1 << 31
# The broker no longer knows this producer id/epoch: bump the epoch (or a new id), then retry.
_PRODUCER_FENCED = (ErrorCode.unknown_producer_id, ErrorCode.invalid_producer_epoch)
#: Seconds close() gives cancelled tasks and sockets to finish before giving up on them.
_CLOSE_GRACE = 5.0

Header = tuple[str, bytes | None]


class AsyncProducer:
    """Use as ``async with AsyncProducer("host:9092") as producer:``."""

    def __init__(self, bootstrap_servers: str | Iterable[str] | None = None, *,
                 config: ProducerConfig | None = None, **settings: Any) -> None:
        if config is None:
            if bootstrap_servers is None:
                raise ValueError("bootstrap_servers is required")
            config = ProducerConfig(bootstrap_servers, **settings)
        self.config = config
        self.client = ClusterClient(
            config.bootstrap_servers, client_id=config.client_id,
            request_timeout_ms=config.request_timeout_ms,
            metadata_max_age_ms=config.metadata_max_age_ms,
            retry_backoff_ms=config.retry_backoff_ms, security=config.security)
        self.accumulator = RecordAccumulator(config.batch_size, config.linger_ms,
                                             config.buffer_memory, config.delivery_timeout_ms)
        self.partitioner = DefaultPartitioner(config.partitioner)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup = Wakeup()
        self._idle = asyncio.Event()
        self._space = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._in_flight: dict[int, int] = {}
        self._producer_id = -1
        self._producer_epoch = -1
        self._next_sequence: dict[TopicPartition, int] = {}
        self._closing = False
        self._stopped = False
        self._fatal: BaseException | None = None
        self._responses: set[asyncio.Task[None]] = set()
        self._metadata_refresh: asyncio.Task[None] | None = None
        #: topic -> (metadata snapshot, all partitions, available partitions).
        self._partition_cache: dict[str, tuple[ClusterMetadata, list[int], list[int]]] = {}
        #: topic -> (metadata snapshot it was checked against, sticky partition): what
        #: :meth:`append_value` needs to skip partitioning.
        self._sticky_fast: dict[str, tuple[ClusterMetadata, TopicPartition]] = {}

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._sender is not None:
            return
        self._loop = asyncio.get_running_loop()
        await self.client.refresh_metadata()
        self._sender = self._loop.create_task(self._run_sender(), name="odradek-sender")

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered now and wait until each batch is acknowledged or failed.

        Never waits forever: without ``timeout`` the wait is bounded by
        ``delivery.timeout.ms`` (every batch, queued, retrying or in flight, is resolved by
        its delivery deadline) plus a grace period; if that bound passes anyway, the batches
        still incomplete are reported in the :class:`TimeoutError`.
        """
        acc = self.accumulator
        with acc.lock:
            acc.flushing += 1
        try:
            self._wakeup.set()
            bound = self._flush_bound() if timeout is None else timeout
            if not await self._wait_idle(time.monotonic() + bound):
                raise TimeoutError(
                    f"producer flush: {len(acc.incomplete)} batches "
                    f"({sum(b.record_count for b in list(acc.incomplete))} records) still "
                    f"undelivered after {bound:.1f}s")
        finally:
            with acc.lock:
                acc.flushing -= 1

    def _flush_bound(self) -> float:
        """The longest any batch can stay incomplete: its delivery deadline plus grace."""
        return self.config.delivery_timeout_ms / 1000 + _CLOSE_GRACE

    async def _wait_idle(self, deadline: float) -> bool:
        """Wait until no batch is incomplete (True) or ``deadline`` passes (False).

        Uses :func:`wait_event`, not ``asyncio.wait_for``: on Python 3.11 ``wait_for`` can
        lose a cancellation that races with completion (CPython gh-86296).
        """
        while self.accumulator.has_incomplete:
            self._idle.clear()
            self._wakeup.set()
            if not self.accumulator.has_incomplete:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not await wait_event(self._idle, remaining):
                return not self.accumulator.has_incomplete
        return True

    async def close(self, timeout: float | None = None) -> None:
        """Deliver what is buffered (within ``timeout``; default ``delivery.timeout.ms`` plus
        grace), then stop. Records that could not be delivered in time fail with
        :class:`ClientClosed`; none is dropped silently, and close itself always returns
        within about ``timeout`` plus a few seconds of shutdown grace."""
        if self._closing:
            return
        self._closing = True
        try:
            if self._sender is not None:
                await self.flush(self._flush_bound() if timeout is None else timeout)
        except TimeoutError as exc:
            log.warning("producer close: %s; failing them", exc)
        finally:
            self.accumulator.closed = True
            closed = ClientClosed("producer closed before the record was delivered")
            self._fail_all(closed)
            self._stopped = True
            self._wakeup.set()
            tasks = [t for t in (self._sender, self._metadata_refresh, *self._responses)
                     if t is not None]
            for task in tasks:
                task.cancel()
            await _await_stopped(tasks, _CLOSE_GRACE, "producer")
            self._fail_all(closed)
            await self.client.close(_CLOSE_GRACE)

    def _fail_all(self, error: BaseException) -> None:
        for batch in self.accumulator.abort_all():
            self._finish(batch, -1, error=error)
        for batch in list(self.accumulator.incomplete):
            self._finish(batch, -1, error=error)

    # ------------------------------------------------------------------ sending

    async def send(self, topic: str, value: Any = None, key: Any = None,
                   headers: Sequence[Header] | None = None, partition: int | None = None,
                   timestamp: int | None = None,
                   on_delivery: DeliveryCallback | None = None) -> Any:
        """Queue one record (or, the paper's API, a list of messages) for ``topic``.

        Returns a :class:`RecordFuture` (a list of them for a list of messages) once the record
        is buffered; ``await`` it for its :class:`RecordMetadata`. Blocks only while metadata
        for a new topic is fetched or ``buffer.memory`` is full (both bounded by
        ``max.block.ms``).
        """
        if (value.__class__ is bytes and key is None and headers is None and partition is None
                and timestamp is None and on_delivery is None and not self._closing
                and self._fatal is None and self._sender is not None):
            accumulator = self.accumulator
            if accumulator.used_bytes < accumulator.buffer_memory:
                appended = self.append_value(topic, value)
                if appended is not None:
                    if appended[1]:
                        self._wakeup.set()
                    return appended[0]
        if isinstance(value, (list, tuple)):
            return [await self.send(topic, message, key, headers, partition, timestamp,
                                    on_delivery) for message in value]
        if self._closing:
            raise ClientClosed("producer is closed")
        if self._sender is None:
            await self.start()
        if self._fatal is not None:
            raise self._fatal
        if not self._partitions(topic, self.client.metadata)[0]:
            await self._wait_for_topic(topic)
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        while not self.accumulator.has_space():
            self._space.clear()
            if not await wait_event(self._space, deadline - time.monotonic()):
                raise KafkaClientError("buffer.memory full for max.block.ms")
        future, wake = self.append(topic, value, key, headers, partition, timestamp,
                                   on_delivery)
        if wake:
            self._wakeup.set()
        return future

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None,
                            **kwargs: Any) -> Any:
        future = await self.send(topic, value, key, **kwargs)
        if isinstance(future, list):
            return [await f for f in future]
        return await future

    async def _wait_for_topic(self, topic: str) -> None:
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        self.client.add_topics([topic])
        while True:
            metadata = await self.client.refresh_metadata([topic])
            info = metadata.topics.get(topic)
            if info is not None and info.error_code == ErrorCode.none and info.partitions:
                return
            if time.monotonic() >= deadline:
                code = info.error_code if info is not None else ErrorCode.none
                raise BrokerResponseError(code or ErrorCode.unknown_topic_or_partition,
                                          f"topic {topic!r} not available after "
                                          f"max.block.ms={self.config.max_block_ms}")
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)

    def append(self, topic: str, value: Any, key: Any, headers: Sequence[Header] | None,
               partition: int | None, timestamp: int | None,
               on_delivery: DeliveryCallback | None) -> tuple[RecordFuture, bool]:
        """Partition and buffer one record (thread-safe; metadata for ``topic`` must be
        known). Returns the future and whether the sender needs waking."""
        config = self.config
        key_bytes = config.key_serializer(key) if config.key_serializer else to_bytes(key, "key")
        value_bytes = (config.value_serializer(value) if config.value_serializer
                       else to_bytes(value))
        if headers:
            headers = [(name, to_bytes(v, "header")) for name, v in headers]
        size = (len(key_bytes) if key_bytes else 0) + (len(value_bytes) if value_bytes else 0)
        if size + 128 > config.max_request_size:
            raise BrokerResponseError(ErrorCode.message_too_large,
                                      f"record of {size} bytes exceeds max.request.size "
                                      f"{config.max_request_size}")
        metadata = self.client.metadata
        all_partitions, available = self._partitions(topic, metadata)
        if not all_partitions:
            raise BrokerResponseError(ErrorCode.unknown_topic_or_partition,
                                      f"no metadata for topic {topic!r}")
        sticky = False
        if partition is None:
            partition = self.partitioner.partition(topic, key_bytes, all_partitions, available)
            sticky = key_bytes is None and config.partitioner is None
        elif partition not in all_partitions:
            raise BrokerResponseError(
                3, f"partition {partition} of {topic!r} does not exist "
                f"(it has {len(all_partitions)})")
        if timestamp is None:
            timestamp = wall_ms()
        tp = TopicPartition(topic, partition)
        future, full, created = self.accumulator.append(tp, timestamp, key_bytes, value_bytes,
                                                        headers, on_delivery)
        if sticky:
            if full:
                self.partitioner.on_new_batch(topic, partition, available)
            sticky_tp = self.partitioner.sticky_tp.get(topic)
            if sticky_tp is not None:
                self._sticky_fast[topic] = (metadata, sticky_tp)
        return future, full or created

    def append_value(self, topic: str, value: bytes) -> tuple[RecordFuture, bool] | None:
        """:meth:`append` of a keyless ``bytes`` value with no headers, partition, timestamp
        or callback, by the shortest path: the sticky partition and the topic's partition
        lists are cached per metadata snapshot (a refresh sends the next record through
        :meth:`append`, which revalidates them). Returns None when the record needs
        :meth:`append` (no cache yet, serializers, an oversized record, a new batch)."""
        entry = self._sticky_fast.get(topic)
        config = self.config
        if (entry is None or entry[0] is not self.client.metadata
                or config.value_serializer is not None or config.key_serializer is not None
                or len(value) + 128 > config.max_request_size):
            return None
        tp = entry[1]
        future, full, created = self.accumulator.append_value(
            tp, wall_ms(), value)
        if full:
            metadata = entry[0]
            self.partitioner.on_new_batch(topic, tp.partition,
                                          self._partitions(topic, metadata)[1])
            self._sticky_fast[topic] = (metadata, self.partitioner.sticky_tp[topic])
        return future, full or created

    def append_encoded(self, topic: str, partition: int,
                       records: bytes | bytearray | memoryview,
                       count: int, timestamp: int) -> tuple[RecordFuture, bool]:
        """Buffer ``count`` pre-encoded records (one batch's records, offset deltas from 0,
        timestamp deltas from ``timestamp``) as their own batch for ``topic``-``partition``
        (thread-safe; metadata for ``topic`` must be known). The bulk counterpart of
        :meth:`append`: the batch is sequenced, retried and resolved like any other. Returns
        the future of its last record and whether the sender needs waking."""
        all_partitions = self._partitions(topic, self.client.metadata)[0]
        if not all_partitions:
            raise BrokerResponseError(ErrorCode.unknown_topic_or_partition,
                                      f"no metadata for topic {topic!r}")
        if partition not in all_partitions:
            raise BrokerResponseError(
                3, f"partition {partition} of {topic!r} does not exist "
                f"(it has {len(all_partitions)})")
        if len(records) + 128 > self.config.max_request_size:
            raise BrokerResponseError(ErrorCode.message_too_large,
                                      f"batch of {count} records ({len(records)} bytes) "
                                      f"exceeds max.request.size "
                                      f"{self.config.max_request_size}")
        future = self.accumulator.append_encoded(TopicPartition(topic, partition), records,
                                                 count, timestamp)
        return future, True

    def _partitions(self, topic: str, metadata: ClusterMetadata
                    ) -> tuple[list[int], list[int]]:
        """All and available partitions of ``topic`` in ``metadata``, computed once per
        metadata snapshot (snapshots are immutable; a refresh swaps in a new one)."""
        cached = self._partition_cache.get(topic)
        if cached is not None and cached[0] is metadata:
            return cached[1], cached[2]
        all_partitions = metadata.partitions_for(topic)
        available = metadata.available_partitions(topic)
        if all_partitions:
            self._partition_cache[topic] = (metadata, all_partitions, available)
        return all_partitions, available

    def wake_threadsafe(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wakeup.set)

    # ------------------------------------------------------------------ the sender

    async def _run_sender(self) -> None:
        backoff = self.config.retry_backoff_ms / 1000
        while not self._stopped:
            # Cleared *before* looking at the accumulator: a wakeup that arrives while
            # _send_ready awaits (a response, a flush, a new batch) is kept, never lost.
            self._wakeup.clear()
            try:
                delay = await self._send_ready()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("producer sender loop error")
                delay = backoff
            if not self.accumulator.has_incomplete:
                self._idle.set()
            if delay > 0:
                await self._wakeup.wait(delay)
            else:
                await asyncio.sleep(0)

    async def _send_ready(self) -> float:
        now = time.monotonic()
        backoff = self.config.retry_backoff_ms / 1000
        for batch in self.accumulator.expired(now):
            self._expire(batch)
        if self.client.needs_refresh or self.client.add_topics(
                self.accumulator.unsent_topics()):
            # In the background: a refresh against an unreachable cluster can take minutes
            # of retries, and the sender must keep expiring batches meanwhile.
            self._refresh_metadata_soon()
        if (self.config.enable_idempotence and self._producer_id < 0
                and not await self._init_producer_id()):
            return backoff
        ready, delay = self.accumulator.ready(now, self._sequencing_id())
        if not ready:
            return delay
        metadata = self.client.metadata
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in ready:
            leader = metadata.leader_for(tp)
            if leader < 0:
                self.client.invalidate()
                delay = min(delay, backoff)
                continue
            by_node.setdefault(leader, []).append(tp)
        for node_id, tps in by_node.items():
            if self._in_flight.get(node_id, 0) >= self.config.max_in_flight:
                continue  # a response will wake us
            batches = self._drain_for_node(tps, now)
            if batches:
                self._in_flight[node_id] = self._in_flight.get(node_id, 0) + 1
                task = asyncio.get_running_loop().create_task(
                    self._send_produce(node_id, batches))
                self._responses.add(task)
                task.add_done_callback(self._responses.discard)
            if self.accumulator.ready(now, self._sequencing_id())[0]:
                delay = 0 if self._in_flight.get(node_id, 0) < self.config.max_in_flight \
                    else delay
        return delay

    def _refresh_metadata_soon(self) -> None:
        if self._metadata_refresh is not None and not self._metadata_refresh.done():
            return
        task = asyncio.get_running_loop().create_task(self._refresh_metadata(),
                                                      name="odradek-producer-metadata")
        self._metadata_refresh = task

    async def _refresh_metadata(self) -> None:
        try:
            await self.client.refresh_metadata()
        except KafkaClientError as exc:
            log.warning("metadata refresh failed: %s", exc)
        finally:
            self._wakeup.set()

    def _sequencing_id(self) -> int | None:
        """The producer id batches are numbered under (None without idempotence): a
        partition with a batch in flight under another id is not drained until it is back
        (see :mod:`.accumulator`)."""
        return self._producer_id if self.config.enable_idempotence else None

    def _drain_for_node(self, tps: list[TopicPartition], now: float) -> list[ProducerBatch]:
        batches: list[ProducerBatch] = []
        size = 0
        compression = self.config.compression
        for tp in tps:
            batch = self.accumulator.drain(tp, now, self._sequencing_id())
            if batch is None:
                continue
            if self.config.enable_idempotence and batch.producer_id != self._producer_id:
                batch.encoded = None  # the producer id was reset: sequence it again
                batch.base_sequence = -1
            if self.config.enable_idempotence and batch.base_sequence < 0:
                sequence = self._next_sequence.get(tp, 0)
                batch.base_sequence = sequence
                batch.producer_id = self._producer_id
                batch.producer_epoch = self._producer_epoch
                self._next_sequence[tp] = (sequence + batch.record_count) % _SEQUENCE_WRAP
            try:
                encoded = batch.encode(compression)
            except Exception as exc:  # a codec failure fails this batch, not the sender
                self._finish(batch, -1, error=KafkaClientError(
                    f"cannot encode batch for {tp.topic}-{tp.partition}: {exc}"))
                continue
            if batches and size + len(encoded) > self.config.max_request_size:
                self.accumulator.reenqueue(batch, 0.0)
                break
            size += len(encoded)
            batches.append(batch)
        return batches

    async def _send_produce(self, node_id: int, batches: list[ProducerBatch]) -> None:
        acks = self.config.acks
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for batch in batches:
            batch.attempts += 1
            by_topic.setdefault(batch.tp.topic, []).append(
                {"index": batch.tp.partition, "records": batch.encoded})
        body = {
            "transactional_id": None,
            "acks": acks,
            "timeout": self.config.request_timeout_ms,
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in by_topic.items()],
        }
        try:
            try:
                # Bounded by the request timeout *and* the earliest delivery deadline, so
                # no batch outlives delivery.timeout.ms while its request hangs.
                deadline = min(time.monotonic() + self.config.request_timeout_ms / 1000 + 5,
                               min(batch.deadline for batch in batches))
                # An open connection is used at once (``wait_for`` would add a task and a
                # loop iteration before the batch is even written).
                conn = self.client.connected(node_id)
                if conn is None:
                    conn = await asyncio.wait_for(self.client.connection(node_id),
                                                  _remaining(deadline))
                if acks == 0:
                    await asyncio.wait_for(conn.send(ApiKey.PRODUCE, body,
                                                     expect_response=False),
                                           _remaining(deadline))
                    for batch in batches:
                        self._finish(batch, -1)
                    return
                # Written now, and the response awaited directly (a timer, no task): each
                # loop iteration saved is one less chance for an application thread holding
                # the GIL to stall the sender. At most max.in.flight requests of
                # max.request.size each are outstanding, which bounds the write buffer.
                response = await result_within(conn.send_nowait(ApiKey.PRODUCE, body),
                                               _remaining(deadline))
            except (TimeoutError, KafkaClientError, OSError) as exc:
                if isinstance(exc, TimeoutError):
                    # The request may or may not have been applied: the connection's
                    # stream position is unknown, so it is not reused.
                    self.client.drop_connection(node_id)
                    exc = ConnectionFailed(f"produce to broker {node_id} timed out")
                self.client.invalidate()
                for batch in batches:
                    self._retry_or_fail(batch, exc)
                return
            results: dict[TopicPartition, Any] = {}
            for topic_response in response.responses:
                for part in topic_response.partition_responses:
                    results[TopicPartition(topic_response.name, int(part.index))] = part
            for batch in batches:
                part = results.get(batch.tp)
                if part is None:
                    self._retry_or_fail(batch, ConnectionFailed(
                        f"broker {node_id} did not answer for {batch.tp}"))
                    continue
                code = part.error_code
                if code == ErrorCode.none:
                    self._finish(batch, int(part.base_offset),
                                 epoch_millis(getattr(part, "log_append_time", None)))
                elif code == ErrorCode.duplicate_sequence_number:
                    self._finish(batch, int(part.base_offset))
                else:
                    error = BrokerResponseError(code, f"produce to {batch.tp.topic}-"
                                                f"{batch.tp.partition}",
                                                getattr(part, "error_message", None))
                    if code in STALE_METADATA_CODES:
                        self.client.invalidate()
                    if code in _PRODUCER_FENCED or (
                            code == ErrorCode.out_of_order_sequence_number
                            and self._is_unfillable_gap(batch)):
                        self._reset_producer_id()
                    self._retry_or_fail(batch, error)
        except Exception as exc:  # never leave a batch unresolved
            log.exception("unexpected error handling a produce response")
            for batch in batches:
                if not batch.result.done:
                    self._finish(batch, -1, error=KafkaClientError(f"internal error: {exc!r}"))
        finally:
            self._in_flight[node_id] = max(0, self._in_flight.get(node_id, 1) - 1)
            self._wakeup.set()

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException) -> None:
        now = time.monotonic()
        retriable = getattr(error, "retriable", False) or (
            isinstance(error, BrokerResponseError)
            and error.code in (ErrorCode.out_of_order_sequence_number, *_PRODUCER_FENCED))
        if (retriable and not self._closing_hard() and batch.attempts <= self.config.retries
                and now < batch.deadline):
            log.debug("retrying %s after %s", batch.tp, error)
            self.accumulator.reenqueue(batch, now + self.config.retry_backoff_ms / 1000)
            return
        if retriable and now >= batch.deadline:
            self._expire(batch, error)
            return
        self._finish(batch, -1, error=error)

    def _expire(self, batch: ProducerBatch, cause: BaseException | None = None) -> None:
        """Fail a batch past ``delivery.timeout.ms``. If it carried sequence numbers the
        broker may or may not have them, so later batches would hit
        ErrorCode.out_of_order_sequence_number until their own deadlines: start a new producer id
        instead (what the Java client does)."""
        detail = f" (last error: {cause})" if cause is not None else ""
        self._finish(batch, -1, error=DeliveryTimeout(
            f"{batch.record_count} records for {batch.tp.topic}-{batch.tp.partition} not "
            f"delivered within delivery.timeout.ms={self.config.delivery_timeout_ms}{detail}"))
        if (self.config.enable_idempotence and batch.base_sequence >= 0
                and batch.producer_id == self._producer_id):  # else reset already
            self._reset_producer_id()

    def _closing_hard(self) -> bool:
        return self.accumulator.closed

    def _finish(self, batch: ProducerBatch, base_offset: int, log_append_time: int = -1,
                error: BaseException | None = None) -> None:
        batch.complete(base_offset, log_append_time, error)
        self.accumulator.release(batch)
        self._space.set()
        if not self.accumulator.has_incomplete:
            self._idle.set()

    # ------------------------------------------------------------------ idempotence

    async def _init_producer_id(self) -> bool:
        try:
            conn = await self.client.any_connection()
            if not conn.supports(ApiKey.INIT_PRODUCER_ID):
                log.warning("broker has no InitProducerId: idempotence disabled")
                self.config.enable_idempotence = False
                return True
            response = await self.client.send(None, ApiKey.INIT_PRODUCER_ID, {
                "transactional_id": None, "transaction_timeout": 60_000,
                "producer_id": -1, "producer_epoch": -1})
        except (KafkaClientError, UnsupportedByBroker) as exc:
            log.warning("InitProducerId failed: %s", exc)
            return False
        code = response.error_code
        if code:
            error = BrokerResponseError(code, "InitProducerId")
            if not error.retriable:
                self._fatal = error
                self._fail_all(error)
            log.warning("%s", error)
            return False
        self._producer_id = int(response.producer_id)
        self._producer_epoch = int(response.producer_epoch)
        log.debug("producer id %d epoch %d", self._producer_id, self._producer_epoch)
        return True

    def _is_unfillable_gap(self, batch: ProducerBatch) -> bool:
        """OUT_OF_ORDER_SEQUENCE_NUMBER for ``batch`` with no earlier batch of its partition
        still pending under the same producer id: retrying can never succeed.

        This is how the perf-produce hang happened: the first batch to a just-created
        partition failed retriably (NOT_LEADER_OR_FOLLOWER), and a later pipelined batch
        arrived once the broker was leader; a broker with no state for a producer id accepts
        *any* first sequence, so it took the later batch, and every retry of the earlier one
        then got ErrorCode.out_of_order_sequence_number until delivery.timeout.ms (120 s). Like the
        Java client, start a new producer id; the unacknowledged batches are re-sequenced.
        """
        if batch.base_sequence < 0 or batch.producer_id != self._producer_id:
            return False  # already re-sequenced (or about to be) under a new id
        return not any(
            other is not batch and other.tp == batch.tp
            and other.producer_id == batch.producer_id
            and 0 <= other.base_sequence < batch.base_sequence
            for other in list(self.accumulator.incomplete))

    def _reset_producer_id(self) -> None:
        """The broker forgot us (ErrorCode.unknown_producer_id): start a new id, re-sequence unsent
        batches. In-flight ones fail and come back here as retries."""
        self._producer_id = -1
        self._next_sequence.clear()
        with self.accumulator.lock:
            for queue in self.accumulator.batches.values():
                for batch in queue:
                    batch.encoded = None
                    batch.base_sequence = -1

    @property
    def metrics(self) -> dict[str, Any]:
        return {"in_flight": dict(self._in_flight),
                "buffered_bytes": self.accumulator.used_bytes,
                "producer_id": self._producer_id}


def _remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.001)


async def _await_stopped(tasks: list[asyncio.Task[Any]], timeout: float, owner: str) -> None:
    """Wait (bounded) for cancelled tasks to finish; a task that ignores its cancellation is
    reported, never waited for forever."""
    if not tasks:
        return
    _done, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        log.error("%s close: task %s did not stop within %.0fs of cancellation; "
                  "abandoning it", owner, task.get_name(), timeout)
