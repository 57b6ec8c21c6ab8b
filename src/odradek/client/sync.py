"""Synchronous facade: the async clients driven by one background event-loop thread.

All clients of a process share one daemon thread running one asyncio loop (never a thread per
partition or per client). Blocking calls submit a coroutine to that loop and wait for it. The
producer's ``send`` is the exception: it partitions and appends in the caller's thread (the
accumulator is thread-safe) and only pokes the loop when a batch is created or fills up, so the
per-record cost is the encoding alone.

Delivery callbacks and ``RecordFuture.add_done_callback`` run on the loop thread: keep them
short.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from .accumulator import DeliveryCallback, RecordFuture
from .admin import AsyncAdminClient
from .batch_codec import ConsumerRecord
from .consumer import AsyncConsumer
from .errors import ClientClosed, KafkaClientError
from .metadata import TopicPartition
from .offsets import OffsetAndTimestamp
from .producer import AsyncProducer
from .transactions import ConsumerGroupMetadata

__all__ = ["AdminClient", "Consumer", "Producer", "run"]

T = TypeVar("T")

#: Beyond the producer's own close deadline: its shutdown grace for tasks and sockets.
_CLOSE_SLACK = 15.0


class _LoopThread:
    _lock = threading.Lock()
    _instance: _LoopThread | None = None

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="odradek-client-loop",
                                       daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @classmethod
    def get(cls) -> _LoopThread:
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the shared client loop and wait for its result."""
    loop_thread = _LoopThread.get()
    if threading.current_thread() is loop_thread.thread:
        raise RuntimeError("blocking client call made on the client's own event loop thread "
                           "(from a callback?); use the async API there")
    future = asyncio.run_coroutine_threadsafe(coro, loop_thread.loop)
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()
        raise


class Producer:
    """``Producer("host:9092", compression_type="zstd")``; see :class:`AsyncProducer`."""

    def __init__(self, bootstrap_servers: str | Iterable[str], **settings: Any) -> None:
        self._async = run(self._create(bootstrap_servers, settings))
        self._closed = False
        atexit.register(self._atexit)

    @staticmethod
    async def _create(bootstrap: str | Iterable[str], settings: dict[str, Any]
                      ) -> AsyncProducer:
        producer = AsyncProducer(bootstrap, **settings)
        await producer.start()
        return producer

    def send(self, topic: str, value: Any = None, key: Any = None,
             headers: Sequence[tuple[str, bytes | None]] | None = None,
             partition: int | None = None, timestamp: int | None = None,
             on_delivery: DeliveryCallback | None = None) -> Any:
        """Buffer one record and return its :class:`RecordFuture` (``.get()`` blocks for the
        offset). With a list of messages (the paper's ``send(topic, messages)``) returns a
        list of futures."""
        if (value.__class__ is bytes and key is None and headers is None and partition is None
                and timestamp is None and on_delivery is None and not self._closed):
            # The common record: no conversions, no partitioner call, no thread hop.
            producer = self._async
            accumulator = producer.accumulator
            if (producer.sender.fatal is None and producer.transactions is None
                    and accumulator.used_bytes < accumulator.buffer_memory):
                appended = producer.append_value(topic, value)
                if appended is not None:
                    if appended[1]:
                        producer.wake_threadsafe()
                    return appended[0]
        if isinstance(value, (list, tuple)):
            return [self.send(topic, m, key, headers, partition, timestamp, on_delivery)
                    for m in value]
        producer = self._ready_for(topic)
        accumulator = producer.accumulator
        if not accumulator.has_space() and not accumulator.wait_for_space(
                producer.config.max_block_ms / 1000):
            raise KafkaClientError("buffer.memory full for max.block.ms")
        future, wake = producer.append(topic, value, key, headers, partition, timestamp,
                                       on_delivery)
        if wake:
            producer.wake_threadsafe()
        return future

    def _ready_for(self, topic: str) -> AsyncProducer:
        """The async producer, once it can take records for ``topic``: open, not failed
        fatally, and with the topic's metadata (waited for up to ``max.block.ms``)."""
        producer = self._async
        if self._closed:
            raise ClientClosed("producer is closed")
        producer.check_sendable()
        if not producer._partitions(topic, producer.client.metadata)[0]:
            run(producer._wait_for_topic(topic))
        return producer

    def partitions(self, topic: str) -> tuple[list[int], list[int]]:
        """All and available partitions of ``topic``, waiting (``max.block.ms``) for a new
        topic's metadata as :meth:`send` does."""
        producer = self._ready_for(topic)
        return producer._partitions(topic, producer.client.metadata)

    def send_encoded(self, topic: str,
                     batches: Iterable[tuple[int, bytes | bytearray | memoryview, int]],
                     timestamp: int) -> list[RecordFuture]:
        """Buffer whole batches of records already encoded as RecordBatch v2 bodies: each
        ``(partition, records, count)`` is ``count`` records with offset deltas
        0..count-1 and timestamp deltas from ``timestamp`` (e.g. from the Spark sink's
        compiled encoder), queued as one producer batch. Returns the future of each batch's
        last record; it resolves when the whole batch is acknowledged or has failed.
        Sequencing, acks, retries and ordering are those of :meth:`send`; the sender is
        woken once for all of them."""
        producer = self._ready_for(topic)
        accumulator = producer.accumulator
        futures: list[RecordFuture] = []
        try:
            for partition, records, count in batches:
                if not accumulator.has_space():
                    producer.wake_threadsafe()
                    if not accumulator.wait_for_space(producer.config.max_block_ms / 1000):
                        raise KafkaClientError("buffer.memory full for max.block.ms")
                futures.append(producer.append_encoded(topic, partition, records, count,
                                                       timestamp)[0])
        finally:
            if futures:
                producer.wake_threadsafe()
        return futures

    def send_and_wait(self, topic: str, value: Any = None, key: Any = None,
                      timeout: float | None = None, **kwargs: Any) -> Any:
        future = self.send(topic, value, key, **kwargs)
        if isinstance(future, list):
            return [f.get(timeout) for f in future]
        return future.get(timeout)

    def flush(self, timeout: float | None = None) -> None:
        """Wait for every buffered record (at most ``timeout`` s; without one, at most
        ``delivery.timeout.ms`` plus grace); ``TimeoutError`` says how many are left."""
        run(self._async.flush(timeout))

    # Transactions (a producer made with ``transactional_id``); see AsyncProducer.

    def init_transactions(self) -> None:
        run(self._async.init_transactions())

    def begin_transaction(self) -> None:
        self._async.begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int],
                                    group_metadata: ConsumerGroupMetadata | str) -> None:
        run(self._async.send_offsets_to_transaction(offsets, group_metadata))

    def commit_transaction(self) -> None:
        run(self._async.commit_transaction())

    def abort_transaction(self) -> None:
        run(self._async.abort_transaction())

    def close(self, timeout: float | None = None) -> None:
        """Deliver what is buffered within ``timeout`` (default ``delivery.timeout.ms``),
        fail the rest with ``ClientClosed``, stop. The blocking wait itself has a deadline
        too, so a wedged client loop cannot hang the caller."""
        if self._closed:
            return
        self._closed = True
        producer = self._async
        bound = producer._flush_bound() if timeout is None else timeout
        run(producer.close(bound), bound + _CLOSE_SLACK)

    def _atexit(self) -> None:
        if not self._closed:
            with contextlib.suppress(Exception):  # interpreter shutdown: nobody to tell
                self.close(30)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def async_producer(self) -> AsyncProducer:
        return self._async


