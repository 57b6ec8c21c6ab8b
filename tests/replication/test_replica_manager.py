"""The replica manager's entry points on real logs: append_records and fetch, per acks.

The cluster view is a plain value here (what ZooKeeper would say); the same paths run
against real ZooKeeper and broker processes in the failover and consistency suites.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_ms
from odradek.config_sections import ReplicationConfig
from odradek.replication import (
    Acks,
    FetchParams,
    FetchRead,
    Partition,
    PartitionFetch,
    ReplicaManager,
)
from odradek.replication.fetch_session import FetchContext
from odradek.storage import LogManager
from odradek.types import TopicPartition
from tests.replication.cluster_view import (
    ME,
    TP,
    State,
    StateZnode,
    Topic,
    consume,
    new_manager,
    partition_error,
    view,
    written,
)
from tests.storage.helpers import batch, settings, small_config


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[ReplicaManager]:
    logs = LogManager(settings(tmp_path), small_config(), background=False)
    yield ReplicaManager(ME, logs, lambda _topic: small_config(), ReplicationConfig())
    logs.shutdown()


def lead(manager: ReplicaManager, isr: tuple[int, ...], epoch: int = 3) -> None:
    replicas = tuple(sorted({ME, *isr, 2}))
    manager.apply_cluster_view({"t": Topic({0: State(ME, epoch, isr, replicas)})})


def test_acks_1_answers_at_once_and_consumers_see_it_below_the_high_watermark(
    manager: ReplicaManager,
) -> None:
    async def body() -> None:
        lead(manager, isr=(ME,))
        results = manager.append_records({TP: batch([b"a", b"b"])}, acks=Acks.LEADER,
                                         timeout_ms=1000)
        assert isinstance(results, dict)
        assert (results[TP].error, results[TP].base_offset) == (ErrorCode.none, 0)
        read = manager.fetch(consume(0))
        assert isinstance(read, FetchRead) and read.total_bytes > 0

    asyncio.run(body())


def test_acks_all_waits_for_the_follower_then_answers(manager: ReplicaManager) -> None:
    async def body() -> None:
        lead(manager, isr=(ME, 2))
        pending = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=5000)
        assert isinstance(pending, asyncio.Future) and not pending.done()
        nothing_yet = manager.fetch(consume(0))
        assert isinstance(nothing_yet, FetchRead) and nothing_yet.total_bytes == 0
        manager.fetch(consume(1, replica_id=2))  # the follower has offset 0: HW moves to 1
        results = await asyncio.wait_for(pending, 1)
        assert results[TP].error == ErrorCode.none
        assert manager.partitions()[TP].high_watermark == 1

    asyncio.run(body())


def test_acks_all_below_min_insync_is_refused_before_appending(tmp_path: Path) -> None:
    async def body() -> None:
        logs = LogManager(settings(tmp_path), small_config(), background=False)
        manager = ReplicaManager(ME, logs, lambda _t: small_config(min_insync_replicas=2),
                                 ReplicationConfig())
        lead(manager, isr=(ME,))
        results = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=1000)
        assert isinstance(results, dict)
        assert results[TP].error == ErrorCode.not_enough_replicas
        assert manager.partitions()[TP].log_end_offset == 0
        logs.shutdown()

    asyncio.run(body())


def test_acks_all_answers_at_once_when_we_are_the_whole_isr(manager: ReplicaManager) -> None:
    """The HW moves with the append itself: no delayed operation, no future, the results
    come back as acks=1's do (Produce answers in the same loop turn)."""

    async def body() -> None:
        lead(manager, isr=(ME,))
        results = manager.append_records({TP: batch([b"x", b"y"])}, acks=Acks.ALL, timeout_ms=1000)
        assert isinstance(results, dict)
        assert results[TP].error == ErrorCode.none and results[TP].base_offset == 0
        assert manager.partitions()[TP].high_watermark == 2
        assert len(manager.produce_purgatory) == 0

    asyncio.run(body())


