"""Rebalance time of a join, per group protocol, with odradek's own consumer.

A group of ``size - 1`` members (AsyncConsumers sharing one event loop, each with its own
connections) consumes a topic of ``2 * size`` partitions while a producer writes to every
partition; once every member owns partitions and consumes, one member joins. Measured: from
the newcomer's construction until **every** member has consumed a record after its own last
assignment change (or after the join, for a member the rebalance did not touch), the group
owning every partition exactly once. The newcomer then leaves, the group settles, and the
next cycle joins again.

Protocols: ``classic-eager`` (JoinGroup/SyncGroup, ``range``: every member revokes
everything, stop-the-world), ``classic-cooperative`` (``cooperative-sticky``, KIP-429: two
rounds, only moved partitions stop) and ``consumer`` (KIP-848: no barrier; the members
owning what moves revoke at their next heartbeat, the newcomer takes it at its own). Both
heartbeat every 500 ms (client setting for classic, ``group.consumer.heartbeat.interval.ms``
on the broker for the consumer protocol), so the comparison is of the protocols, not of
their default timers.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from odradek.client import AsyncConsumer, TopicPartition

__all__ = ["PROTOCOLS", "join_times"]

HEARTBEAT_MS = 500
WAIT_S = 90.0
PROTOCOLS: dict[str, dict[str, Any]] = {
    "classic-eager": {"partition_assignment_strategy": ["range"]},
    "classic-cooperative": {"partition_assignment_strategy": ["cooperative-sticky"]},
    "consumer": {"group_protocol": "consumer"},
}


class Watched:
    """One member: its consumer, when its assignment last changed, when it got records."""

    def __init__(self, bootstrap: str, topic: str, group: str, settings: dict[str, Any]) -> None:
        self.changed = 0.0
        self.polls_with_records: list[float] = []
        self.consumer = AsyncConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="latest",
            heartbeat_interval_ms=HEARTBEAT_MS, session_timeout_ms=10_000,
            on_assign=self._changed, on_revoke=self._changed, **settings)
        self.task = asyncio.get_running_loop().create_task(self._run())

    def _changed(self, partitions: list[TopicPartition]) -> None:
        if partitions:
            self.changed = time.monotonic()

    async def _run(self) -> None:
        while True:
            if await self.consumer.poll(100):
                self.polls_with_records.append(time.monotonic())

    def consumed_since(self, since: float) -> float | None:
        return next((t for t in self.polls_with_records if t > since), None)

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.consumer.close()


def _settled(members: Sequence[Watched], partitions: int, since: float) -> float | None:
    """The time every member consumed again after ``since`` and its last change, if the
    group owns every partition once and every member owns some; else None."""
    owned = [tp for m in members for tp in m.consumer.assignment()]
    if len(owned) != partitions or len(set(owned)) != partitions or not all(
            m.consumer.assignment() for m in members):
        return None
    resumed = [m.consumed_since(max(since, m.changed)) for m in members]
    return None if None in resumed else max(t for t in resumed if t is not None)


async def _wait(condition: Callable[[], float | None], what: str) -> float:
    deadline = time.monotonic() + WAIT_S
    while (found := condition()) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
    return found


async def join_times(bootstrap: str, topic: str, partitions: int, protocol: str, size: int,
                     cycles: int) -> list[float]:
    """Seconds from a join until every member consumes again, ``cycles`` times."""
    settings = PROTOCOLS[protocol]
    group = f"bench-join-{protocol}-{uuid.uuid4().hex[:8]}"
    members = [Watched(bootstrap, topic, group, settings) for _ in range(size - 1)]
    times: list[float] = []
    try:
        await _wait(partial(_settled, members, partitions, 0.0), "the first assignment")
        for _ in range(cycles):
            joined_at = time.monotonic()
            newcomer = Watched(bootstrap, topic, group, settings)
            members.append(newcomer)
            resumed = await _wait(partial(_settled, members, partitions, joined_at),
                                  f"{protocol}: every member to consume after a join")
            times.append(resumed - joined_at)
            members.remove(newcomer)
            await newcomer.close()
            left_at = time.monotonic()
            await _wait(partial(_settled, members, partitions, left_at), "the leave to settle")
    finally:
        await asyncio.gather(*(m.close() for m in members), return_exceptions=True)
    return times
