"""Deciding acks=all writes after they were appended (``delayed_produce.settle``).

Kafka's rule (``Partition.checkEnoughReplicasReachOffset``, 3.9): a waiting write is
decided only once the high watermark reached it; it is then a success if the ISR still
has ``min.insync.replicas`` members, else NOT_ENOUGH_REPLICAS_AFTER_APPEND — the records
are in the log (and readable below the HW), but not as durable as promised. Before the HW
reaches it nothing is decided, however small the ISR. A write whose leadership term ended
fails with NOT_LEADER_OR_FOLLOWER, even if we lead again.

First ``settle`` on a partition's state, then the whole path: an ISR shrink (our own
write, or the controller's in the cluster view) releases a waiting write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from odradek.broker.metrics_sources import ReplicaPartitions
from odradek.clock import monotonic_ms
from odradek.replication import Acks, AppendResult, FetchRead, Partition, ReplicaManager
from odradek.replication.delayed_produce import AwaitingReplication, settle
from odradek.types import TopicPartition
from tests.replication.cluster_view import (
    ME,
    TP,
    State,
    StateZnode,
    brokers,
    consume,
    led_partition,
    new_manager,
    view,
    written,
)
from tests.storage.helpers import batch

LAG_MS = 30_000


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Partition]:
    """Broker 1 leading ``t-0``: ISR 1, 2, 3; min.insync.replicas=2; 3 records, HW 0."""
    partition = led_partition(tmp_path, min_insync_replicas=2)
    partition.append_as_leader(batch([b"a", b"b", b"c"]), acks=Acks.ALL)
    yield partition
    partition.log.close()


def decide(partition: Partition, last_offset: int = 2,
           awaiting: AwaitingReplication | None = None) -> tuple[bool, ErrorCode]:
    """settle() on one waiting write: (decided, error)."""
    results = {TP: AppendResult(base_offset=0)}
    waiting = {TP: awaiting or AwaitingReplication.after(partition, last_offset)}
    decided = settle(results, waiting)
    assert decided == (not waiting), "a decided partition leaves the waiting set"
    return decided, results[TP].error


def test_nothing_is_decided_before_the_high_watermark_reaches_the_write(
    leader: Partition,
) -> None:
    leader.record_follower_fetch(2, 3, now=0)
    leader.record_follower_fetch(3, 2, now=0)
    assert leader.high_watermark == 2
    assert decide(leader) == (False, ErrorCode.none)
    leader.isr = (ME,)  # below min.insync.replicas, but the HW has not moved yet
    assert decide(leader) == (False, ErrorCode.none)


@pytest.mark.parametrize(
    ("isr", "expected"),
    [
        ((1, 2, 3), ErrorCode.none),
        ((1, 2), ErrorCode.none),  # exactly min.insync.replicas
        ((1,), ErrorCode.not_enough_replicas_after_append),
    ],
)
def test_once_replicated_the_isr_size_decides_success(
    leader: Partition, isr: tuple[int, ...], expected: ErrorCode,
) -> None:
    awaiting = AwaitingReplication.after(leader, 2)
    leader.isr = brokers(*isr)  # the ISR the write finds when the HW reaches it
    leader.record_follower_fetch(2, 3, now=0)
    leader.record_follower_fetch(3, 3, now=0)
    assert leader.high_watermark == 3
    assert decide(leader, awaiting=awaiting) == (True, expected)


def test_a_write_whose_leadership_term_ended_fails_even_if_we_lead_again(
    leader: Partition,
) -> None:
    awaiting = AwaitingReplication.after(leader, 2)
    leader.is_leader = False
    assert decide(leader, awaiting=awaiting) == (True, ErrorCode.not_leader_or_follower)
    leader.is_leader, leader.leader_generation = True, leader.leader_generation + 1
    leader.isr = (ME,)
    leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 3, "replicated in the new term ..."
    assert decide(leader, awaiting=awaiting) == (True, ErrorCode.not_leader_or_follower)


def test_settle_decides_each_partition_on_its_own(leader: Partition, tmp_path: Path) -> None:
    other = led_partition(tmp_path / "other", isr=(ME,))
    try:
        other.append_as_leader(batch([b"x"]), acks=Acks.ALL)
        other.maybe_advance_high_watermark()
        second = TopicPartition("t", 1)
        results = {TP: AppendResult(), second: AppendResult()}
        waiting = {TP: AwaitingReplication.after(leader, 2),
                   second: AwaitingReplication.after(other, 0)}
        assert settle(results, waiting) is False
        assert list(waiting) == [TP] and results[second].error == ErrorCode.none
        leader.isr = (ME,)
        leader.maybe_advance_high_watermark()
        assert settle(results, waiting) is True and not waiting
        assert results[TP].error == ErrorCode.not_enough_replicas_after_append
    finally:
        other.log.close()


# The whole path: the replica manager, its produce purgatory and the ISR manager -------------
# (``manager`` and ``znode``: tests/replication/conftest.py)

def test_a_lagging_follower_dropped_from_the_isr_answers_not_enough_replicas_after_append(
    manager: ReplicaManager, znode: StateZnode,
) -> None:
    async def body() -> None:
        znode.isr = (ME, 2)
        manager.apply_cluster_view(view(State(ME, 3, (ME, 2), (ME, 2))))
        pending = manager.append_records({TP: batch([b"x", b"y"])}, acks=Acks.ALL, timeout_ms=5000)
        assert isinstance(pending, asyncio.Future) and not pending.done()
        partition = manager.partitions()[TP]
        assert manager.isr_manager is not None
        assert manager.isr_manager.shrink_lagging(monotonic_ms() + LAG_MS + 1) == 1
        await written(partition)
        assert partition.isr == (ME,)
        results = await asyncio.wait_for(pending, 1)
        assert results[TP].error == ErrorCode.not_enough_replicas_after_append
        assert results[TP].base_offset == 0
        read = manager.fetch(consume(0))  # appended all the same, and now below the HW
        assert isinstance(read, FetchRead) and read.total_bytes > 0
        assert partition.high_watermark == 2

    asyncio.run(body())


def test_the_controller_shrinking_the_isr_below_min_insync_releases_the_write_as_failed(
    manager: ReplicaManager,
) -> None:
    """A newer state znode in our own epoch (the controller dropped a dead broker)."""

    async def body() -> None:
        manager.apply_cluster_view(view(State(ME, 3, (ME, 2, 3), (ME, 2, 3))))
        pending = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=5000)
        assert isinstance(pending, asyncio.Future)
        manager.fetch(consume(1, replica_id=2))
        manager.apply_cluster_view(view(State(ME, 3, (ME, 3), (ME, 2, 3), zk_version=1)))
        await asyncio.sleep(0)
        assert not pending.done(), "3, still in the ISR, has not fetched it"
        manager.apply_cluster_view(view(State(ME, 3, (ME,), (ME, 2, 3), zk_version=2)))
        results = await asyncio.wait_for(pending, 1)
        assert results[TP].error == ErrorCode.not_enough_replicas_after_append

    asyncio.run(body())


def test_a_shrink_that_keeps_min_insync_replicas_lets_the_write_succeed(
    manager: ReplicaManager, znode: StateZnode,
) -> None:
    async def body() -> None:
        znode.isr = (ME, 2, 3)
        manager.apply_cluster_view(view(State(ME, 3, (ME, 2, 3), (ME, 2, 3))))
        partition = manager.partitions()[TP]
        pending = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=5000)
        assert isinstance(pending, asyncio.Future)
        now = monotonic_ms() + LAG_MS // 2
        partition.record_follower_fetch(2, 1, now=now)  # 2 has it, 3 never fetches
        manager.after_high_watermark_change(TP)
        assert not pending.done()
        assert manager.isr_manager is not None
        assert manager.isr_manager.shrink_lagging(now + LAG_MS // 2 + 1) == 1
        await written(partition)
        assert partition.isr == (ME, 2)
        results = await asyncio.wait_for(pending, 1)
        assert results[TP].error == ErrorCode.none

    asyncio.run(body())


def test_a_write_answered_before_the_shrink_stays_answered(manager: ReplicaManager) -> None:
    async def body() -> None:
        manager.apply_cluster_view(view(State(ME, 3, (ME, 2), (ME, 2))))
        pending = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=5000)
        assert isinstance(pending, asyncio.Future)
        manager.fetch(consume(1, replica_id=2))
        results = await asyncio.wait_for(pending, 1)
        manager.apply_cluster_view(view(State(ME, 3, (ME,), (ME, 2), zk_version=1)))
        assert results[TP].error == ErrorCode.none
        refused = manager.append_records({TP: batch([b"y"])}, acks=Acks.ALL, timeout_ms=5000)
        assert isinstance(refused, dict)
        assert refused[TP].error == ErrorCode.not_enough_replicas, "now refused up front"

    asyncio.run(body())


def test_min_insync_replicas_above_the_replication_factor_is_met_by_every_replica(
    tmp_path: Path,
) -> None:
    """After the append too, Kafka compares the ISR with min(min.insync.replicas,
    replicas): a 2-replica partition under min.insync.replicas=3 succeeds with both."""
    partition = led_partition(tmp_path, isr=(ME, 2), replicas=(ME, 2), min_insync_replicas=3)
    try:
        partition.min_insync_replicas = 1  # was the ISR big enough when appending: yes
        partition.append_as_leader(batch([b"x"]), acks=Acks.ALL)
        partition.min_insync_replicas = 3  # then raised (a dynamic topic config change)
        awaiting = AwaitingReplication.after(partition, 0)
        partition.record_follower_fetch(2, 1, now=0)
        assert decide(partition, awaiting=awaiting) == (True, ErrorCode.none)
        partition.isr = (ME,)
        assert decide(partition, awaiting=awaiting) == (
            True, ErrorCode.not_enough_replicas_after_append)
    finally:
        partition.log.close()


def test_the_under_min_isr_metrics_use_the_same_cap(tmp_path: Path) -> None:
    """A whole single-replica ISR under min.insync.replicas=2 takes acks=all writes, so the
    metrics must not call it under-min-ISR (they would page for a healthy partition)."""
    manager, logs = new_manager(tmp_path, min_insync_replicas=2)
    try:
        manager.apply_cluster_view(view(State(ME, 1, (ME,), (ME,))))
        [state] = ReplicaPartitions(manager).partitions()
        assert (state.in_sync_replicas, state.min_insync_replicas) == (1, 1)
    finally:
        logs.shutdown()
