"""Leader epochs: recorded where each term begins, and fencing requests from other epochs.

Becoming leader at a new epoch records ``(epoch, log end)`` in the leader-epoch cache
(``leader-epoch-checkpoint``), which answers OffsetForLeaderEpoch for followers
truncating after a failover (KIP-101/279). Requests that carry the client's
``current_leader_epoch`` (Fetch, ListOffsets, OffsetForLeaderEpoch; KIP-320) are fenced as
Kafka does: an older epoch is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (this
broker has not heard of it yet), -1 is not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from odradek.protocol.errors import FencedLeaderEpoch, UnknownLeaderEpoch
from odradek.replication import Acks, FetchRead, ReplicaManager
from odradek.storage.leader_epoch import EpochEntry
from odradek.storage.log_reader import LATEST_TIMESTAMP
from odradek.types import LeaderEpoch, Offset
from tests.replication.cluster_view import (
    ME,
    TP,
    State,
    consume,
    new_manager,
    partition_error,
    view,
)
from tests.storage.helpers import batch, read_all

EPOCH = 5


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[ReplicaManager]:
    replica_manager, logs = new_manager(tmp_path)
    yield replica_manager
    logs.shutdown()


def test_each_new_leader_epoch_is_recorded_where_the_term_begins(
    manager: ReplicaManager,
) -> None:
    manager.apply_cluster_view(view(State(ME, 3, (ME, 2), (ME, 2))))
    partition = manager.partitions()[TP]
    cache = partition.log.leader_epoch_cache
    assert cache.entries == [EpochEntry(LeaderEpoch(3), Offset(0))]
    manager.append_records({TP: batch([b"a", b"b"])}, acks=Acks.LEADER, timeout_ms=1000)

    manager.apply_cluster_view(view(State(2, 4, (ME, 2), (ME, 2), zk_version=1)))
    manager.apply_cluster_view(view(State(ME, 5, (ME, 2), (ME, 2), zk_version=2)))
    assert cache.entries == [EpochEntry(LeaderEpoch(3), Offset(0)),
                             EpochEntry(LeaderEpoch(5), Offset(2))]
    assert cache.path.read_text() == "0\n2\n3 0\n5 2\n"
    assert partition.leader_epoch_start_offset == 2

    manager.append_records({TP: batch([b"c"])}, acks=Acks.LEADER, timeout_ms=1000)
    epochs = [header.partition_leader_epoch for header, _records in read_all(partition.log)]
    assert epochs == [3, 5], "each batch is stamped with the epoch it was written in"
    answers = {epoch: manager.end_offset_for_leader_epoch(TP, -1, epoch) for epoch in range(7)}
    assert answers == {
        0: (0, 0),  # before any known epoch: the first one's start
        1: (1, 0),
        2: (2, 0),
        3: (3, 2),  # epoch 3 ended where epoch 5 began
        4: (3, 2),  # never led: the largest epoch below it, and where that one ended
        5: (5, 3),  # the current epoch ends at the log end
        6: (-1, -1),  # not known here
    }


def test_an_isr_change_within_an_epoch_records_nothing(manager: ReplicaManager) -> None:
    manager.apply_cluster_view(view(State(ME, 3, (ME, 2), (ME, 2))))
    manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
    manager.apply_cluster_view(view(State(ME, 3, (ME,), (ME, 2), zk_version=1)))
    partition = manager.partitions()[TP]
    assert partition.isr == (ME,)
    assert partition.log.leader_epoch_cache.entries == [EpochEntry(LeaderEpoch(3), Offset(0))]
    assert partition.leader_epoch_start_offset == 0


def test_the_same_leader_at_a_new_epoch_records_it_at_its_log_end(
    manager: ReplicaManager,
) -> None:
    manager.apply_cluster_view(view(State(ME, 3, (ME, 2), (ME, 2))))
    manager.append_records({TP: batch([b"a", b"b"])}, acks=Acks.LEADER, timeout_ms=1000)
    manager.apply_cluster_view(view(State(ME, 4, (ME, 2), (ME, 2), zk_version=1)))
    cache = manager.partitions()[TP].log.leader_epoch_cache
    assert cache.entries == [EpochEntry(LeaderEpoch(3), Offset(0)),
                             EpochEntry(LeaderEpoch(4), Offset(2))]


@pytest.mark.parametrize(
    ("current_leader_epoch", "expected"),
    [
        (EPOCH - 1, ErrorCode.fenced_leader_epoch),
        (EPOCH + 1, ErrorCode.unknown_leader_epoch),
        (EPOCH, ErrorCode.none),
        (-1, ErrorCode.none),
    ],
)
def test_a_fetch_carrying_another_leader_epoch_is_fenced(
    manager: ReplicaManager, current_leader_epoch: int, expected: ErrorCode,
) -> None:
    manager.apply_cluster_view(view(State(ME, EPOCH, (ME,), (ME, 2))))
    manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
    read = manager.fetch(consume(0, current_leader_epoch=current_leader_epoch))
    assert isinstance(read, FetchRead)
    assert partition_error(read) == expected
    assert (read.total_bytes > 0) == (expected == ErrorCode.none)


def test_a_fenced_follower_fetch_neither_moves_the_high_watermark_nor_joins_the_isr(
    manager: ReplicaManager,
) -> None:
    """A follower still on the previous epoch may have a diverged log: its position
    must not count until it has truncated and fetches at our epoch."""
    manager.apply_cluster_view(view(State(ME, EPOCH, (ME, 2), (ME, 2, 3))))
    manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
    partition = manager.partitions()[TP]
    for replica in (2, 3):
        read = manager.fetch(consume(1, replica_id=replica, current_leader_epoch=EPOCH - 1))
        assert isinstance(read, FetchRead)
        assert partition_error(read) == ErrorCode.fenced_leader_epoch
    assert partition.high_watermark == 0
    assert partition.followers[2].log_end_offset == -1
    assert not partition.can_join_isr(3)
    read = manager.fetch(consume(1, replica_id=2, current_leader_epoch=EPOCH))
    assert isinstance(read, FetchRead) and partition_error(read) == ErrorCode.none
    assert partition.high_watermark == 1


def test_list_offsets_and_offset_for_leader_epoch_are_fenced_too(
    manager: ReplicaManager,
) -> None:
    manager.apply_cluster_view(view(State(ME, EPOCH, (ME,), (ME, 2))))
    manager.append_records({TP: batch([b"a"])}, acks=Acks.LEADER, timeout_ms=1000)
    with pytest.raises(FencedLeaderEpoch):
        manager.offset_for_timestamp(TP, LATEST_TIMESTAMP, current_leader_epoch=EPOCH - 1)
    with pytest.raises(UnknownLeaderEpoch):
        manager.offset_for_timestamp(TP, LATEST_TIMESTAMP, current_leader_epoch=EPOCH + 1)
    assert manager.offset_for_timestamp(TP, LATEST_TIMESTAMP, EPOCH) == (1, -1, EPOCH)
    with pytest.raises(FencedLeaderEpoch):
        manager.end_offset_for_leader_epoch(TP, EPOCH - 1, EPOCH)
    with pytest.raises(UnknownLeaderEpoch):
        manager.end_offset_for_leader_epoch(TP, EPOCH + 1, EPOCH)
    assert manager.end_offset_for_leader_epoch(TP, EPOCH, EPOCH) == (EPOCH, 1)


@pytest.mark.parametrize(
    ("current_leader_epoch", "expected"),
    [
        (EPOCH - 1, ErrorCode.fenced_leader_epoch),
        (EPOCH + 1, ErrorCode.unknown_leader_epoch),
        (EPOCH, ErrorCode.not_leader_or_follower),
        (-1, ErrorCode.not_leader_or_follower),
    ],
)
def test_a_follower_checks_the_epoch_before_leadership(
    manager: ReplicaManager, current_leader_epoch: int, expected: ErrorCode,
) -> None:
    """Kafka's ``Partition.getLocalLog``: the epoch comes first. A client with stale
    metadata asking the former leader hears FENCED_LEADER_EPOCH; one that knows a newer
    epoch than this broker does hears UNKNOWN_LEADER_EPOCH (the broker will catch up)."""
    manager.apply_cluster_view(view(State(2, EPOCH, (ME, 2), (ME, 2))))
    read = manager.fetch(consume(0, current_leader_epoch=current_leader_epoch))
    assert isinstance(read, FetchRead)
    assert partition_error(read) == expected
    for request in (
        lambda: manager.offset_for_timestamp(TP, LATEST_TIMESTAMP, current_leader_epoch),
        lambda: manager.end_offset_for_leader_epoch(TP, current_leader_epoch, EPOCH),
    ):
        with pytest.raises(Exception) as raised:
            request()
        assert getattr(raised.value, "code", None) == expected