def test_losing_leadership_fails_the_waiting_write(manager: ReplicaManager) -> None:
    async def body() -> None:
        lead(manager, isr=(ME, 2))
        pending = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=5000)
        assert isinstance(pending, asyncio.Future)
        manager.apply_cluster_view({"t": Topic({0: State(2, 4, (2,), (ME, 2))})})
        results = await asyncio.wait_for(pending, 1)
        assert results[TP].error == ErrorCode.not_leader_or_follower

    asyncio.run(body())


def test_a_write_that_waits_too_long_times_out(manager: ReplicaManager) -> None:
    async def body() -> None:
        lead(manager, isr=(ME, 2))
        pending = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=50)
        assert isinstance(pending, asyncio.Future)
        results = await asyncio.wait_for(pending, 2)
        assert results[TP].error == ErrorCode.request_timed_out

    asyncio.run(body())


def test_unknown_partitions_and_empty_appends_answer_with_their_codes(
    manager: ReplicaManager,
) -> None:
    async def body() -> None:
        lead(manager, isr=(ME,))
        unknown = TopicPartition("nope", 0)
        missing = manager.append_records({unknown: batch([b"x"])}, acks=Acks.LEADER,
                                         timeout_ms=1000)
        assert isinstance(missing, dict)
        assert missing[unknown].error == ErrorCode.unknown_topic_or_partition
        empty = manager.append_records({TP: b""}, acks=Acks.LEADER, timeout_ms=1000)
        assert isinstance(empty, dict) and empty[TP].error == ErrorCode.corrupt_message

    asyncio.run(body())


def test_long_poll_fetch_is_woken_by_an_append(manager: ReplicaManager) -> None:
    async def body() -> None:
        lead(manager, isr=(ME,))
        pending = manager.fetch(consume(0, max_wait_ms=5000))
        assert isinstance(pending, asyncio.Future) and not pending.done()
        manager.append_records({TP: batch([b"wake"])}, acks=Acks.LEADER, timeout_ms=1000)
        read = await asyncio.wait_for(pending, 1)
        assert read.total_bytes > 0

    asyncio.run(body())


def test_fetch_beyond_the_log_end_is_out_of_range_and_not_the_leader_is_refused(
    manager: ReplicaManager,
) -> None:
    async def body() -> None:
        lead(manager, isr=(ME,))
        manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
        beyond = manager.fetch(consume(5))
        assert isinstance(beyond, FetchRead)
        assert partition_error(beyond) == ErrorCode.offset_out_of_range
        manager.apply_cluster_view({"t": Topic({0: State(2, 4, (2,), (ME, 2))})})
        follower = manager.fetch(consume(0))
        assert isinstance(follower, FetchRead)
        assert partition_error(follower) == ErrorCode.not_leader_or_follower

    asyncio.run(body())


def test_a_consumer_between_the_high_watermark_and_the_log_end_reads_nothing_and_waits(
    manager: ReplicaManager,
) -> None:
    """Kafka's rule: only beyond the log *end* is out of range. Between the HW and the end
    (a new leader's HW lags) a consumer gets an empty answer with the HW, and a long poll
    there waits for the HW to pass its offset instead of re-reading on every append."""
    async def body() -> None:
        lead(manager, isr=(ME, 2))  # the follower has fetched nothing: the HW stays at 0
        manager.append_records({TP: batch([b"a", b"b", b"c"])}, acks=Acks.LEADER, timeout_ms=1000)
        for offset in (1, 3):
            read = manager.fetch(consume(offset))
            assert isinstance(read, FetchRead) and partition_error(read) == ErrorCode.none
            answer = read.topics[0].partitions[0]
            assert (read.total_bytes, answer.high_watermark) == (0, 0)
        beyond = manager.fetch(consume(4))
        assert isinstance(beyond, FetchRead)
        assert partition_error(beyond) == ErrorCode.offset_out_of_range
        pending = manager.fetch(consume(2, max_wait_ms=5000))
        assert isinstance(pending, asyncio.Future)
        manager.append_records({TP: batch([b"d"])}, acks=Acks.LEADER, timeout_ms=1000)
        await asyncio.sleep(0.05)
        assert not pending.done(), "an append above the HW is nothing a consumer can read"
        follower = manager.fetch(consume(4, replica_id=2))  # the follower caught up
        assert isinstance(follower, FetchRead) and partition_error(follower) == ErrorCode.none
        read = await asyncio.wait_for(pending, 1)
        assert read.total_bytes > 0 and read.topics[0].partitions[0].high_watermark == 4

    asyncio.run(body())


