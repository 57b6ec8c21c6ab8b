"""OffsetCommit's two paths: answered at once when the append commits at once, or after
the append's high-watermark wait; either way nothing is visible before it is in the log."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import replace

from odradek.coordinator.coordinator import GroupCoordinator
from odradek.coordinator.offsets import OffsetCommitEntry
from odradek.coordinator.offsets_log import InMemoryOffsetsLog
from odradek.coordinator.offsets_topic_format import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from odradek.protocol.errors import ErrorCode, NotEnoughReplicas, NotLeaderOrFollower
from odradek.protocol.records import Record
from odradek.types import TopicPartition

from .helpers import CONFIG, Driver

NONE = ErrorCode.none
ENTRIES = [OffsetCommitEntry("t", p, 100 + p) for p in range(3)]


class HeldOffsetsLog(InMemoryOffsetsLog):
    """An offsets log whose appends wait, as on a leader with followers, until released
    (the records land in the log only then) or failed."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[int, list[Record], asyncio.Future[None]]] = []

    def start_append(self, partition: int, records: list[Record],
                     producer: tuple[int, int] | None = None) -> Awaitable[None] | None:
        future = asyncio.get_running_loop().create_future()
        self.held.append((partition, records, future))
        return future

    def release(self) -> None:
        for partition, records, future in self.held:
            super().start_append(partition, records)
            future.set_result(None)
        self.held.clear()

    def fail(self, exc: BaseException) -> None:
        for _partition, _records, future in self.held:
            future.set_exception(exc)
        self.held.clear()


def _offsets(coordinator: GroupCoordinator, group: str) -> dict[int, int]:
    error, offsets = coordinator.fetch_offsets(group, None)
    assert error is NONE
    return {o.partition: o.offset for o in offsets}


def _logged(log: InMemoryOffsetsLog) -> list[bytes | None]:
    return [r.key for r in log.partitions[0]]


