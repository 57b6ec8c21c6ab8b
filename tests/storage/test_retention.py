"""Retention by time, by size and by log start; deferred deletion with readers."""

from __future__ import annotations

from pathlib import Path

from odradek.storage.retention import apply_retention
from tests.storage.helpers import BASE_TS, all_records, batch, new_log, small_config


def _fill(log, count: int, timestamp_step: int = 1000) -> None:
    for i in range(count):
        log.append(batch([b"%04d" % i], timestamp=BASE_TS + i * timestamp_step), leader_epoch=0)


def test_retention_ms_deletes_whole_old_segments_only(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1024, retention_ms=50_000))
    _fill(log, 100)  # timestamps BASE_TS .. BASE_TS + 99 s
    now = BASE_TS + 99_000 + 1
    deleted = apply_retention(log, now)
    assert deleted > 0
    first = log.segments[0]
    # the first remaining segment holds a record newer than the horizon; all older are gone
    assert first.max_timestamp >= now - 50_000
    assert log.log_start_offset == first.base_offset > 0
    values = [r.value for r in all_records(log)]
    assert values == [b"%04d" % i for i in range(log.log_start_offset, 100)]


def test_retention_never_deletes_the_active_segment(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1024, retention_ms=1))
    _fill(log, 100)
    apply_retention(log, BASE_TS + 10**9)
    assert len(log.segments) == 1
    assert log.segments[0].size > 0
    assert log.log_end_offset == 100


def test_retention_bytes(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1024, retention_bytes=3000))
    _fill(log, 200)
    before = log.size_bytes()
    apply_retention(log, BASE_TS)
    # Kafka's rule: delete the oldest segment while the rest still holds >= retention.bytes
    assert log.size_bytes() < before
    assert log.size_bytes() >= 3000
    assert log.size_bytes() - log.segments[0].size < 3000


def test_delete_policy_off_for_compact_only_topics(tmp_path: Path) -> None:
    log = new_log(
        tmp_path, small_config(segment_bytes=1024, retention_ms=1, cleanup_policy="compact")
    )
    _fill(log, 100)
    assert apply_retention(log, BASE_TS + 10**9) == 0


def test_deleted_segment_stays_readable_through_a_held_region(tmp_path: Path) -> None:
    log = new_log(
        tmp_path, small_config(segment_bytes=1024, retention_ms=1, file_delete_delay_ms=60_000)
    )
    _fill(log, 100)
    held = log.read(0, 1 << 20, isolation_high_watermark=False).region
    assert held is not None
    expected = held.read_bytes()
    apply_retention(log, BASE_TS + 10**9)
    first_name = "00000000000000000000.log"
    assert not (log.dir / first_name).exists()
    assert (log.dir / (first_name + ".deleted")).exists()
    assert held.read_bytes() == expected
    # Deletion is due file.delete.delay.ms after the wall-clock time of the retention pass;
    # BASE_TS lies years before it, so nothing is removed yet and readers keep their region.
    assert log.remove_deleted_segments(now=BASE_TS) == 0
    assert (log.dir / (first_name + ".deleted")).exists()
    assert held.read_bytes() == expected
    assert log.remove_deleted_segments(force=True) > 0
    assert not (log.dir / (first_name + ".deleted")).exists()
    assert held.read_bytes() == expected, "an unlinked file stays readable through the region"


def test_retention_decision_on_a_stale_segment_list_deletes_nothing_unjudged(
    tmp_path: Path,
) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1024))
    _fill(log, 100)
    judged = log.segments
    log.truncate_fully_and_start_at(100)  # the log changed after the decision
    _fill(log, 100)
    assert log.delete_oldest_segments(3, "test", decided_on=judged) == 0
    assert log.segments[0].base_offset == 100


def test_a_changed_file_delete_delay_applies_to_the_next_deletion(tmp_path: Path) -> None:
    log = new_log(
        tmp_path, small_config(segment_bytes=1024, retention_ms=1, file_delete_delay_ms=60_000)
    )
    _fill(log, 100)
    log.update_config(small_config(segment_bytes=1024, retention_ms=1, file_delete_delay_ms=0))
    assert apply_retention(log, BASE_TS + 10**9) > 0
    assert log.remove_deleted_segments() > 0, "file.delete.delay.ms=0 unlinks at once"
    assert not list(log.dir.glob("*.deleted"))