def _session_fetch(manager: ReplicaManager, session_id: int, epoch: int, offset: int | None,
                   now_ms: int, replica_id: int = 2) -> tuple[FetchContext, FetchRead]:
    """A follower's Fetch of ``t-0`` in a session, as the Fetch handler runs it (``offset``
    None: an incremental fetch naming nothing)."""
    found, read = _session_fetch_or_wait(manager, session_id, epoch, offset, now_ms,
                                         replica_id)
    assert isinstance(read, FetchRead)
    return found, read


def _session_fetch_or_wait(
    manager: ReplicaManager, session_id: int, epoch: int, offset: int | None, now_ms: int,
    replica_id: int = 2, max_wait_ms: int = 0,
) -> tuple[FetchContext, FetchRead | asyncio.Future[FetchRead]]:
    wanted = () if offset is None else (PartitionFetch("t", 0, offset, 1 << 20),)
    found = manager.fetch_sessions.new_context(
        session_id=session_id, epoch=epoch, wanted=wanted, forgotten=(),
        replica_id=replica_id, now_ms=now_ms)
    assert isinstance(found, FetchContext)
    params = FetchParams(replica_id, 1, 1 << 20, max_wait_ms, found.partitions)
    return found, manager.fetch(params, session=found if found.incremental else None)


def test_an_idle_session_fetch_visits_no_partition_until_one_changes(
    manager: ReplicaManager,
) -> None:
    lead(manager, isr=(ME, 2))
    manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
    full, _ = _session_fetch(manager, 0, 0, 1, 0)
    _topics, session_id = full.respond(_.topics)
    visited: list[tuple[str, int]] = []
    lookup = manager.leader_partition

    def counting(topic: str, partition: int, current_leader_epoch: int = -1) -> Partition:
        visited.append((topic, partition))
        return lookup(topic, partition, current_leader_epoch)

    manager.leader_partition = counting  # type: ignore[method-assign]
    first, read = _session_fetch(manager, session_id, 1, None, 1)  # settles what it knows
    assert first.respond(read.topics)[0] == [] and visited == [("t", 0)]
    for epoch in (2, 3, 4):
        idle, read = _session_fetch(manager, session_id, epoch, None, epoch)
        assert idle.respond(read.topics)[0] == []
    assert visited == [("t", 0)], "an idle session's fetch looked at a partition"
    manager.append_records({TP: batch([b"b"])}, acks=Acks.LEADER, timeout_ms=1000)
    visited.clear()
    changed, read = _session_fetch(manager, session_id, 5, None, 5)
    [topic] = changed.respond(read.topics)[0]
    assert visited == [("t", 0)] and topic.partitions[0].records is not None


def test_a_follower_polling_an_idle_leader_in_a_session_stays_in_sync(
    manager: ReplicaManager,
) -> None:
    """Idle fetches do not visit the partition, yet each one keeps the follower caught up
    (Kafka's rule): a later append must not find it lagging since its last visit."""
    lead(manager, isr=(ME, 2))
    manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
    start = monotonic_ms()
    full, read = _session_fetch(manager, 0, 0, 1, start)
    _topics, session_id = full.respond(read.topics)
    first, read = _session_fetch(manager, session_id, 1, None, start)  # the last visit
    first.respond(read.topics)
    lag_ms = 10_000
    idle, read = _session_fetch(manager, session_id, 2, None, start + 3 * lag_ms)
    idle.respond(read.topics)
    manager.append_records({TP: batch([b"b"])}, acks=Acks.LEADER, timeout_ms=1000)
    partition = manager.partitions()[TP]
    assert 2 not in partition.out_of_sync_replicas(start + 3 * lag_ms + 1, lag_ms)
    assert 2 in partition.out_of_sync_replicas(start + 5 * lag_ms, lag_ms)


