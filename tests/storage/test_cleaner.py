"""Compaction: last value per key, tombstones, offsets, compressed batches, passes, swaps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from odradek.protocol.records import Record, encode_batch
from odradek.storage import PartitionLog, open_log
from odradek.storage.cleaner import clean_log
from tests.storage.helpers import BASE_TS, all_records, batch, new_log, read_all, small_config


def _compacted(tmp_path: Path, **overrides: object) -> PartitionLog:
    settings: dict[str, object] = {
        "segment_bytes": 2048,
        "cleanup_policy": "compact",
        "min_cleanable_dirty_ratio": 0.0,
        "delete_retention_ms": 10**12,
    }
    settings.update(overrides)
    return new_log(tmp_path, small_config(**settings))


def _write_keys(
    log: PartitionLog, rounds: int, keys: int, compression: int = 0
) -> dict[bytes, tuple[int, bytes]]:
    latest: dict[bytes, tuple[int, bytes]] = {}
    for r in range(rounds):
        for k in range(0, keys, 2):
            key_values = [(b"key-%d" % (k + j), b"v%d-%d" % (r, k + j)) for j in range(2)]
            info = log.append(
                batch(
                    [v for _k, v in key_values],
                    keys=[k for k, _v in key_values],
                    compression=compression,
                ),
                leader_epoch=0,
            )
            for j, (key, value) in enumerate(key_values):
                latest[key] = (info.first_offset + j, value)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return latest


@pytest.mark.parametrize("compression", [0, 1, 2, 3, 4])
def test_keeps_last_value_per_key_and_preserves_offsets(tmp_path: Path, compression: int) -> None:
    log = _compacted(tmp_path)
    latest = _write_keys(log, rounds=10, keys=20, compression=compression)
    before = log.size_bytes()
    result = clean_log(log, 0)
    assert result is not None and result.first_dirty_offset == log.log_end_offset
    records = list(all_records(log))
    assert {r.key: (r.offset, r.value) for r in records} == latest
    assert len(records) == 20, "exactly one record per key must remain"
    offsets = [r.offset for r in records]
    assert offsets == sorted(offsets)
    assert log.size_bytes() < before
    for header, _records in read_all(log):
        assert header.compression == compression
    # the log keeps working: append and read at the right offsets
    info = log.append(batch([b"x"], keys=[b"key-0"]), leader_epoch=0)
    assert info.first_offset == 200


def test_tombstones_removed_only_after_delete_retention(tmp_path: Path) -> None:
    log = _compacted(tmp_path, delete_retention_ms=60_000)
    _write_keys(log, rounds=2, keys=10)
    log.append(batch([None], keys=[b"key-3"]), leader_epoch=0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, 0)
    records = {r.key: r.value for r in all_records(log)}
    assert b"key-3" in records and records[b"key-3"] is None, "fresh tombstone must survive"
    # age every segment past delete.retention.ms
    old = (BASE_TS - 10**7) / 1000
    for path in log.dir.glob("*.log"):
        os.utime(path, (old, old))
    clean_log(log, 0)
    keys = {r.key for r in all_records(log)}
    assert b"key-3" not in keys
    assert len(keys) == 9


def test_active_segment_and_uncommitted_data_are_never_cleaned(tmp_path: Path) -> None:
    log = _compacted(tmp_path, segment_bytes=1 << 20)
    for i in range(50):
        log.append(batch([b"%d" % i], keys=[b"same"]), leader_epoch=0)
    log.update_high_watermark(50)
    assert clean_log(log, 0) is None  # everything is in the active segment
    log.roll()
    for i in range(5):
        log.append(batch([b"late%d" % i], keys=[b"same"]), leader_epoch=0)
    log.roll()
    log.update_high_watermark(50)  # second segment holds offsets above the high watermark
    result = clean_log(log, 0)
    assert result is not None and result.first_dirty_offset == 50
    assert [r.offset for r in all_records(log)] == [49, 50, 51, 52, 53, 54]


def test_min_compaction_lag(tmp_path: Path) -> None:
    log = _compacted(tmp_path, min_compaction_lag_ms=60_000)
    for i in range(40):
        log.append(batch([b"%d" % i], keys=[b"k"], timestamp=BASE_TS), leader_epoch=0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert clean_log(log, 0, now=BASE_TS + 1000) is None
    assert clean_log(log, 0, now=BASE_TS + 120_000) is not None
    assert len(list(all_records(log))) == 1


def test_small_dedupe_buffer_cleans_in_passes(tmp_path: Path) -> None:
    log = _compacted(tmp_path)
    latest = _write_keys(log, rounds=5, keys=40)
    first_dirty = 0
    passes = 0
    while first_dirty < log.log_end_offset:
        result = clean_log(log, first_dirty, dedupe_buffer_size=24 * 30)  # ~27 keys per pass
        assert result is not None
        first_dirty = result.first_dirty_offset
        passes += 1
    assert passes > 2
    final = clean_log(log, 0, dedupe_buffer_size=1 << 20)
    assert final is not None
    assert {r.key: (r.offset, r.value) for r in all_records(log)} == latest


def test_last_batch_of_a_producer_survives_as_empty_batch(tmp_path: Path) -> None:
    log = _compacted(tmp_path)
    log.append(
        encode_batch(
            [Record(key=b"k", value=b"old", timestamp=BASE_TS)],
            producer_id=9,
            producer_epoch=0,
            base_sequence=0,
        ),
        leader_epoch=0,
    )
    log.append(batch([b"new"], keys=[b"k"]), leader_epoch=0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, 0)
    batches = read_all(log)
    assert [(h.base_offset, h.producer_id, h.record_count) for h, _r in batches] == [
        (0, 9, 0),
        (1, -1, 1),
    ]
    log.close()
    reopened = open_log(log.dir, log.config)
    assert reopened.producer_state.producers[9].last_seq == 0


def test_interrupted_swap_is_completed_on_restart(tmp_path: Path) -> None:
    log = _compacted(tmp_path)
    latest = _write_keys(log, rounds=4, keys=10)
    log.close()
    reopened = open_log(log.dir, log.config)
    reopened.update_high_watermark(reopened.log_end_offset)
    original_replace = reopened.replace_segments

    def crash_after_swap_rename(new, old):
        for segment in new:
            segment.change_suffix(".swap")
        raise RuntimeError("crash")

    reopened.replace_segments = crash_after_swap_rename  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        clean_log(reopened, 0)
    reopened.replace_segments = original_replace  # type: ignore[method-assign]
    assert list(log.dir.glob("*.swap"))
    recovered = open_log(log.dir, log.config)
    assert not list(log.dir.glob("*.swap"))
    assert {r.key: (r.offset, r.value) for r in all_records(recovered)} == latest