def test_commit_answered_at_once_when_the_append_commits_at_once() -> None:
    async def scenario() -> None:
        log = InMemoryOffsetsLog()
        coordinator = GroupCoordinator(CONFIG, log)
        await coordinator.on_become_leader(0)
        result = coordinator.commit_offsets_nowait("g", "", None, -1, ENTRIES)
        assert result == {("t", 0): NONE, ("t", 1): NONE, ("t", 2): NONE}  # a dict: no wait
        assert _offsets(coordinator, "g") == {0: 100, 1: 101, 2: 102}
        assert len(log.partitions[0]) == 3
        await coordinator.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_commit_refused_at_once_installs_nothing() -> None:
    async def scenario() -> None:
        log = InMemoryOffsetsLog()
        coordinator = GroupCoordinator(CONFIG, log)
        await coordinator.on_become_leader(0)
        log.fail_next.append(NotEnoughReplicas("isr below min.insync.replicas"))
        result = coordinator.commit_offsets_nowait("g", "", None, -1, ENTRIES)
        assert result == {("t", p): ErrorCode.coordinator_not_available for p in range(3)}
        assert _offsets(coordinator, "g") == {}
        assert log.partitions[0] == []
        await coordinator.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_concurrent_commits_of_several_groups_wait_for_their_append() -> None:
    async def scenario() -> None:
        log = HeldOffsetsLog()
        coordinator = GroupCoordinator(CONFIG, log)  # one offsets partition: every group
        await coordinator.on_become_leader(0)
        groups = [f"group-{i}" for i in range(5)]
        pending = [coordinator.commit_offsets(g, "", None, -1,
                                              [OffsetCommitEntry("t", 0, 10 + i)])
                   for i, g in enumerate(groups)]
        tasks = [asyncio.ensure_future(p) for p in pending]
        await asyncio.sleep(0)
        assert len(log.held) == len(groups)
        assert not any(t.done() for t in tasks)
        for group in groups:  # not acknowledged, not visible: not in the log yet
            assert _offsets(coordinator, group) == {}
        log.release()
        results = await asyncio.gather(*tasks)
        assert results == [{("t", 0): NONE}] * len(groups)
        for i, group in enumerate(groups):
            assert _offsets(coordinator, group) == {0: 10 + i}
        assert len(_logged(log)) == len(groups)
        await coordinator.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_failed_append_fails_every_waiting_commit_with_the_mapped_error() -> None:
    async def scenario() -> None:
        for error, expected in ((NotEnoughReplicas(), ErrorCode.coordinator_not_available),
                                (NotLeaderOrFollower(), ErrorCode.not_coordinator)):
            log = HeldOffsetsLog()
            coordinator = GroupCoordinator(CONFIG, log)
            await coordinator.on_become_leader(0)
            tasks = [asyncio.ensure_future(coordinator.commit_offsets(
                f"g{i}", "", None, -1, ENTRIES)) for i in range(3)]
            await asyncio.sleep(0)
            log.fail(error)
            for result in await asyncio.gather(*tasks):
                assert result == {("t", p): expected for p in range(3)}
            for i in range(3):
                assert _offsets(coordinator, f"g{i}") == {}
            assert log.partitions[0] == []
            await coordinator.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_commit_times_out_after_offsets_commit_timeout() -> None:
    async def scenario() -> None:
        log = HeldOffsetsLog()
        coordinator = GroupCoordinator(replace(CONFIG, offset_commit_timeout_ms=50), log)
        await coordinator.on_become_leader(0)
        result = await coordinator.commit_offsets("g", "", None, -1, ENTRIES)
        assert result == {("t", p): ErrorCode.coordinator_not_available for p in range(3)}
        assert _offsets(coordinator, "g") == {}
        await coordinator.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_commit_completing_after_leadership_moved_installs_nothing() -> None:
    async def scenario() -> None:
        log = HeldOffsetsLog()
        coordinator = GroupCoordinator(CONFIG, log)
        await coordinator.on_become_leader(0)
        task = asyncio.ensure_future(coordinator.commit_offsets("g", "", None, -1, ENTRIES))
        await asyncio.sleep(0)
        coordinator.on_resign(0)
        await coordinator.on_become_leader(0)  # a new term, loaded from the log
        log.fail(NotLeaderOrFollower())
        assert await task == {("t", p): ErrorCode.not_coordinator for p in range(3)}
        assert _offsets(coordinator, "g") == {}
        await coordinator.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_commit_records_are_kafkas_bytes() -> None:
    """The shard encodes keys and values inline (one group prefix per request); they must
    be exactly what the reference encoders write, metadata and explicit expiry included."""
    driver = Driver()
    entries = [OffsetCommitEntry("t", 0, 5), OffsetCommitEntry("t", 1, 6, 3, "meta"),
               OffsetCommitEntry("u", 7, 8, -1, None, 99_999), OffsetCommitEntry("ü", 2, 9)]
    plan = driver.shard.prepare_offset_commit(driver.now, "grüppe", "", None, -1, entries)
    assert len(plan.records) == len(entries)
    for entry, record in zip(entries, plan.records, strict=True):
        assert record.key == encode_offset_commit_key(
            OffsetCommitKey("grüppe", entry.topic, entry.partition))
        assert record.value == encode_offset_commit_value(OffsetCommitValue(
            entry.offset, entry.metadata or "", driver.now, entry.leader_epoch,
            entry.expire_timestamp_ms))
        assert plan.offsets[TopicPartition(entry.topic, entry.partition)].offset == entry.offset
    # A second commit takes the keys the group kept from the first: the same bytes.
    driver.shard.apply_offset_commit(plan, driver.now)
    again = driver.shard.prepare_offset_commit(driver.now, "grüppe", "", None, -1, entries)
    assert [r.key for r in again.records] == [r.key for r in plan.records]