class Consumer:
    """``Consumer("topic", bootstrap_servers=..., group_id=...)``; see :class:`AsyncConsumer`.

    ``for record in consumer:`` is the paper's never-ending blocking stream.
    """

    def __init__(self, *topics: str, **settings: Any) -> None:
        self._async = run(self._create(topics, settings))

    @staticmethod
    async def _create(topics: Sequence[str], settings: dict[str, Any]) -> AsyncConsumer:
        consumer = AsyncConsumer(*topics, **settings)
        await consumer.start()
        return consumer

    def poll(self, timeout_ms: float = 1000, max_records: int | None = None
             ) -> list[ConsumerRecord]:
        return run(self._async.poll(timeout_ms, max_records))

    def __iter__(self) -> Iterator[ConsumerRecord]:
        while True:
            yield from self.poll(1000)

    def subscribe(self, topics: Sequence[str] = (), **listeners: Any) -> None:
        run(self._call(self._async.subscribe, topics, **listeners))

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        run(self._call(self._async.assign, list(partitions)))

    def assignment(self) -> set[TopicPartition]:
        return self._async.assignment()

    def seek(self, tp: TopicPartition | tuple[str, int], offset: int) -> None:
        run(self._call(self._async.seek, tp, offset))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        run(self._call(self._async.seek_to_beginning, *partitions))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        run(self._call(self._async.seek_to_end, *partitions))

    def seek_to_timestamp(self, timestamp_ms: int, *partitions: TopicPartition) -> None:
        run(self._async.seek_to_timestamp(timestamp_ms, *partitions))

    def position(self, tp: TopicPartition | tuple[str, int]) -> int:
        return run(self._async.position(tp))

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]
                          ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return run(self._async.offsets_for_times(timestamps))

    def beginning_offsets(self, partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        return run(self._async.beginning_offsets(list(partitions)))

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return run(self._async.end_offsets(list(partitions)))

    def pause(self, *partitions: TopicPartition) -> None:
        run(self._call(self._async.pause, *partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        run(self._call(self._async.resume, *partitions))

    def paused(self) -> set[TopicPartition]:
        return self._async.paused()

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        run(self._async.commit(offsets))

    def group_metadata(self) -> ConsumerGroupMetadata:
        return self._async.group_metadata()

    def committed(self, tp: TopicPartition | tuple[str, int]) -> int | None:
        return run(self._async.committed(tp))

    def partitions_for_topic(self, topic: str) -> list[int]:
        return run(self._async.partitions_for_topic(topic))

    def topics(self) -> list[str]:
        return run(self._async.topics())

    def close(self, commit: bool = True) -> None:
        run(self._async.close(commit))

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    async def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        # Methods that touch loop-owned state run on the loop thread.
        return fn(*args, **kwargs)


class AdminClient:
    """Blocking wrapper of :class:`AsyncAdminClient`: every coroutine method becomes a plain
    method with the same arguments."""

    def __init__(self, bootstrap_servers: str | Iterable[str], **settings: Any) -> None:
        self._async = AsyncAdminClient(bootstrap_servers, **settings)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._async, name)
        if not asyncio.iscoroutinefunction(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return run(attr(*args, **kwargs))

        return call

    def close(self) -> None:
        run(self._async.close())

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
