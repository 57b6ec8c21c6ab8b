"""The leader's high watermark: the smallest log end offset over the ISR, never moving back.

A :class:`Partition` on a real log; follower positions come from their fetch offsets, as
the leader learns them. Leadership changes go through the replica manager (the cluster
view as plain values), since that is where a new term resets what the leader knows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from odradek.replication import Acks, FetchRead, Partition
from tests.replication.cluster_view import (
    ME,
    TP,
    State,
    brokers,
    consume,
    led_partition,
    new_manager,
    partition_error,
    view,
)
from tests.storage.helpers import batch


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Partition]:
    """Broker 1 leading ``t-0`` at epoch 3; replicas 1, 2, 3; ISR 1, 2, 3."""
    partition = led_partition(tmp_path)
    yield partition
    partition.log.close()


def append(partition: Partition, count: int) -> None:
    partition.append_as_leader(batch([b"v"] * count), acks=Acks.LEADER)
    partition.maybe_advance_high_watermark()


def test_the_high_watermark_is_the_smallest_log_end_offset_over_the_isr(
    leader: Partition,
) -> None:
    append(leader, 5)
    assert leader.high_watermark == 0, "no follower has fetched yet"
    leader.record_follower_fetch(2, 5, now=0)
    assert leader.high_watermark == 0, "follower 3 is in the ISR and has not fetched"
    assert leader.record_follower_fetch(3, 2, now=0) is True
    assert leader.high_watermark == 2
    leader.record_follower_fetch(3, 4, now=0)
    assert leader.high_watermark == 4
    leader.record_follower_fetch(3, 5, now=0)
    assert leader.high_watermark == 5 == leader.log_end_offset


def test_the_leader_alone_in_the_isr_moves_the_high_watermark_with_each_append(
    leader: Partition,
) -> None:
    leader.isr = (ME,)
    append(leader, 3)
    assert leader.high_watermark == 3


def test_a_replica_outside_the_isr_does_not_hold_the_high_watermark_back(
    leader: Partition,
) -> None:
    leader.isr = brokers(1, 2)
    append(leader, 4)
    leader.record_follower_fetch(2, 4, now=0)
    assert leader.high_watermark == 4, "replica 3 is assigned but not in sync"


def test_the_high_watermark_never_moves_back(leader: Partition) -> None:
    append(leader, 5)
    leader.record_follower_fetch(2, 5, now=0)
    leader.record_follower_fetch(3, 5, now=0)
    assert leader.high_watermark == 5
    # A follower fetching lower (it truncated, or a late duplicate of an old fetch) ...
    assert leader.record_follower_fetch(3, 2, now=1) is False
    assert leader.high_watermark == 5
    # ... and a replica joining the ISR behind the high watermark never pull it down.
    leader.isr = brokers(1, 2)
    leader.pending_isr = brokers(1, 2, 3)
    assert leader.maybe_advance_high_watermark() is False
    assert leader.high_watermark == 5
    append(leader, 2)
    assert leader.high_watermark == 5, "follower 3 (joining) is at 2, follower 2 at 5"
    leader.record_follower_fetch(2, 7, now=2)
    leader.record_follower_fetch(3, 7, now=2)
    assert leader.high_watermark == 7


def test_a_replica_joining_the_isr_already_holds_the_high_watermark(leader: Partition) -> None:
    """Kafka's maximal ISR: while the expansion is written, ZooKeeper may already hold
    the bigger ISR, so the HW must not pass what the joining replica has."""
    leader.isr = brokers(1, 2)
    append(leader, 5)
    leader.record_follower_fetch(3, 3, now=0)
    leader.pending_isr = brokers(1, 2, 3)
    leader.record_follower_fetch(2, 5, now=0)
    assert leader.high_watermark == 3
    leader.pending_isr = None  # the write failed: the committed ISR alone counts again
    assert leader.maybe_advance_high_watermark() is True
    assert leader.high_watermark == 5


def test_a_shrink_being_written_does_not_release_the_high_watermark(leader: Partition) -> None:
    """Only a *landed* shrink drops a replica from the HW computation: until ZooKeeper
    holds the smaller ISR, a new leader could be elected from the bigger one."""
    append(leader, 5)
    leader.record_follower_fetch(2, 5, now=0)
    leader.pending_isr = brokers(1, 2)  # removing 3, not yet written
    assert leader.maybe_advance_high_watermark() is False
    assert leader.high_watermark == 0
    leader.isr, leader.pending_isr = brokers(1, 2), None
    assert leader.maybe_advance_high_watermark() is True
    assert leader.high_watermark == 5


def test_a_follower_fetch_beyond_the_log_end_never_counts(tmp_path: Path) -> None:
    """A diverged follower asking past our end is OFFSET_OUT_OF_RANGE, and its offset
    must never raise the HW above what the ISR has."""
    manager, logs = new_manager(tmp_path)
    try:
        manager.apply_cluster_view(view(State(ME, 3, (ME, 2), (ME, 2))))
        manager.append_records({TP: batch([b"a", b"b"])}, acks=Acks.LEADER, timeout_ms=1000)
        beyond = manager.fetch(consume(9, replica_id=2))
        assert isinstance(beyond, FetchRead)
        assert partition_error(beyond) == ErrorCode.offset_out_of_range
        partition = manager.partitions()[TP]
        assert partition.high_watermark == 0
        assert partition.followers[2].log_end_offset == -1
    finally:
        logs.shutdown()


def test_a_new_leader_keeps_its_high_watermark_and_waits_for_its_isr(tmp_path: Path) -> None:
    """A term begins: what the leader knew of followers in an earlier term is dropped
    (their logs may have been truncated since), the HW it had stays — it never moves back
    — and it moves again only once every ISR member has fetched in the new term."""

    async def body() -> None:
        manager, logs = new_manager(tmp_path)
        try:
            manager.apply_cluster_view(view(State(ME, 3, (ME, 2), (ME, 2))))
            manager.append_records({TP: batch([b"a", b"b", b"c"])}, acks=Acks.LEADER,
                                   timeout_ms=1000)
            manager.fetch(consume(3, replica_id=2))
            partition = manager.partitions()[TP]
            assert partition.high_watermark == 3
            generation = partition.leader_generation

            manager.apply_cluster_view(view(State(2, 4, (ME, 2), (ME, 2), zk_version=1)))
            assert not partition.is_leader
            manager.apply_cluster_view(view(State(ME, 5, (ME, 2), (ME, 2), zk_version=2)))
            assert partition.is_leader and partition.leader_generation == generation + 1
            assert partition.followers[2].log_end_offset == -1, "the old term's knowledge"
            assert partition.high_watermark == 3

            manager.append_records({TP: batch([b"d", b"e"])}, acks=Acks.LEADER, timeout_ms=1000)
            assert partition.high_watermark == 3, "follower 2 has not fetched in this term"
            manager.fetch(consume(2, replica_id=2))
            assert partition.high_watermark == 3, "never back to the follower's 2"
            manager.fetch(consume(5, replica_id=2))
            assert partition.high_watermark == 5
        finally:
            logs.shutdown()

    asyncio.run(body())


def test_a_new_epoch_for_the_same_leader_keeps_its_followers_and_high_watermark(
    tmp_path: Path,
) -> None:
    """Re-elected without a gap (e.g. a controller's preferred election at a new epoch):
    the same term of leadership for waiting writes, so follower progress is kept."""

    async def body() -> None:
        manager, logs = new_manager(tmp_path)
        try:
            manager.apply_cluster_view(view(State(ME, 3, (ME, 2), (ME, 2))))
            manager.append_records({TP: batch([b"a", b"b"])}, acks=Acks.LEADER, timeout_ms=1000)
            manager.fetch(consume(2, replica_id=2))
            partition = manager.partitions()[TP]
            generation = partition.leader_generation
            manager.apply_cluster_view(view(State(ME, 4, (ME, 2), (ME, 2), zk_version=1)))
            assert partition.leader_epoch == 4 and partition.leader_generation == generation
            assert partition.followers[2].log_end_offset == 2
            assert partition.leader_epoch_start_offset == 2
            assert partition.high_watermark == 2
            manager.append_records({TP: batch([b"c"])}, acks=Acks.LEADER, timeout_ms=1000)
            manager.fetch(consume(3, replica_id=2))
            assert partition.high_watermark == 3
        finally:
            logs.shutdown()

    asyncio.run(body())
