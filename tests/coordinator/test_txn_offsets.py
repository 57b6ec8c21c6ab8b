"""Transactional offset commits wait for their marker (coordinator/txn_offsets.py)."""

from odradek.coordinator.offsets import OffsetCommitEntry, commit_plan
from odradek.coordinator.txn_offsets import PendingTxnOffsets
from odradek.protocol.records import Record
from odradek.types import TopicPartition


def _records(group: str, *partitions: int) -> list[Record]:
    entries = [OffsetCommitEntry("t", p, 10 + p) for p in partitions]
    return commit_plan(group, {}, entries, now_ms=1, max_metadata=4096).records


def test_pending_partitions_are_unstable_until_the_marker() -> None:
    pending = PendingTxnOffsets()
    pending.add(7, _records("g", 0, 1))
    pending.add(8, _records("other", 2))
    assert pending.unstable("g") == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert len(pending.complete(7, commit=True)) == 2  # replayed into the group
    assert pending.unstable("g") == set()
    assert pending.unstable("other") == {TopicPartition("t", 2)}


def test_an_abort_drops_the_records() -> None:
    pending = PendingTxnOffsets({3: _records("g", 0)})  # as loaded from the log
    assert pending.complete(3, commit=False) == []
    assert pending.unstable("g") == set()
    assert pending.complete(3, commit=True) == []  # the marker came once; nothing is left
