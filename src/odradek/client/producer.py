"""The asyncio producer: the paper's ``send(topic, messages)`` and the modern per-record API.

``send`` picks a partition (:mod:`.partitioner`), appends the record to its partition's open
batch (:mod:`.accumulator`) and returns a :class:`~.accumulator.RecordFuture` at once; the
:class:`~.sender.Sender` task drains ready batches into Produce requests, retries them and
resolves their futures (delivery guarantees, idempotence and retries: :mod:`.sender`).
``flush`` and ``close`` wait for every batch; ``close(timeout)`` fails (never drops) what is
left when the timeout passes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_s, wall_ms

from .accumulator import DeliveryCallback, RecordAccumulator, RecordFuture
from .aio import Wakeup, wait_event
from .cluster_client import ClusterClient
from .errors import BrokerResponseError, ClientClosed, KafkaClientError
from .metadata import ClusterMetadata, TopicPartition
from .partitioner import DefaultPartitioner
from .producer_config import ProducerConfig, to_bytes
from .sender import Sender
from .transactions import ConsumerGroupMetadata, TransactionManager
from .txn_state import TransactionAbortable

__all__ = ["AsyncProducer"]

log = logging.getLogger(__name__)

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
        self.sender = Sender(config, self.client, self.accumulator, self._wakeup)
        #: The transaction manager of a producer with ``transactional_id`` (else None).
        self.transactions: TransactionManager | None = None
        if config.transactional_id is not None:
            self.transactions = TransactionManager(
                config.transactional_id, config.transaction_timeout_ms, self.client,
                self.sender, config.max_block_ms, config.retry_backoff_ms)
            self.sender.txn = self.transactions
        self._sender: asyncio.Task[None] | None = None
        self._closing = False
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
        self._sender = self.sender.start(self._loop)

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
        txn = self.transactions
        if txn is not None and not txn.machine.may_drain:
            # Outside a live transaction nothing queued can ever be sent: fail it now.
            self.sender.drop_queued(TransactionAbortable(
                f"no live transaction ({txn.machine.state.value}) to send the record in"))
        with acc.lock:
            acc.flushing += 1
        try:
            self._wakeup.set()
            bound = self._flush_bound() if timeout is None else timeout
            if not await self._wait_idle(monotonic_s() + bound):
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
            self.sender.idle.clear()
            self._wakeup.set()
            if not self.accumulator.has_incomplete:
                break
            remaining = deadline - monotonic_s()
            if remaining <= 0 or not await wait_event(self.sender.idle, remaining):
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
            self.sender.fail_all(closed)
            tasks = self.sender.stop()
            for task in tasks:
                task.cancel()
            await _await_stopped(tasks, _CLOSE_GRACE, "producer")
            self.sender.fail_all(closed)
            await self.client.close(_CLOSE_GRACE)

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
                and self.sender.fatal is None and self._sender is not None
                and self.transactions is None):
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
        self.check_sendable()
        if not self._partitions(topic, self.client.metadata)[0]:
            await self._wait_for_topic(topic)
        deadline = monotonic_s() + self.config.max_block_ms / 1000
        while not self.accumulator.has_space():
            self.sender.space.clear()
            if not await wait_event(self.sender.space, deadline - monotonic_s()):
                raise KafkaClientError("buffer.memory full for max.block.ms")
        future, wake = self.append(topic, value, key, headers, partition, timestamp,
                                   on_delivery)
        if wake:
            self._wakeup.set()
        return future

    def check_sendable(self) -> None:
        """Raise what stops a send now: a fatal error, or (transactional producer) no live
        transaction."""
        if self.sender.fatal is not None:
            raise self.sender.fatal
        if self.transactions is not None:
            self.transactions.machine.check_sendable()

    # ------------------------------------------------------------------ transactions

    def _transactions(self) -> TransactionManager:
        if self.transactions is None:
            raise KafkaClientError("transactional calls need a producer with "
                                   "transactional_id set")
        return self.transactions

    async def init_transactions(self) -> None:
        """Register the ``transactional.id`` with its transaction coordinator, fencing any
        older producer with the same id and finishing (aborting) its open transaction.
        Once per producer, before the first transaction."""
        manager = self._transactions()
        if self._sender is None:
            await self.start()
        await manager.init_transactions()

    def begin_transaction(self) -> None:
        """Start a transaction: records sent from now until commit/abort belong to it."""
        self._transactions().begin_transaction()

    async def send_offsets_to_transaction(
            self, offsets: Mapping[TopicPartition, int],
            group_metadata: ConsumerGroupMetadata | str) -> None:
        """Commit ``offsets`` (the *next* offset to read, per partition) for the consumer
        group as part of the transaction: the group sees them only if it commits."""
        await self._transactions().send_offsets_to_transaction(offsets, group_metadata)

    async def commit_transaction(self) -> None:
        """Flush the transaction's records, then commit it. After a batch failed this
        raises :class:`~.txn_state.TransactionAbortable`: call :meth:`abort_transaction`."""
        await self._transactions().commit_transaction(
            lambda: self.flush(self._flush_bound()))

    async def abort_transaction(self) -> None:
        """Drop the records not yet sent, wait for those in flight, abort the transaction:
        read_committed consumers never see any of its records."""
        await self._transactions().abort_transaction(self.sender.drop_queued,
                                                     self._wait_aborted)

    async def _wait_aborted(self) -> None:
        """Wait for the in-flight batches of an aborted transaction (a retry they come
        back as is dropped too), within ``max.block.ms``."""
        deadline = monotonic_s() + self.config.max_block_ms / 1000
        while self.accumulator.has_incomplete:
            self.sender.drop_queued(TransactionAbortable("the transaction was aborted"))
            if not self.accumulator.has_incomplete:
                return
            remaining = deadline - monotonic_s()
            if remaining <= 0:
                raise TimeoutError("abort_transaction: batches still in flight after "
                                   "max.block.ms")
            self.sender.idle.clear()
            await wait_event(self.sender.idle, min(remaining, 0.05))

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None,
                            **kwargs: Any) -> Any:
        future = await self.send(topic, value, key, **kwargs)
        if isinstance(future, list):
            return [await f for f in future]
        return await future

    async def _wait_for_topic(self, topic: str) -> None:
        deadline = monotonic_s() + self.config.max_block_ms / 1000
        self.client.add_topics([topic])
        while True:
            metadata = await self.client.refresh_metadata([topic])
            info = metadata.topics.get(topic)
            if info is not None and info.error_code == ErrorCode.none and info.partitions:
                return
            if monotonic_s() >= deadline:
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

    @property
    def metrics(self) -> dict[str, Any]:
        sender = self.sender
        return {"in_flight": dict(sender.in_flight),
                "buffered_bytes": self.accumulator.used_bytes,
                "producer_id": sender.producer_id}


async def _await_stopped(tasks: list[asyncio.Task[Any]], timeout: float, owner: str) -> None:
    """Wait (bounded) for cancelled tasks to finish; a task that ignores its cancellation is
    reported, never waited for forever."""
    if not tasks:
        return
    _done, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        log.error("%s close: task %s did not stop within %.0fs of cancellation; "
                  "abandoning it", owner, task.get_name(), timeout)
