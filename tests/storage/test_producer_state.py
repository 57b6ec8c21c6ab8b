"""Idempotent producer checks on leader append, and their rebuild after restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.protocol.errors import (
    InvalidProducerEpoch,
    OutOfOrderSequenceNumber,
    UnknownProducerId,
)
from odradek.protocol.records import Record, encode_batch
from odradek.storage import open_log
from tests.storage.helpers import all_records, batch, new_log, small_config

PID = 4242


def produce(log, seq: int, count: int = 2, epoch: int = 0, pid: int = PID):
    values = [b"s%d" % (seq + i) for i in range(count)]
    return log.append(
        batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=seq), leader_epoch=0
    )


def test_duplicate_of_recent_batch_is_not_appended_and_returns_original_offsets(
    tmp_path: Path,
) -> None:
    log = new_log(tmp_path)
    first = produce(log, 0)
    for seq in range(2, 12, 2):
        produce(log, seq)
    again = produce(log, 4)  # within the last 5 batches
    assert again.duplicate
    assert (again.first_offset, again.last_offset) == (4, 5)
    assert log.log_end_offset == 12
    assert not first.duplicate
    with pytest.raises(OutOfOrderSequenceNumber):
        produce(log, 0)  # older than the last 5 batches: not a known duplicate, out of order


def test_sequence_gap_is_out_of_order(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    produce(log, 0)
    with pytest.raises(OutOfOrderSequenceNumber):
        produce(log, 5)
    assert log.log_end_offset == 2


def test_epoch_rules(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    produce(log, 0, epoch=1)
    with pytest.raises(InvalidProducerEpoch):
        produce(log, 2, epoch=0)
    with pytest.raises(OutOfOrderSequenceNumber):
        produce(log, 7, epoch=2)  # a new epoch must start at 0
    produce(log, 0, epoch=2)
    produce(log, 2, epoch=2)
    with pytest.raises(UnknownProducerId):
        produce(log, 9, pid=777)  # never seen, not starting at 0
    assert log.log_end_offset == 6


def test_state_is_rebuilt_after_restart_with_and_without_snapshot(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1024)
    log = new_log(tmp_path, config)
    for seq in range(0, 60, 2):
        produce(log, seq)
    assert len(log.segments) > 2  # rolls wrote snapshots
    log.close()
    # 1. clean close: snapshot at the log end
    reopened = open_log(tmp_path / "topic-0", config, had_clean_shutdown=True, recovery_point=60)
    assert produce(reopened, 58).duplicate
    with pytest.raises(OutOfOrderSequenceNumber):
        produce(reopened, 70)
    reopened.close()
    # 2. no snapshots at all: header scan of the whole log
    for snapshot in (tmp_path / "topic-0").glob("*.snapshot"):
        snapshot.unlink()
    rebuilt = open_log(tmp_path / "topic-0", config)
    assert produce(rebuilt, 58).duplicate
    assert produce(rebuilt, 60).first_offset == 60
    assert len(list(all_records(rebuilt))) == 62


def test_follower_updates_state_without_checks(tmp_path: Path) -> None:
    leader = new_log(tmp_path, name="leader-0")
    produce(leader, 0)
    produce(leader, 2)
    region = leader.read(0, 1 << 20, isolation_high_watermark=False).region
    assert region is not None
    follower = new_log(tmp_path, name="follower-0")
    follower.append_as_follower(region.read_bytes())
    assert follower.producer_state.producers[PID].last_seq == 3
    assert produce(follower, 2).duplicate  # if it becomes leader, it dedups the same way


def test_coordinator_writes_for_a_producer_are_checked_by_epoch_only(tmp_path: Path) -> None:
    """A TxnOffsetCommit batch (producer id and epoch, no sequence) written by the group
    coordinator after the producer's epoch was bumped by a restart: Kafka checks only the
    epoch of such a write (the CI failure of the exactly-once kill test: OUT_OF_ORDER)."""
    log = new_log(tmp_path)

    def offsets_commit(epoch: int, *, from_coordinator: bool):
        records = [Record(timestamp=1_700_000_000_000, key=b"group", value=b"offset")]
        return log.append(encode_batch(records, producer_id=PID, producer_epoch=epoch,
                                       is_transactional=True),
                          leader_epoch=0, from_coordinator=from_coordinator)

    offsets_commit(0, from_coordinator=True)
    offsets_commit(0, from_coordinator=True)  # no sequence: never a duplicate
    with pytest.raises(OutOfOrderSequenceNumber):
        offsets_commit(3, from_coordinator=False)  # a client's new epoch starts at 0
    offsets_commit(3, from_coordinator=True)
    with pytest.raises(InvalidProducerEpoch):
        offsets_commit(2, from_coordinator=True)  # a fenced incarnation's epoch
    assert log.log_end_offset == 3


def test_idle_producers_expire_but_not_those_with_an_open_transaction(tmp_path: Path) -> None:
    from odradek.protocol.records import encode_batch as encode
    from tests.storage.helpers import BASE_TS

    log = new_log(tmp_path)
    produce(log, 0, pid=1)  # timestamps BASE_TS, BASE_TS + 1
    open_txn = encode([Record(timestamp=BASE_TS, key=None, value=b"t")], producer_id=2,
                      producer_epoch=0, base_sequence=0, is_transactional=True)
    log.append(open_txn, leader_epoch=0)
    later = encode([Record(timestamp=BASE_TS + 10_000, key=None, value=b"x")], producer_id=3,
                   producer_epoch=0, base_sequence=0)
    log.append(later, leader_epoch=0)
    assert log.producer_state.producers[1].last_timestamp == BASE_TS + 1
    # 5 s after the last batches: nobody idle for 10 s yet
    assert log.remove_expired_producers(BASE_TS + 5_000, 10_000) == 0
    # producer 1 idle past 10 s goes; 2 is idle as long but has an open transaction; 3 is new
    assert log.remove_expired_producers(BASE_TS + 10_001, 10_000) == 1
    assert set(log.producer_state.producers) == {2, 3}
    # a forgotten producer is unknown: only sequence 0 starts it again
    with pytest.raises(UnknownProducerId):
        produce(log, 2, pid=1)
    produce(log, 0, pid=1)
    # the snapshot no longer carries it once expired again, and restarts keep timestamps
    log.remove_expired_producers(BASE_TS + 10**9, 10_000)
    end = log.log_end_offset
    log.close()
    reopened = open_log(tmp_path / "topic-0", small_config(), recovery_point=end,
                        high_watermark=end, had_clean_shutdown=True)
    assert set(reopened.producer_state.producers) == {2}
    assert reopened.producer_state.producers[2].last_timestamp == BASE_TS
    assert reopened.producer_state.producers[2].current_txn_first_offset == 2
    reopened.close()
