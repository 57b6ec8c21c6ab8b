"""Per-partition batching for the producer (``linger.ms`` / ``batch.size`` / ``buffer.memory``).

``append`` may be called from any thread (the synchronous facade appends from the
application's thread, the async producer from the event loop); everything it touches is under
one lock, held only for the append itself. The sender, on the event loop, asks which partitions
have a sendable batch (:meth:`RecordAccumulator.ready`) and takes them (:meth:`drain`).

A batch is sendable when it is full, when its oldest record has waited ``linger.ms``, when the
producer flushes or closes, or when it is a retry whose backoff has passed. Retried batches go
back to the *front* of their partition's queue, in the order they were created (each batch's
``ordinal``), so order is kept. Not in sequence order: after a producer id reset some retries
have lost their sequence and others still hold the old one, and only creation order is still
the order the application appended in (the chaos run found B written before A that way).

An idempotent producer also holds back a partition while one of its batches is in flight
under an older producer id (:meth:`RecordAccumulator.ready`, ``drain``): that batch may come
back as a retry, and must then be numbered under the new id *before* the batches behind it
(the Java client's rule: in-flight batches are re-sequenced in their original order).

Each record's future is a tiny object pointing at its batch's :class:`BatchResult`; the batch is
resolved once and every record future answers from it (the Java client's design: one future per
batch, not per record).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from odradek.clock import monotonic_s
from odradek.protocol.records import BATCH_HEADER_SIZE

from .batch_codec import RecordsBuilder
from .errors import KafkaClientError
from .metadata import TopicPartition

__all__ = ["BatchResult", "ProducerBatch", "RecordAccumulator", "RecordFuture",
           "RecordMetadata"]

#: Guards registering a waiter against resolving a batch: futures are awaited and given
#: callbacks from application threads while the loop thread resolves them, and a waiter
#: registered just after the resolver looked would otherwise never be woken.
_REGISTRATION = threading.Lock()

#: ``append`` rolls to a new batch when ``size + key_size + value_size + 32`` passes
#: ``batch_size``; with a null key (size -1) that is ``len(buffer) + value_size + this``.
_APPEND_SLACK = BATCH_HEADER_SIZE + 31

DeliveryCallback = Callable[[BaseException | None, "RecordMetadata | None"], None]


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where a record was written. ``offset`` is -1 with acks=0 (the broker says nothing)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int = -1
    serialized_value_size: int = -1


class BatchResult:
    """Outcome of one produce batch, shared by the futures of all its records."""

    __slots__ = ("_async_waiters", "_callbacks", "_event", "base_offset", "done",
                 "error", "log_append_time")

    def __init__(self) -> None:
        self.done = False
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self._event: threading.Event | None = None
        self._async_waiters: list[asyncio.Future[None]] | None = None
        self._callbacks: list[Callable[[], None]] | None = None

    def resolve(self, base_offset: int, log_append_time: int = -1,
                error: BaseException | None = None) -> None:
        with _REGISTRATION:
            if self.done:
                return
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            self.done = True
            event, waiters, callbacks = self._event, self._async_waiters, self._callbacks
        if event is not None:
            event.set()
        if waiters:
            for waiter in waiters:
                if not waiter.done():
                    waiter.get_loop().call_soon_threadsafe(_set_none, waiter)
        if callbacks:
            for callback in callbacks:
                callback()

    def wait(self, timeout: float | None) -> bool:
        if self.done:
            return True
        with _REGISTRATION:
            if self.done:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def async_waiter(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with _REGISTRATION:
            if not self.done:
                if self._async_waiters is None:
                    self._async_waiters = []
                self._async_waiters.append(future)
                return future
        future.set_result(None)
        return future

    def add_callback(self, callback: Callable[[], None]) -> None:
        with _REGISTRATION:
            if not self.done:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(callback)
                return
        callback()


def _set_none(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class RecordFuture:
    """The future of one sent record: ``get(timeout)`` in threads, ``await`` in asyncio.

    Resolves to :class:`RecordMetadata` or raises the delivery error.
    """

    __slots__ = ("_result", "index", "key_size", "timestamp", "tp", "value_size")

    def __init__(self, result: BatchResult, tp: TopicPartition, index: int, timestamp: int,
                 key_size: int, value_size: int) -> None:
        self._result = result
        self.tp = tp
        self.index = index
        self.timestamp = timestamp
        self.key_size = key_size
        self.value_size = value_size

    def done(self) -> bool:
        return self._result.done

    def _metadata(self) -> RecordMetadata:
        result = self._result
        if result.error is not None:
            raise result.error
        offset = result.base_offset + self.index if result.base_offset >= 0 else -1
        timestamp = result.log_append_time if result.log_append_time >= 0 else self.timestamp
        return RecordMetadata(self.tp.topic, self.tp.partition, offset, timestamp,
                              self.key_size, self.value_size)

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """Block until delivered (or failed); ``TimeoutError`` if ``timeout`` passes first."""
        if not self._result.wait(timeout):
            raise TimeoutError(f"record to {self.tp.topic}-{self.tp.partition} not "
                               f"acknowledged within {timeout}s")
        return self._metadata()

    result = get

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self._result.wait(timeout):
            raise TimeoutError("record not acknowledged yet")
        return self._result.error

    def add_done_callback(self, callback: Callable[[RecordFuture], Any]) -> None:
        """Call ``callback(self)`` once resolved (on the producer's event loop thread)."""
        self._result.add_callback(lambda: callback(self))

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        if not self._result.done:
            yield from self._result.async_waiter().__await__()
        return self._metadata()


class ProducerBatch:
    __slots__ = ("attempts", "base_sequence", "builder", "created", "deadline", "drained_at",
                 "encoded", "futures_count", "in_retry", "ordinal", "producer_epoch",
                 "producer_id", "result", "retry_at", "sealed", "tp", "user_callbacks")

    def __init__(self, tp: TopicPartition, now: float, delivery_timeout: float,
                 ordinal: int = 0) -> None:
        self.tp = tp
        self.ordinal = ordinal  # creation order: a partition's queue is sorted by it
        self.builder = RecordsBuilder()
        self.result = BatchResult()
        self.created = now
        self.deadline = now + delivery_timeout
        self.attempts = 0
        self.retry_at = 0.0
        self.in_retry = False
        self.drained_at = 0.0
        self.base_sequence = -1
        self.producer_id = -1
        self.producer_epoch = -1
        self.encoded: bytes | None = None
        self.user_callbacks: list[tuple[int, DeliveryCallback, RecordFuture]] | None = None
        self.futures_count = 0
        #: Closed to appends (a pre-encoded batch from :meth:`RecordAccumulator.append_encoded`).
        self.sealed = False

    @property
    def record_count(self) -> int:
        return self.builder.count

    @property
    def size(self) -> int:
        return self.builder.size_in_bytes

    def encode(self, compression: int, transactional: bool = False) -> bytes:
        """The wire bytes; built once and reused for every retry (same sequence numbers)."""
        if self.encoded is None:
            self.encoded = self.builder.build(
                compression=compression, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
                transactional=transactional)
        return self.encoded

    def complete(self, base_offset: int, log_append_time: int = -1,
                 error: BaseException | None = None) -> None:
        self.result.resolve(base_offset, log_append_time, error)
        if self.user_callbacks:
            for _index, callback, future in self.user_callbacks:
                try:
                    metadata = None if error is not None else future._metadata()
                    callback(error, metadata)
                except Exception:  # a user callback must not break the sender
                    logging.getLogger(__name__).exception("delivery callback failed")


class RecordAccumulator:
    def __init__(self, batch_size: int, linger_ms: float, buffer_memory: int,
                 delivery_timeout_ms: int) -> None:
        self.batch_size = batch_size
        self.linger = linger_ms / 1000
        self.buffer_memory = buffer_memory
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.lock = threading.Lock()
        self.space = threading.Condition(self.lock)
        self.batches: dict[TopicPartition, collections.deque[ProducerBatch]] = {}
        self.used_bytes = 0
        self.flushing = 0
        self.closed = False
        self.incomplete: set[ProducerBatch] = set()
        #: Batches drained and not yet back (retry) or finished, per partition.
        self.in_flight: dict[TopicPartition, list[ProducerBatch]] = {}
        self._ordinals = itertools.count()

    def append(self, tp: TopicPartition, timestamp: int, key: bytes | None,
               value: bytes | None, headers: Sequence[tuple[str, bytes | None]] | None,
               callback: DeliveryCallback | None = None
               ) -> tuple[RecordFuture, bool, bool]:
        """Add a record; returns (future, batch_full_or_rolled, new_batch_created).

        ``batch_full_or_rolled`` is true when this record filled its batch or did not fit in
        the previous one: the moment a sticky partitioner moves on.
        """
        key_size = len(key) if key is not None else -1
        value_size = len(value) if value is not None else -1
        with self.lock:
            if self.closed:
                raise KafkaClientError("producer is closed")
            queue = self.batches.get(tp)
            if queue is None:
                queue = self.batches[tp] = collections.deque()
            batch = queue[-1] if queue else None
            created = False
            rolled = False
            if (batch is None or batch.in_retry or batch.encoded is not None or batch.sealed
                    or (batch.size + key_size + value_size + 32 > self.batch_size
                    and batch.record_count > 0)):
                rolled = batch is not None
                batch = ProducerBatch(tp, monotonic_s(), self.delivery_timeout,
                                      next(self._ordinals))
                queue.append(batch)
                self.incomplete.add(batch)
                created = True
            before = len(batch.builder.buffer)
            index = batch.builder.append(timestamp, key, value, headers)
            self.used_bytes += len(batch.builder.buffer) - before
            future = RecordFuture(batch.result, tp, index, timestamp, key_size, value_size)
            if callback is not None:
                if batch.user_callbacks is None:
                    batch.user_callbacks = []
                batch.user_callbacks.append((index, callback, future))
            return future, rolled or batch.size >= self.batch_size, created

    def append_value(self, tp: TopicPartition, timestamp: int, value: bytes
                     ) -> tuple[RecordFuture, bool, bool]:
        """:meth:`append` of a keyless, headerless record without a callback: the
        producer's hot path. Same result, fewer steps when the partition's open batch has
        room (the usual case); otherwise it is :meth:`append`."""
        value_size = len(value)
        with self.lock:
            queue = self.batches.get(tp)
            if queue and not self.closed:
                batch = queue[-1]
                builder = batch.builder
                if (not batch.in_retry and batch.encoded is None and not batch.sealed
                        and len(builder.buffer) + value_size + _APPEND_SLACK <= self.batch_size):
                    index = builder.count
                    added = builder.append_value(timestamp, value)
                    self.used_bytes += added
                    return (RecordFuture(batch.result, tp, index, timestamp, -1, value_size),
                            len(builder.buffer) + BATCH_HEADER_SIZE >= self.batch_size, False)
        return self.append(tp, timestamp, None, value, None)

    def append_encoded(self, tp: TopicPartition, records: bytes | bytearray | memoryview,
                       count: int, timestamp: int) -> RecordFuture:
        """Queue ``count`` records already encoded as one batch's records (offset deltas
        0..count-1, timestamp deltas from ``timestamp``) as a batch of their own: the bulk
        path (the Spark sink encodes whole column slices at once). The batch is closed to
        :meth:`append` and otherwise goes through the same queue, sequencing, retries and
        expiry as any other; returns the future of its last record (a batch resolves as
        one)."""
        with self.lock:
            if self.closed:
                raise KafkaClientError("producer is closed")
            queue = self.batches.get(tp)
            if queue is None:
                queue = self.batches[tp] = collections.deque()
            batch = ProducerBatch(tp, monotonic_s(), self.delivery_timeout,
                                  next(self._ordinals))
            builder = batch.builder
            builder.buffer = bytearray(records)
            builder.count = count
            builder.base_timestamp = builder.max_timestamp = timestamp
            batch.sealed = True
            queue.append(batch)
            self.incomplete.add(batch)
            self.used_bytes += len(builder.buffer)
            return RecordFuture(batch.result, tp, count - 1, timestamp, -1, -1)

    def wait_for_space(self, timeout: float) -> bool:
        """Block (threads) until buffered bytes fall below ``buffer.memory``."""
        with self.lock:
            return self.space.wait_for(lambda: self.used_bytes < self.buffer_memory, timeout)

    def has_space(self) -> bool:
        return self.used_bytes < self.buffer_memory

    def ready(self, now: float, producer_id: int | None = None
              ) -> tuple[list[TopicPartition], float]:
        """Partitions whose first batch may be sent now, and seconds until the next might.
        With ``producer_id`` (idempotence), a partition :meth:`_held` by a batch in flight
        waits for it (its response wakes the sender)."""
        ready: list[TopicPartition] = []
        next_check = self.linger if self.linger > 0 else 1.0
        with self.lock:
            flushing = self.flushing > 0 or self.closed
            for tp, queue in self.batches.items():
                if not queue or (producer_id is not None and self._held(tp, producer_id)):
                    continue
                batch = queue[0]
                if batch.in_retry and batch.retry_at > now:
                    next_check = min(next_check, batch.retry_at - now)
                    continue
                waited = now - batch.created
                if (flushing or batch.in_retry or len(queue) > 1
                        or batch.size >= self.batch_size or waited >= self.linger):
                    ready.append(tp)
                else:
                    next_check = min(next_check, self.linger - waited)
        return ready, max(next_check, 0.0)

    def drain(self, tp: TopicPartition, now: float, producer_id: int | None = None
              ) -> ProducerBatch | None:
        """The partition's first batch, now in flight (``producer_id``: as in :meth:`ready`,
        none while the partition is :meth:`_held`)."""
        with self.lock:
            queue = self.batches.get(tp)
            if not queue or (producer_id is not None and self._held(tp, producer_id)):
                return None
            batch = queue.popleft()
            batch.drained_at = now
            self.in_flight.setdefault(tp, []).append(batch)
            return batch

    def _held(self, tp: TopicPartition, producer_id: int) -> bool:
        """Must ``tp`` wait for its batches in flight before another is sent (idempotence)?

        Yes while one was numbered under a producer id other than ``producer_id`` (it must
        come back and be numbered again first), and while the first batch under this id
        (sequence 0) is unanswered: a broker with no state for a producer id takes *any*
        first sequence, so a pipelined later batch that arrives first — the first one got
        NOT_LEADER_OR_FOLLOWER from a partition still being created — would be written
        ahead of it (seen against Apache Kafka right after CreateTopics). Once the broker
        has acknowledged sequence 0 it checks every later one, and pipelining resumes."""
        return any(b.producer_id != producer_id or b.base_sequence == 0
                   for b in self.in_flight.get(tp, ()))

    def _landed(self, batch: ProducerBatch) -> None:
        flying = self.in_flight.get(batch.tp)
        if flying is not None and batch in flying:
            flying.remove(batch)
            if not flying:
                del self.in_flight[batch.tp]

    def reenqueue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Put a failed batch back at the front of its partition, in creation order."""
        batch.in_retry = True
        batch.retry_at = retry_at
        with self.lock:
            self._landed(batch)
            queue = self.batches.setdefault(batch.tp, collections.deque())
            position = 0
            while position < len(queue) and queue[position].ordinal < batch.ordinal:
                position += 1
            queue.insert(position, batch)

    def release(self, batch: ProducerBatch) -> None:
        """A batch is finished (delivered or failed for good): free its memory."""
        with self.lock:
            self._landed(batch)
            if batch in self.incomplete:
                self.incomplete.discard(batch)
                self.used_bytes -= len(batch.builder.buffer)
                self.space.notify_all()

    def expired(self, now: float) -> list[ProducerBatch]:
        """Batches queued past ``delivery.timeout.ms`` (fresh or waiting for a retry),
        removed from their queues. A retry counts too: a batch whose leader never comes back
        must still fail at its deadline rather than keep ``flush`` waiting forever."""
        out: list[ProducerBatch] = []
        with self.lock:
            for queue in self.batches.values():
                if queue and queue[0].deadline <= now:
                    kept = [batch for batch in queue if batch.deadline > now]
                    out.extend(batch for batch in queue if batch.deadline <= now)
                    queue.clear()
                    queue.extend(kept)
        return out

    def abort_all(self) -> list[ProducerBatch]:
        with self.lock:
            out = [b for queue in self.batches.values() for b in queue]
            self.batches.clear()
            return out

    def unsent_topics(self) -> set[str]:
        with self.lock:
            return {tp.topic for tp, queue in self.batches.items() if queue}

    @property
    def has_incomplete(self) -> bool:
        return bool(self.incomplete)
