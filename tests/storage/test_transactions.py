"""Transactions in a partition log: markers, the LSO, the aborted index, and its rebuild.

The model test drives a real log with random transactional histories and compares what
read_committed readers see (LSO, aborted ranges, index entries) with a plain model; the
rest pin down the files, the fencing checks, and what restarts, truncation, retention and
the cleaner do to the indexes.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.control_records import ControlType, TxnMarker, encode_marker_batch
from odradek.protocol.errors import (
    InvalidProducerEpoch,
    InvalidRecord,
    InvalidTxnState,
    TransactionCoordinatorFenced,
)
from odradek.protocol.records import Record, decode_batches, encode_batch
from odradek.storage import PartitionLog, open_log
from odradek.storage.aborted_txn import AbortedTxn
from odradek.storage.cleaner import clean_log
from odradek.storage.retention import apply_retention
from tests.storage.helpers import BASE_TS, batch, new_log, small_config

NO_MARKER = 2**63 - 1


def txn_batch(pid: int, seq: int, count: int, *, epoch: int = 0, key: bytes | None = None,
              transactional: bool = True) -> bytes:
    records = [Record(timestamp=BASE_TS + i, key=key, value=b"p%d-%d" % (pid, seq + i))
               for i in range(count)]
    return encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        is_transactional=transactional)


def write_marker(log: PartitionLog, pid: int, commit: bool, *, epoch: int = 0,
                 coordinator_epoch: int = 0) -> int:
    marker = TxnMarker(pid, epoch, ControlType(int(commit)), coordinator_epoch)
    return log.append(encode_marker_batch(marker, BASE_TS), leader_epoch=0,
                      from_coordinator=True).first_offset


def all_entries(log: PartitionLog) -> list[AbortedTxn]:
    return [entry for segment in log.segments for entry in segment.txn_index.entries]


# ---------------------------------------------------------------------- the model


@dataclass
class Model:
    """What the partition should look like: transactions by producer, and the HW."""

    ongoing: dict[int, int] = field(default_factory=dict)  # pid -> first offset
    completed: list[tuple[int, int, int, bool]] = field(default_factory=list)
    aborted_entries: list[AbortedTxn] = field(default_factory=list)
    high_watermark: int = 0

    def lso(self) -> int:
        holding = list(self.ongoing.values()) + [
            first for _pid, first, marker, _aborted in self.completed
            if marker >= self.high_watermark
        ]
        return min([self.high_watermark, *holding])

    def aborted_overlapping(self, fetch: int, upper: int) -> set[tuple[int, int]]:
        return {(pid, first) for pid, first, marker, aborted in self.completed
                if aborted and marker >= fetch and first < upper}


operations = st.lists(
    st.one_of(
        st.tuples(st.just("data"), st.integers(0, 3), st.integers(1, 3)),
        st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
        st.tuples(st.sampled_from(["commit", "abort"]), st.integers(0, 3), st.just(0)),
        st.tuples(st.just("hw"), st.just(0), st.integers(0, 100)),
        st.tuples(st.just("roll"), st.just(0), st.just(0)),
    ),
    max_size=40,
)


def _run(log: PartitionLog, model: Model, ops: list[tuple[str, int, int]]) -> None:
    sequences: dict[int, int] = {}
    boundaries = [log.log_end_offset]
    for action, pid, amount in ops:
        if action == "data":
            info = log.append(txn_batch(pid, sequences.get(pid, 0), amount), leader_epoch=0)
            sequences[pid] = sequences.get(pid, 0) + amount
            model.ongoing.setdefault(pid, info.first_offset)
        elif action == "plain":
            log.append(batch([b"x"] * amount), leader_epoch=0)
        elif action in ("commit", "abort"):
            offset = write_marker(log, pid, action == "commit")
            if pid in model.ongoing:
                first = model.ongoing.pop(pid)
                model.completed.append((pid, first, offset, action == "abort"))
                if action == "abort":
                    lso = min(model.ongoing.values(), default=offset + 1)
                    model.aborted_entries.append(AbortedTxn(pid, first, offset, lso))
        elif action == "hw":  # to a batch boundary, as followers' fetches make it
            later = [b for b in boundaries if b >= model.high_watermark]
            target = later[amount * (len(later) - 1) // 100]
            model.high_watermark = log.update_high_watermark(target)
        else:
            log.roll()
        boundaries.append(log.log_end_offset)


def _check_reads(log: PartitionLog, model: Model) -> None:
    lso = log.last_stable_offset
    assert lso == model.lso()
    for fetch in range(log.log_start_offset, lso + 1):
        result = log.read(fetch, 1 << 20, read_committed=True)
        if fetch == lso:
            assert result.region is None
            continue
        assert result.region is not None
        headers = [header for header, _records in decode_batches(result.region.read_bytes())]
        assert headers[-1].last_offset < lso, "read_committed data must stay below the LSO"
        upper = result.next_offset
        found = {(t.producer_id, t.first_offset)
                 for t in log.aborted_transactions(fetch, upper)}
        assert found == model.aborted_overlapping(fetch, upper)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_lso_aborted_ranges_and_index_follow_the_model(ops: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = open_log(Path(tmp) / "t-0", small_config(segment_bytes=600))
        model = Model()
        _run(log, model, ops)
        _check_reads(log, model)
        assert all_entries(log) == model.aborted_entries
        # A clean restart keeps open transactions (snapshot) and the index files.
        log.update_high_watermark(log.log_end_offset)
        model.high_watermark = log.log_end_offset
        end = log.log_end_offset
        log.close()
        log = open_log(Path(tmp) / "t-0", small_config(segment_bytes=600),
                       high_watermark=end, recovery_point=end, had_clean_shutdown=True)
        _check_reads(log, model)
        assert all_entries(log) == model.aborted_entries
        # An unclean one rebuilds every index from the markers, even with files lost.
        log.close()
        for path in Path(tmp, "t-0").glob("*.txnindex"):
            path.unlink()
        log = open_log(Path(tmp) / "t-0", small_config(segment_bytes=600),
                       high_watermark=end, recovery_point=0)
        _check_reads(log, model)
        assert all_entries(log) == model.aborted_entries
        log.close()


# ------------------------------------------------------------------ specific rules


def test_abort_writes_a_kafka_txnindex_entry_in_the_marker_segment(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    log.append(txn_batch(7, 0, 2), leader_epoch=0)  # offsets 0-1
    log.append(txn_batch(8, 0, 1), leader_epoch=0)  # offset 2, still open
    log.roll()
    marker = write_marker(log, 7, commit=False)  # offset 3, in the second segment
    assert marker == 3
    index = tmp_path / "topic-0" / "00000000000000000003.txnindex"
    # version 0, pid 7, first 0, last 3, LSO 2 (producer 8 still open)
    assert index.read_bytes() == bytes.fromhex(
        "0000" "0000000000000007" "0000000000000000" "0000000000000003" "0000000000000002"
    )
    assert not (tmp_path / "topic-0" / "00000000000000000000.txnindex").exists()
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 2  # producer 8's transaction holds it
    write_marker(log, 8, commit=True)
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.log_end_offset == 5


def test_completed_transaction_holds_the_lso_until_its_marker_is_replicated(
    tmp_path: Path,
) -> None:
    log = new_log(tmp_path)
    log.append(txn_batch(1, 0, 3), leader_epoch=0)
    log.update_high_watermark(3)
    assert log.last_stable_offset == 0
    write_marker(log, 1, commit=True)  # offset 3
    assert log.last_stable_offset == 0  # the HW (3) has not passed the marker
    log.update_high_watermark(4)
    assert log.last_stable_offset == 4


def test_marker_epoch_and_coordinator_fencing(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    log.append(txn_batch(5, 0, 1, epoch=3), leader_epoch=0)
    with pytest.raises(InvalidProducerEpoch):
        write_marker(log, 5, commit=True, epoch=2)
    write_marker(log, 5, commit=False, epoch=3, coordinator_epoch=4)
    with pytest.raises(TransactionCoordinatorFenced):
        write_marker(log, 5, commit=False, epoch=3, coordinator_epoch=3)
    write_marker(log, 5, commit=False, epoch=4, coordinator_epoch=4)  # bumped epoch: fine
    with pytest.raises(InvalidProducerEpoch):
        log.append(txn_batch(5, 1, 1, epoch=3), leader_epoch=0)  # the zombie is fenced
    assert log.log_end_offset == 3


def test_clients_cannot_write_markers(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    data = encode_marker_batch(TxnMarker(1, 0, ControlType.COMMIT, 0), BASE_TS)
    with pytest.raises(InvalidRecord):
        log.append(data, leader_epoch=0)
    assert log.log_end_offset == 0


def test_plain_batch_inside_an_open_transaction_is_invalid_txn_state(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    log.append(txn_batch(5, 0, 1), leader_epoch=0)
    with pytest.raises(InvalidTxnState):
        log.append(txn_batch(5, 1, 1, transactional=False), leader_epoch=0)


def test_follower_builds_the_same_index_as_the_leader(tmp_path: Path) -> None:
    leader = new_log(tmp_path, name="leader-0")
    follower = new_log(tmp_path, name="follower-0")
    leader.append(txn_batch(1, 0, 2), leader_epoch=0)
    leader.append(txn_batch(2, 0, 2), leader_epoch=0)
    write_marker(leader, 1, commit=False)
    write_marker(leader, 2, commit=True)
    leader.update_high_watermark(leader.log_end_offset)
    region = leader.read(0, 1 << 20, isolation_high_watermark=False).region
    assert region is not None
    follower.append_as_follower(region.read_bytes())
    follower.update_high_watermark(follower.log_end_offset)
    assert all_entries(follower) == all_entries(leader) == [AbortedTxn(1, 0, 4, 2)]
    assert follower.last_stable_offset == leader.last_stable_offset == 6


def test_truncation_drops_index_entries_and_reopens_the_transaction(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    log.append(txn_batch(1, 0, 2), leader_epoch=0)
    write_marker(log, 1, commit=False)  # offset 2
    assert all_entries(log) == [AbortedTxn(1, 0, 2, 3)]
    log.truncate_to(2)
    assert all_entries(log) == []
    log.update_high_watermark(2)
    assert log.last_stable_offset == 0  # the transaction is open again
    write_marker(log, 1, commit=False)
    assert all_entries(log) == [AbortedTxn(1, 0, 2, 3)]


def test_retention_deletes_txnindex_with_its_segment(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=512, retention_ms=1000))
    log.append(txn_batch(1, 0, 1), leader_epoch=0)
    write_marker(log, 1, commit=False)
    log.roll()
    log.append(batch([b"later"], timestamp=BASE_TS + 10**9), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    first = tmp_path / "topic-0" / "00000000000000000000.txnindex"
    assert first.exists()
    assert apply_retention(log, BASE_TS + 10**9) == 1
    log.remove_deleted_segments(force=True)
    assert sorted(p.name for p in (tmp_path / "topic-0").iterdir() if "txnindex" in p.name) == []


def test_cleaner_keeps_index_entries_and_never_passes_the_lso(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=400, cleanup_policy="compact",
                                         min_cleanable_dirty_ratio=0.0))
    for seq in range(3):  # aborted transactions rewriting the same key
        log.append(txn_batch(1, seq, 1, key=b"k"), leader_epoch=0)
        write_marker(log, 1, commit=False)
        log.roll()
    log.append(txn_batch(2, 0, 1, key=b"k"), leader_epoch=0)  # open transaction
    log.roll()
    log.append(batch([b"tail"], keys=[b"other"]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    before = all_entries(log)
    lso = log.last_stable_offset
    assert len(before) == 3 and lso == 6
    assert clean_log(log, 0) is not None
    assert all_entries(log) == before
    assert all(segment.base_offset < lso for segment in log.segments[:-2])
    open_txn = [s for s in log.segments if s.base_offset <= lso < s.next_offset]
    assert open_txn and open_txn[0].base_offset == lso  # the open transaction's segment


def test_markers_stay_control_batches_when_the_topic_recompresses(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(compression_type="gzip"))
    log.append(txn_batch(3, 0, 2), leader_epoch=0)
    write_marker(log, 3, commit=False)
    data = log.read(0, 1 << 20, isolation_high_watermark=False).region
    assert data is not None
    headers = [header for header, _records in decode_batches(data.read_bytes())]
    assert [(h.compression, h.is_control) for h in headers] == [(1, False), (0, True)]
    assert all_entries(log) == [AbortedTxn(3, 0, 2, 3)]


def test_cleaner_drops_aborted_records_so_they_never_shadow_committed_ones(
    tmp_path: Path,
) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=400, cleanup_policy="compact",
                                         min_cleanable_dirty_ratio=0.0))
    log.append(batch([b"committed"], keys=[b"k"]), leader_epoch=0)  # offset 0
    log.append(txn_batch(1, 0, 1, key=b"k"), leader_epoch=0)  # offset 1: aborted below
    write_marker(log, 1, commit=False)  # offset 2
    log.append(txn_batch(2, 0, 1, key=b"other"), leader_epoch=0)  # offset 3: committed
    write_marker(log, 2, commit=True)  # offset 4
    log.roll()
    log.append(batch([b"tail"], keys=[b"tail"]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert clean_log(log, 0) is not None
    region = log.read(0, 1 << 20, isolation_high_watermark=False).region
    assert region is not None
    survivors = [(h.base_offset, r.key, h.is_control)
                 for h, records in decode_batches(region.read_bytes()) for r in records]
    assert (0, b"k", False) in survivors, "the committed value must survive"
    assert all(offset != 1 for offset, _key, _control in survivors)
    assert (3, b"other", False) in survivors
    assert all_entries(log) == [AbortedTxn(1, 1, 2, 3)]