def test_a_log_start_moved_by_a_storage_thread_reaches_a_clean_session(
    manager: ReplicaManager,
) -> None:
    """Retention runs on a LogManager thread: the move is handed to the loop, and the
    session's next fetch tells the client the new log start."""

    async def body() -> None:
        lead(manager, isr=(ME,))
        manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
        manager.append_records({TP: batch([b"b"])}, acks=Acks.LEADER, timeout_ms=1000)
        full, read = _session_fetch(manager, 0, 0, 2, 0, replica_id=-1)
        _topics, session_id = full.respond(read.topics)
        settle, read = _session_fetch(manager, session_id, 1, None, 1, replica_id=-1)
        assert settle.respond(read.topics)[0] == []
        await asyncio.to_thread(manager.partitions()[TP].log.delete_records_before, 1)
        await asyncio.sleep(0)
        moved, read = _session_fetch(manager, session_id, 2, None, 2, replica_id=-1)
        [topic] = moved.respond(read.topics)[0]
        assert topic.partitions[0].log_start_offset == 1

    asyncio.run(body())


def test_a_parked_session_fetch_is_woken_by_a_change_to_a_clean_partition(
    manager: ReplicaManager,
) -> None:
    """A long poll of a session watches the session, not each partition: a change to any of
    them must still answer it at once."""

    async def body() -> None:
        lead(manager, isr=(ME, 2))
        manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
        full, read = _session_fetch(manager, 0, 0, 1, 0)
        _topics, session_id = full.respond(read.topics)
        settle, read = _session_fetch(manager, session_id, 1, None, 1)
        assert settle.respond(read.topics)[0] == []
        parked, waiting = _session_fetch_or_wait(manager, session_id, 2, None, 2,
                                                 max_wait_ms=30_000)
        assert isinstance(waiting, asyncio.Future) and not waiting.done()
        manager.append_records({TP: batch([b"b"])}, acks=Acks.LEADER, timeout_ms=1000)
        found = await asyncio.wait_for(waiting, 1)
        [topic] = parked.respond(found.topics)[0]
        assert topic.partitions[0].records is not None

    asyncio.run(body())


def test_a_follower_outside_the_isr_retries_its_way_back_through_idle_session_fetches(
    tmp_path: Path,
) -> None:
    """The ISR expansion a caught-up follower's fetch triggers may fail (ZooKeeper moved)
    or be deferred; its next idle fetches must retry it, though nothing else changes."""

    async def body() -> None:
        znode = StateZnode(version=5)  # the first write is refused: we hold version 0
        manager, logs = new_manager(tmp_path, isr_writer=znode)
        try:
            manager.apply_cluster_view(view(State(ME, 3, (ME,), (ME, 2))))
            partition = manager.partitions()[TP]
            manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
            full, read = _session_fetch(manager, 0, 0, 1, 0)  # caught up: asks to join
            _topics, session_id = full.respond(read.topics)
            await written(partition)
            assert partition.isr == (ME,), "the refused write changed nothing"
            deferred, read = _session_fetch(manager, session_id, 1, None, 1)  # backing off
            deferred.respond(read.topics)
            partition.isr_retry_after_ms = 0
            znode.version = 0
            retried, read = _session_fetch(manager, session_id, 2, None, 2)
            retried.respond(read.topics)
            await written(partition)
            assert partition.isr == (ME, 2)
        finally:
            logs.shutdown()

    asyncio.run(body())
