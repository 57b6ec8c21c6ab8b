"""The cleaner and transaction markers: aborted data goes in the first pass, a marker stays
while its transaction has data, is stamped with a delete horizon once it has none, and goes
(with its .txnindex entry) only in a pass past that horizon.

The model test runs random transactional histories on a compacted log, cleans it at
advancing times and checks, after every pass and after a full rebuild of producer state
from the log, what a read_committed consumer sees: no aborted value ever, the latest
committed value of every key, and no transaction left open by a marker that went too soon.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol import records as rec
from odradek.protocol.control_records import (
    ControlType,
    TxnMarker,
    encode_marker_batch,
    read_marker,
)
from odradek.protocol.records import Record, encode_batch
from odradek.storage import PartitionLog, open_log
from odradek.storage.cleaner import clean_log, delete_horizon_of
from tests.storage.helpers import BASE_TS, small_config

RETENTION = 60_000
NOW = BASE_TS + 10**7


def _config() -> object:
    return small_config(segment_bytes=500, cleanup_policy="compact",
                        min_cleanable_dirty_ratio=0.0, delete_retention_ms=RETENTION)


def _open(path: Path, **kwargs: int) -> PartitionLog:
    return open_log(path, _config(), **kwargs)  # type: ignore[arg-type]


def _data(pid: int, seq: int, key: bytes, value: bytes, transactional: bool = True) -> bytes:
    return encode_batch([Record(timestamp=BASE_TS, key=key, value=value)], producer_id=pid,
                        producer_epoch=0, base_sequence=seq, is_transactional=transactional)


def _marker(log: PartitionLog, pid: int, commit: bool) -> int:
    marker = TxnMarker(pid, 0, ControlType(int(commit)), 0)
    return log.append(encode_marker_batch(marker, BASE_TS), leader_epoch=0,
                      from_coordinator=True).first_offset


def _regions(log: PartitionLog, read_committed: bool) -> list[tuple[int, bytes]]:
    """(fetch offset, bytes) of every fetch from the log start to the end (or LSO)."""
    out: list[tuple[int, bytes]] = []
    fetch = log.log_start_offset
    while True:
        result = log.read(fetch, 1 << 24, isolation_high_watermark=False,
                          read_committed=read_committed)
        if result.region is None or result.next_offset <= fetch:
            return out
        out.append((fetch, result.region.read_bytes()))
        fetch = result.next_offset


def _batches(log: PartitionLog) -> list[tuple[rec.BatchHeader, bytes]]:
    return [(header, data[pos:pos + header.size]) for _fetch, data in _regions(log, False)
            for pos, header in rec.iter_batch_headers(data)]


def read_committed(log: PartitionLog) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) in offset order as Kafka's consumer delivers them at read_committed: each
    fetch's aborted transactions, skipping a producer's batches from an aborted first offset
    until its ABORT marker."""
    out: list[tuple[bytes | None, bytes | None]] = []
    skipping: set[int] = set()
    for fetch, data in _regions(log, True):
        headers = list(rec.iter_batch_headers(data))
        upper = headers[-1][1].next_offset
        aborted = sorted((t.first_offset, t.producer_id)
                         for t in log.aborted_transactions(fetch, upper))
        for pos, header in headers:
            while aborted and aborted[0][0] <= header.last_offset:
                skipping.add(aborted.pop(0)[1])
            if header.is_control:
                if read_marker(data, pos).is_abort:
                    skipping.discard(header.producer_id)
                continue
            if header.is_transactional and header.producer_id in skipping:
                continue
            _header, records = rec.decode_batch(data, pos)
            out.extend((record.key, record.value) for record in records)
    return out


def _control_offsets(log: PartitionLog) -> list[int]:
    return [header.base_offset for header, _data in _batches(log) if header.is_control]


