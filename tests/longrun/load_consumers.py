"""Consumer-group members of the long runs: librdkafka's consumer and odradek's own.

A member joins ``group`` (eager ``range`` or ``cooperative-sticky``), starts from the
committed offset (else the earliest), journals every record its poll returns together with
the number of its current ownership of that partition (a new number at each assignment),
commits what it has consumed every second and on revocation, and leaves the group after
``seconds``: the test starts and stops members so the group keeps rebalancing.

Commits are synchronous and journaled only when acknowledged, and the journal is flushed
before each commit, so the checker can hold the group to "every offset below the committed
one was consumed by some member" and "an acknowledged commit is never lost".
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from tests.longrun.journal import Journal
from tests.longrun.values import decode

__all__ = ["consume_confluent", "consume_odradek"]

COMMIT_EVERY_S = 1.0


class _Ownership:
    """The partitions a member owns now, each with its session number and position."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.sessions: dict[tuple[str, int], int] = {}
        self.positions: dict[tuple[str, int], int] = {}
        self.committed: dict[tuple[str, int], int] = {}
        self.counter = 0

    def assigned(self, partitions: list[tuple[str, int]]) -> None:
        for tp in partitions:
            self.counter += 1
            self.sessions[tp] = self.counter
            self.positions.pop(tp, None)
            self.committed.pop(tp, None)
            self.journal.write(f"S {self.counter} {tp[0]} {tp[1]}")
        self.journal.count("assignments", len(partitions))

    def revoked(self, partitions: list[tuple[str, int]]) -> None:
        for tp in partitions:
            self.sessions.pop(tp, None)
            self.positions.pop(tp, None)
            self.journal.write(f"V {tp[0]} {tp[1]}")

    def record(self, topic: str, partition: int, offset: int, value: bytes | None) -> None:
        session = self.sessions.get((topic, partition))
        if session is None:
            self.journal.write(f"U {topic} {partition} {offset}")
            self.journal.count("unowned")
            return
        producer, seq = decode(value)
        self.journal.write(f"R {session} {topic} {partition} {offset} {producer or '-'} {seq}")
        self.positions[(topic, partition)] = offset + 1
        self.journal.count("consumed")

    def to_commit(self, only: list[tuple[str, int]] | None = None) -> dict[tuple[str, int], int]:
        wanted = self.positions if only is None else {
            tp: self.positions[tp] for tp in only if tp in self.positions}
        return {tp: offset for tp, offset in wanted.items() if self.committed.get(tp) != offset}

    def acknowledged(self, offsets: dict[tuple[str, int], int]) -> None:
        for (topic, partition), offset in offsets.items():
            self.committed[(topic, partition)] = offset
            self.journal.write(f"C {topic} {partition} {offset}")
        self.journal.count("commits", len(offsets))

    def failed(self, offsets: dict[tuple[str, int], int], error: str) -> None:
        detail = " ".join(error.split())[:200]
        for (topic, partition), offset in offsets.items():
            self.journal.write(f"X {topic} {partition} {offset} {detail}")
        self.journal.count("commit_failures")


