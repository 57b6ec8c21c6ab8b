"""Idempotent acks=all producers of the long runs: librdkafka's and odradek's own client.

Each produces ``encode(name, seq)`` values with ``seq`` counting up from 0, at a steady rate
to randomly chosen topics (half keyed, half on the sticky partitioner), and journals every
delivery report. A failed delivery is journaled and never re-sent: a sequence number is
written at most once by the application, so a second copy in the log is the cluster's (or
the client's) doing. Bounded by ``seconds`` and ``max_records``; the final flush is bounded
by the delivery timeout.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

from tests.longrun.journal import Journal
from tests.longrun.values import decode, encode

__all__ = ["produce_confluent", "produce_odradek"]

TICK_S = 0.02


class _Pacer:
    """How many records are due each tick at ``rate`` per second; a stalled producer does
    not make up for lost time in a burst (at most half a second of backlog)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.credit = 0.0
        self.last = time.monotonic()

    def due(self) -> int:
        now = time.monotonic()
        self.credit = min(self.credit + (now - self.last) * self.rate, self.rate / 2 + 1)
        self.last = now
        whole = int(self.credit)
        self.credit -= whole
        return whole


def _choose(rng: random.Random, topics: list[str], seq: int) -> tuple[str, bytes | None]:
    topic = rng.choice(topics)
    key = f"k{seq % 97}".encode() if rng.random() < 0.5 else None
    return topic, key


def produce_confluent(spec: dict[str, Any]) -> None:
    from confluent_kafka import KafkaError, Message, Producer

    name: str = spec["name"]
    journal = Journal(Path(spec["journal"]))
    rng = random.Random(spec.get("seed", 0))
    producer = Producer({
        "bootstrap.servers": spec["bootstrap"],
        "client.id": name,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "compression.type": spec.get("compression", "none"),
        "message.timeout.ms": int(spec["delivery_timeout_s"] * 1000),
        "retry.backoff.ms": 100,
        "socket.timeout.ms": 10000,
        "topic.metadata.refresh.interval.ms": 5000,
        # Idempotence state changes, epoch bumps and the errors behind them go to the
        # worker's log (a dozen lines per incarnation): why a record was re-sent.
        "debug": "eos",
    })

    def report(err: KafkaError | None, msg: Message) -> None:
        producer_name, seq = decode(msg.value())
        if err is None:
            journal.write(f"A {producer_name} {seq} {msg.topic()} {msg.partition()} "
                          f"{msg.offset()} {time.time():.3f}")
            journal.count("acked")
        else:
            journal.write(f"F {producer_name} {seq} {msg.topic()} {err.name()} {err.str()}")
            journal.count("failed")

    pacer = _Pacer(spec["rate"])
    deadline = time.monotonic() + spec["seconds"]
    seq = 0
    try:
        while time.monotonic() < deadline and seq < spec["max_records"]:
            for _ in range(min(pacer.due(), spec["max_records"] - seq)):
                topic, key = _choose(rng, spec["topics"], seq)
                try:
                    producer.produce(topic, encode(name, seq), key=key, on_delivery=report)
                except BufferError:
                    journal.count("buffer_full")
                    break
                seq += 1
            journal.counters["sent"] = seq
            producer.poll(TICK_S)
            journal.maybe_write_stats()
        unresolved = producer.flush(spec["delivery_timeout_s"] + 10)
        journal.counters["unresolved"] = unresolved
    finally:
        journal.close()


async def _produce_odradek(spec: dict[str, Any]) -> None:
    from odradek.client import AsyncProducer, KafkaClientError, RecordMetadata

    name: str = spec["name"]
    journal = Journal(Path(spec["journal"]))
    rng = random.Random(spec.get("seed", 0))
    compression = spec.get("compression", "none")
    producer = AsyncProducer(
        spec["bootstrap"], client_id=name, acks="all", enable_idempotence=True, linger_ms=5,
        compression_type=None if compression == "none" else compression,
        delivery_timeout_ms=int(spec["delivery_timeout_s"] * 1000),
        request_timeout_ms=10_000)
    await producer.start()

    def reporter(seq: int, topic: str) -> Any:
        def report(err: BaseException | None, meta: RecordMetadata | None) -> None:
            if err is None and meta is not None:
                journal.write(f"A {name} {seq} {meta.topic} {meta.partition} {meta.offset} "
                              f"{time.time():.3f}")
                journal.count("acked")
            else:
                detail = " ".join(f"{type(err).__name__} {err}".split())
                journal.write(f"F {name} {seq} {topic} {detail}")
                journal.count("failed")
        return report

    pacer = _Pacer(spec["rate"])
    deadline = time.monotonic() + spec["seconds"]
    seq = 0
    try:
        while time.monotonic() < deadline and seq < spec["max_records"]:
            for _ in range(min(pacer.due(), spec["max_records"] - seq)):
                topic, key = _choose(rng, spec["topics"], seq)
                try:
                    await producer.send(topic, encode(name, seq), key=key,
                                        on_delivery=reporter(seq, topic))
                except KafkaClientError as exc:  # buffer full for max.block.ms, or fatal
                    journal.write(f"F {name} {seq} {topic} not-sent {type(exc).__name__}")
                    journal.count("not_sent")
                    await asyncio.sleep(0.5)
                seq += 1
            journal.counters["sent"] = seq
            journal.maybe_write_stats()
            await asyncio.sleep(TICK_S)
        try:
            await producer.flush(spec["delivery_timeout_s"] + 10)
            journal.counters["unresolved"] = 0
        except TimeoutError as exc:
            journal.counters["unresolved"] = str(exc)
    finally:
        await producer.close(10)
        journal.close()


def produce_odradek(spec: dict[str, Any]) -> None:
    asyncio.run(_produce_odradek(spec))
