"""One small adapter per real Kafka client, so every interop test runs unchanged on each.

The adapters use only what an application would: the client's producer (with its own
partitioner, batching and compression), a consumer with manual assignment (``assign`` +
``seek``: these tests pin partitions and offsets; the group tests exercise subscription
and commits) and the client's offset lookups. Each blocking call is bounded by a
deadline and raises :class:`InteropError` with what it was waiting for.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

import confluent_kafka
import kafka
import kafka.errors
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.structs import TopicPartition as AioTopicPartition

from tests.harness.kafka import located

Header = tuple[str, bytes]


class InteropError(AssertionError):
    """A client call failed or did not finish within its deadline."""


@dataclass(frozen=True)
class Message:
    key: bytes
    value: bytes
    headers: tuple[Header, ...]
    timestamp: int  # CreateTime, epoch milliseconds


@dataclass(frozen=True)
class Delivery:
    partition: int
    offset: int | None  # None when the producer cannot know it (acks=0)


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp: int


@dataclass(frozen=True)
class ProducerMode:
    """The delivery settings of one producer in the matrix."""

    name: str
    acks: int  # 0, 1 or -1 (all)
    idempotent: bool

    @property
    def acks_label(self) -> str:
        return "all" if self.acks == -1 else str(self.acks)


IDEMPOTENT = ProducerMode("idempotent", -1, True)
ACKS_ALL = ProducerMode("acks_all", -1, False)
ACKS_1 = ProducerMode("acks1", 1, False)
ACKS_0 = ProducerMode("acks0", 0, False)
MODES = (IDEMPOTENT, ACKS_1, ACKS_0, ACKS_ALL)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _fail_after(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise InteropError(f"timed out: {what}")


def _headers(raw: Sequence[tuple[str, bytes | None]] | None) -> tuple[Header, ...]:
    return tuple((key, value if value is not None else b"") for key, value in (raw or ()))


class Client:
    """What every adapter offers; ``name`` is the pytest id."""

    name = ""

    def produce(self, bootstrap: str, topic: str, messages: Sequence[Message], codec: str,
                mode: ProducerMode, timeout: float) -> list[Delivery]:
        raise NotImplementedError

    def consume(self, bootstrap: str, topic: str, start: dict[int, int], end: dict[int, int],
                timeout: float) -> dict[int, list[Record]]:
        """Read every partition in ``start`` from its start offset up to (excluding) its end
        offset with manual assignment; returns the records per partition in fetch order."""
        raise NotImplementedError

    def end_offsets(self, bootstrap: str, topic: str, partitions: Sequence[int],
                    timeout: float) -> dict[int, int]:
        raise NotImplementedError

    def offsets_for_times(self, bootstrap: str, topic: str, timestamps: dict[int, int],
                          timeout: float) -> dict[int, int | None]:
        """Per partition: the earliest offset whose timestamp is >= the given one (None when
        there is none)."""
        raise NotImplementedError


# --------------------------------------------------------------------------- confluent-kafka


class ConfluentClient(Client):
    name = "confluent"

    def _producer_config(self, bootstrap: str, codec: str, mode: ProducerMode) -> dict:
        config = {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "acks": mode.acks,
            "enable.idempotence": mode.idempotent,
            "linger.ms": 5,
            "queue.buffering.max.messages": 200_000,
        }
        if not mode.idempotent:
            # No retries: a retried batch could be reordered; a failure must fail the test.
            config["retries"] = 0
        return config

    def _consumer(self, bootstrap: str, extra: dict | None = None) -> confluent_kafka.Consumer:
        # librdkafka requires a group.id even for assign(); without subscribe() and without
        # commits it fetches from explicit offsets without a group coordinator.
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": "odradek-interop-assign-only",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": False,
        }
        config.update(extra or {})
        return confluent_kafka.Consumer(config)

    def produce(self, bootstrap, topic, messages, codec, mode, timeout):
        producer = confluent_kafka.Producer(self._producer_config(bootstrap, codec, mode))
        deliveries: list[Delivery | None] = [None] * len(messages)
        errors: list[str] = []

        def report(index: int):
            def on_delivery(err, msg):
                if err is not None:
                    errors.append(f"message {index}: {err}")
                    return
                offset = msg.offset()  # None or negative (OFFSET_INVALID) with acks=0
                deliveries[index] = Delivery(
                    msg.partition(), offset if offset is not None and offset >= 0 else None)
            return on_delivery

        deadline = time.monotonic() + timeout
        for index, message in enumerate(messages):
            while True:
                try:
                    producer.produce(topic, message.value, message.key,
                                     headers=list(message.headers),
                                     timestamp=message.timestamp, on_delivery=report(index))
                    break
                except BufferError:
                    producer.poll(0.05)
                    _fail_after(deadline, f"confluent producer queue full at message {index}")
            if index % 1000 == 0:
                producer.poll(0)
        remaining = producer.flush(max(0.0, deadline - time.monotonic()))
        if errors:
            raise InteropError(f"{len(errors)} delivery errors, first: {errors[0]}")
        if remaining:
            raise InteropError(f"timed out: {remaining} messages undelivered after flush")
        missing = [i for i, d in enumerate(deliveries) if d is None]
        if missing:
            raise InteropError(f"no delivery report for {len(missing)} messages")
        return deliveries

    def consume(self, bootstrap, topic, start, end, timeout):
        consumer = self._consumer(bootstrap)
        records: dict[int, list[Record]] = {p: [] for p in start}
        try:
            consumer.assign([confluent_kafka.TopicPartition(topic, p, o)
                             for p, o in start.items()])
            deadline = time.monotonic() + timeout
            position = dict(start)
            while any(position[p] < end[p] for p in start):
                _fail_after(deadline, f"confluent consumer at {position}, want {end}")
                for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                    if msg.error() is not None:
                        raise InteropError(f"consumer error: {msg.error()}")
                    _ts_type, ts = msg.timestamp()
                    p, offset = located(msg)
                    if offset >= end[p]:
                        continue
                    # confluent's stub reuses produce()'s header input type (dict | list, str
                    # values); a consumed message's headers() is list[tuple[str, bytes | None]].
                    headers = _headers(msg.headers())  # type: ignore[arg-type]
                    records[p].append(Record(p, offset, msg.key(), msg.value(), headers, ts))
                    position[p] = offset + 1
        finally:
            consumer.close()
        return records

    def end_offsets(self, bootstrap, topic, partitions, timeout):
        consumer = self._consumer(bootstrap)
        try:
            return {p: consumer.get_watermark_offsets(
                confluent_kafka.TopicPartition(topic, p), timeout=timeout, cached=False)[1]
                for p in partitions}
        finally:
            consumer.close()

    def offsets_for_times(self, bootstrap, topic, timestamps, timeout):
        consumer = self._consumer(bootstrap)
        try:
            found = consumer.offsets_for_times(
                [confluent_kafka.TopicPartition(topic, p, ts) for p, ts in timestamps.items()],
                timeout=timeout)
        finally:
            consumer.close()
        result: dict[int, int | None] = {}
        for tp in found:
            if tp.error is not None:
                raise InteropError(f"offsets_for_times: {tp.error}")
            result[tp.partition] = tp.offset if tp.offset >= 0 else None
        return result


# ------------------------------------------------------------------------------ kafka-python


class KafkaPythonClient(Client):
    name = "kafka-python"

    def _consumer(self, bootstrap: str, **extra) -> kafka.KafkaConsumer:
        return kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                   enable_auto_commit=False, auto_offset_reset="none",
                                   request_timeout_ms=30_000, **extra)

    def produce(self, bootstrap, topic, messages, codec, mode, timeout):
        producer = kafka.KafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type=None if codec == "none" else codec,
            acks="all" if mode.acks == -1 else mode.acks,
            enable_idempotence=mode.idempotent,
            retries=2**31 - 1 if mode.idempotent else 0,
            linger_ms=5,
            batch_size=64 * 1024,
            max_block_ms=int(timeout * 1000),
        )
        try:
            futures = [producer.send(topic, value=m.value, key=m.key, headers=list(m.headers),
                                     timestamp_ms=m.timestamp) for m in messages]
            producer.flush(timeout=timeout)
            deliveries = []
            for index, future in enumerate(futures):
                if not future.is_done:
                    raise InteropError(f"timed out: message {index} not acknowledged")
                if future.failed():
                    raise InteropError(f"message {index}: {future.exception!r}")
                meta = future.value
                deliveries.append(Delivery(meta.partition,
                                           meta.offset if meta.offset >= 0 else None))
            return deliveries
        finally:
            producer.close(timeout=10)

    def consume(self, bootstrap, topic, start, end, timeout):
        consumer = self._consumer(bootstrap, max_poll_records=10_000)
        records: dict[int, list[Record]] = {p: [] for p in start}
        try:
            tps = {p: kafka.TopicPartition(topic, p) for p in start}
            consumer.assign(list(tps.values()))
            for p, offset in start.items():
                consumer.seek(tps[p], offset)
            deadline = time.monotonic() + timeout
            position = dict(start)
            while any(position[p] < end[p] for p in start):
                _fail_after(deadline, f"kafka-python consumer at {position}, want {end}")
                for tp, batch in consumer.poll(timeout_ms=500).items():
                    for r in batch:
                        if r.offset >= end[tp.partition]:
                            continue
                        records[tp.partition].append(Record(
                            tp.partition, r.offset, r.key, r.value, _headers(r.headers),
                            r.timestamp))
                        position[tp.partition] = r.offset + 1
        finally:
            consumer.close()
        return records

    def end_offsets(self, bootstrap, topic, partitions, timeout):
        consumer = self._consumer(bootstrap)
        try:
            found = consumer.end_offsets([kafka.TopicPartition(topic, p) for p in partitions])
            return {tp.partition: offset for tp, offset in found.items()}
        finally:
            consumer.close()

    def offsets_for_times(self, bootstrap, topic, timestamps, timeout):
        consumer = self._consumer(bootstrap)
        try:
            found = consumer.offsets_for_times(
                {kafka.TopicPartition(topic, p): ts for p, ts in timestamps.items()})
        finally:
            consumer.close()
        return {tp.partition: (o.offset if o is not None else None) for tp, o in found.items()}


# ---------------------------------------------------------------------------------- aiokafka


class AioKafkaClient(Client):
    name = "aiokafka"

    def produce(self, bootstrap, topic, messages, codec, mode, timeout):
        return asyncio.run(asyncio.wait_for(
            self._produce(bootstrap, topic, messages, codec, mode), timeout))

    async def _produce(self, bootstrap, topic, messages, codec, mode):
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type=None if codec == "none" else codec,
            acks="all" if mode.acks == -1 else mode.acks,
            enable_idempotence=mode.idempotent,
            linger_ms=5,
            max_batch_size=64 * 1024,
        )
        await producer.start()
        try:
            futures = []
            for m in messages:
                futures.append(await producer.send(topic, value=m.value, key=m.key,
                                                   headers=list(m.headers),
                                                   timestamp_ms=m.timestamp))
            metas = await asyncio.gather(*futures)
            partitions = sorted(producer.client.cluster.partitions_for_topic(topic) or ())
        finally:
            await producer.stop()
        # With acks=0 aiokafka resolves the future with None (no metadata at all); the
        # partition is then what its default (murmur2) key partitioner chose.
        partitioner = DefaultPartitioner()
        return [Delivery(meta.partition, meta.offset if meta.offset >= 0 else None)
                if meta is not None
                else Delivery(partitioner(m.key, partitions, partitions), None)
                for m, meta in zip(messages, metas, strict=True)]

    def consume(self, bootstrap, topic, start, end, timeout):
        return asyncio.run(self._consume(bootstrap, topic, start, end, timeout))

    async def _consume(self, bootstrap, topic, start, end, timeout):
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="none")
        await consumer.start()
        records: dict[int, list[Record]] = {p: [] for p in start}
        try:
            tps = {p: AioTopicPartition(topic, p) for p in start}
            consumer.assign(list(tps.values()))
            for p, offset in start.items():
                consumer.seek(tps[p], offset)
            deadline = time.monotonic() + timeout
            position = dict(start)
            while any(position[p] < end[p] for p in start):
                _fail_after(deadline, f"aiokafka consumer at {position}, want {end}")
                batches = await consumer.getmany(timeout_ms=500, max_records=10_000)
                for tp, batch in batches.items():
                    for r in batch:
                        if r.offset >= end[tp.partition]:
                            continue
                        records[tp.partition].append(Record(
                            tp.partition, r.offset, r.key, r.value, _headers(r.headers),
                            r.timestamp))
                        position[tp.partition] = r.offset + 1
        finally:
            await consumer.stop()
        return records

    def end_offsets(self, bootstrap, topic, partitions, timeout):
        async def run():
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                        enable_auto_commit=False)
            await consumer.start()
            try:
                found = await consumer.end_offsets([AioTopicPartition(topic, p)
                                                    for p in partitions])
            finally:
                await consumer.stop()
            return {tp.partition: offset for tp, offset in found.items()}

        return asyncio.run(asyncio.wait_for(run(), timeout))

    def offsets_for_times(self, bootstrap, topic, timestamps, timeout):
        async def run():
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                        enable_auto_commit=False)
            await consumer.start()
            try:
                found = await consumer.offsets_for_times(
                    {AioTopicPartition(topic, p): ts for p, ts in timestamps.items()})
            finally:
                await consumer.stop()
            return {tp.partition: (o.offset if o is not None else None)
                    for tp, o in found.items()}

        return asyncio.run(asyncio.wait_for(run(), timeout))


CLIENTS: tuple[Client, ...] = (ConfluentClient(), KafkaPythonClient(), AioKafkaClient())

__all__ = [
    "ACKS_0",
    "ACKS_1",
    "ACKS_ALL",
    "CLIENTS",
    "CODECS",
    "IDEMPOTENT",
    "MODES",
    "Client",
    "Delivery",
    "InteropError",
    "Message",
    "ProducerMode",
    "Record",
    "kafka",
]