def consume_confluent(spec: dict[str, Any]) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    journal = Journal(Path(spec["journal"]))
    journal.write(f"H {spec['group']} {spec['name']} confluent {spec['strategy']}")
    owned = _Ownership(journal)
    consumer = Consumer({
        "bootstrap.servers": spec["bootstrap"],
        "group.id": spec["group"],
        "client.id": spec["name"],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": spec["strategy"],
        "topic.metadata.refresh.interval.ms": 5000,
    })

    def commit(only: list[tuple[str, int]] | None = None) -> None:
        offsets = owned.to_commit(only)
        if not offsets:
            return
        journal.flush()
        try:
            result = consumer.commit(offsets=[TopicPartition(t, p, o)
                                              for (t, p), o in offsets.items()],
                                     asynchronous=False)
        except KafkaException as exc:
            owned.failed(offsets, str(exc))
            return
        done = {(tp.topic, tp.partition): tp.offset for tp in result or []
                if tp.error is None}
        owned.acknowledged(done)
        failed = {tp: o for tp, o in offsets.items() if tp not in done}
        if failed:
            owned.failed(failed, "partition error in commit response")

    def on_assign(_consumer: Any, partitions: list[Any]) -> None:
        owned.assigned([(tp.topic, tp.partition) for tp in partitions])

    def on_revoke(_consumer: Any, partitions: list[Any]) -> None:
        revoked = [(tp.topic, tp.partition) for tp in partitions]
        commit(revoked)
        owned.revoked(revoked)

    def on_lost(_consumer: Any, partitions: list[Any]) -> None:
        owned.revoked([(tp.topic, tp.partition) for tp in partitions])

    consumer.subscribe(spec["topics"], on_assign=on_assign, on_revoke=on_revoke,
                       on_lost=on_lost)
    deadline = time.monotonic() + spec["seconds"]
    last_commit = time.monotonic()
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                if message.error() is not None:
                    journal.count("errors")
                    continue
                owned.record(str(message.topic()), int(message.partition() or 0),
                             int(message.offset() or 0), message.value())
            if time.monotonic() - last_commit >= COMMIT_EVERY_S:
                commit()
                last_commit = time.monotonic()
            journal.maybe_write_stats()
        commit()
    finally:
        consumer.close()  # leaves the group (on_revoke runs first)
        journal.close()


async def _consume_odradek(spec: dict[str, Any]) -> None:
    from odradek.client import AsyncConsumer, KafkaClientError, TopicPartition

    journal = Journal(Path(spec["journal"]))
    journal.write(f"H {spec['group']} {spec['name']} odradek {spec['strategy']}")
    owned = _Ownership(journal)
    consumer = AsyncConsumer(
        bootstrap_servers=spec["bootstrap"], group_id=spec["group"], client_id=spec["name"],
        enable_auto_commit=False, auto_offset_reset="earliest",
        partition_assignment_strategy=(spec["strategy"],), request_timeout_ms=10_000)

    async def commit(only: list[tuple[str, int]] | None = None) -> None:
        offsets = owned.to_commit(only)
        if not offsets:
            return
        journal.flush()
        try:
            await consumer.commit({TopicPartition(t, p): o for (t, p), o in offsets.items()})
        except (KafkaClientError, TimeoutError) as exc:
            owned.failed(offsets, f"{type(exc).__name__} {exc}")
            return
        owned.acknowledged(offsets)

    def on_assign(partitions: list[Any]) -> None:
        owned.assigned([(tp.topic, tp.partition) for tp in partitions])

    async def on_revoke(partitions: list[Any]) -> None:
        revoked = [(tp.topic, tp.partition) for tp in partitions]
        await commit(revoked)
        owned.revoked(revoked)

    consumer.subscribe(spec["topics"], on_assign=on_assign, on_revoke=on_revoke)
    await consumer.start()
    deadline = time.monotonic() + spec["seconds"]
    last_commit = time.monotonic()
    try:
        while time.monotonic() < deadline:
            # Poll and the rebalance listeners run on this one loop, so ownership cannot
            # change while a poll's records are journaled.
            try:
                records = await consumer.poll(500)
            except KafkaClientError:
                journal.count("errors")
                await asyncio.sleep(0.2)
                continue
            for record in records:
                owned.record(record.topic, record.partition, record.offset, record.value)
            if time.monotonic() - last_commit >= COMMIT_EVERY_S:
                await commit()
                last_commit = time.monotonic()
            journal.maybe_write_stats()
        await commit()
    finally:
        await asyncio.wait_for(consumer.close(commit=False), 60)
        journal.close()


def consume_odradek(spec: dict[str, Any]) -> None:
    asyncio.run(_consume_odradek(spec))