def test_markers_outlive_their_data_by_the_delete_horizon(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0")
    log.append(_data(1, 0, b"k", b"aborted"), leader_epoch=0)  # 0
    _marker(log, 1, commit=False)  # 1
    log.append(_data(2, 0, b"k", b"old"), leader_epoch=0)  # 2
    _marker(log, 2, commit=True)  # 3
    log.append(_data(2, 1, b"k", b"new"), leader_epoch=0)  # 4: shadows 2
    _marker(log, 2, commit=True)  # 5: its transaction keeps data
    log.append(_data(1, 1, b"j", b"later", transactional=False), leader_epoch=0)  # 6
    log.roll()
    log.append(_data(3, 0, b"tail", b"tail", transactional=False), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert [entry.last_offset for s in log.segments for entry in s.txn_index.entries] == [1]

    assert clean_log(log, 0, now=NOW) is not None
    # data of the aborted (0) and the shadowed (2) transactions is gone; every marker
    # stays, the two without data stamped with their horizon, the third untouched
    headers = {h.base_offset: h for h, _data in _batches(log)}
    assert 0 not in headers and 2 not in headers
    assert [offset for offset, h in headers.items() if h.is_control] == [1, 3, 5]
    assert delete_horizon_of(headers[1]) == delete_horizon_of(headers[3]) == NOW + RETENTION
    assert delete_horizon_of(headers[5]) is None
    assert read_committed(log) == [(b"k", b"new"), (b"j", b"later"), (b"tail", b"tail")]

    clean_log(log, 0, now=NOW + RETENTION - 1)  # not yet
    assert _control_offsets(log) == [1, 3, 5]
    assert clean_log(log, 0, now=NOW + RETENTION) is not None
    assert _control_offsets(log) == [5]
    assert [entry for s in log.segments for entry in s.txn_index.entries] == []
    assert read_committed(log) == [(b"k", b"new"), (b"j", b"later"), (b"tail", b"tail")]

    # rebuilt from the log alone, nothing is left open
    end = log.log_end_offset
    log.close()
    for snapshot in (tmp_path / "t-0").glob("*.snapshot"):
        snapshot.unlink()
    log = _open(tmp_path / "t-0", high_watermark=end, recovery_point=0)
    assert log.last_stable_offset == end
    assert all(e.current_txn_first_offset < 0 for e in log.producer_state.producers.values())
    log.close()


def test_an_aborted_producers_last_batch_keeps_its_marker(tmp_path: Path) -> None:
    """The empty batch kept for the producer's sequence state is transactional: without the
    marker, a rebuild would open its transaction forever."""
    log = _open(tmp_path / "t-0")
    log.append(_data(1, 0, b"k", b"aborted"), leader_epoch=0)
    _marker(log, 1, commit=False)
    log.roll()
    log.append(_data(3, 0, b"tail", b"tail", transactional=False), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    for now in (NOW, NOW + 2 * RETENTION):
        clean_log(log, 0, now=now)
        kinds = [(h.base_offset, h.is_control, h.record_count) for h, _data in _batches(log)]
        assert kinds[:2] == [(0, False, 0), (1, True, 1)]
        assert read_committed(log) == [(b"tail", b"tail")]


operations = st.lists(
    st.one_of(
        st.tuples(st.just("data"), st.integers(1, 3), st.integers(0, 3)),
        st.tuples(st.just("plain"), st.just(9), st.integers(0, 3)),
        st.tuples(st.sampled_from(["commit", "abort"]), st.integers(1, 3), st.just(0)),
        st.tuples(st.just("roll"), st.just(0), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, st.lists(st.integers(0, 3 * RETENTION), min_size=1, max_size=4))
def test_read_committed_view_survives_every_cleaning_pass(
    ops: list[tuple[str, int, int]], pass_offsets: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t-0"
        log = _open(path)
        sequences: dict[int, int] = {}
        pending: dict[int, list[tuple[bytes, bytes]]] = {}
        aborted_values: set[bytes] = set()

        def end(pid: int, commit: bool) -> None:
            _marker(log, pid, commit)
            if not commit:
                aborted_values.update(value for _key, value in pending.get(pid, []))
            pending.pop(pid, None)

        for counter, (action, pid, key_index) in enumerate(ops):
            key = b"k%d" % key_index
            value = b"v%d" % counter
            if action == "data":
                log.append(_data(pid, sequences.get(pid, 0), key, value), leader_epoch=0)
                sequences[pid] = sequences.get(pid, 0) + 1
                pending.setdefault(pid, []).append((key, value))
            elif action == "plain":
                log.append(_data(-1, -1, key, value, transactional=False), leader_epoch=0)
            elif action in ("commit", "abort"):
                end(pid, action == "commit")
            else:
                log.roll()
        for pid in list(pending):
            end(pid, commit=pid % 2 == 0)
        log.roll()
        log.append(_data(-1, -1, b"tail", b"tail", transactional=False), leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)

        def latest(view: list[tuple[bytes | None, bytes | None]]) -> dict[bytes, bytes]:
            found: dict[bytes, bytes] = {}
            for k, v in view:
                assert v not in aborted_values, f"aborted value {v!r} visible"
                if k is not None and v is not None:
                    found[k] = v
            return found

        expected = latest(read_committed(log))
        now = NOW
        for step in sorted(pass_offsets):
            clean_log(log, 0, now=now + step)
            assert latest(read_committed(log)) == expected
        final_end = log.log_end_offset
        log.close()
        for snapshot in path.glob("*.snapshot"):
            snapshot.unlink()
        log = _open(path, high_watermark=final_end, recovery_point=0)
        assert log.last_stable_offset == final_end, "a removed marker left a transaction open"
        assert latest(read_committed(log)) == expected
        log.close()


def test_the_log_manager_runs_the_marker_pass_when_the_horizon_passes(tmp_path: Path) -> None:
    """Nothing new is dirty after the first pass; the marker still goes once its delete
    horizon passes, because the manager remembers when the next pass is due."""
    from odradek.storage import LogManager
    from tests.storage.helpers import settings

    manager = LogManager(settings(tmp_path), _config(), background=False)  # type: ignore[arg-type]
    log = manager.get_or_create_log("t", 0)
    log.append(_data(1, 0, b"k", b"aborted"), leader_epoch=0)
    _marker(log, 1, commit=False)
    log.append(_data(1, 1, b"j", b"later", transactional=False), leader_epoch=0)
    log.roll()
    log.append(_data(3, 0, b"tail", b"tail", transactional=False), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert manager.run_cleaner_once(now=NOW) == 1  # aborted data out, the marker stamped
    assert _control_offsets(log) == [1]
    assert manager.run_cleaner_once(now=NOW + RETENTION - 1) == 0  # nothing due yet
    assert manager.run_cleaner_once(now=NOW + RETENTION) == 1
    assert _control_offsets(log) == []
    assert read_committed(log) == [(b"j", b"later"), (b"tail", b"tail")]
    assert manager.run_cleaner_once(now=NOW + 10 * RETENTION) == 0  # and then nothing
    manager.shutdown()
