"""LogManager: checkpoint files, dirs, deletion, background threads, config changes."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from odradek.storage import LogConfig, LogManager
from odradek.storage.checkpoint import CorruptCheckpoint, OffsetCheckpointFile, write_atomically
from odradek.storage.leader_epoch import LeaderEpochFileCache
from odradek.types import TopicPartition
from tests.storage.helpers import BASE_TS, all_records, batch, small_config

from .helpers import settings


def _wait_for(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.02)


def test_checkpoint_files_use_kafkas_text_format(tmp_path: Path) -> None:
    manager = LogManager(settings(tmp_path), small_config(), background=False)
    for partition in range(2):
        log = manager.get_or_create_log("orders", partition)
        for i in range(5 + partition):
            log.append(batch([b"%d" % i]), leader_epoch=1)
        log.update_high_watermark(3)
    manager.shutdown()
    recovery = (tmp_path / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert recovery[:2] == ["0", "2"]
    assert sorted(recovery[2:]) == ["orders 0 5", "orders 1 6"]
    replication = (tmp_path / "replication-offset-checkpoint").read_text().splitlines()
    assert sorted(replication[2:]) == ["orders 0 3", "orders 1 3"]
    starts = (tmp_path / "log-start-offset-checkpoint").read_text().splitlines()
    assert sorted(starts[2:]) == ["orders 0 0", "orders 1 0"]
    epochs = (tmp_path / "orders-0" / "leader-epoch-checkpoint").read_text().splitlines()
    assert epochs == ["0", "1", "1 0"]
    reopened = LogManager(settings(tmp_path), small_config(), background=False)
    loaded = reopened.get_log("orders", 1)
    assert loaded is not None
    assert (loaded.log_end_offset, loaded.high_watermark, loaded.recovery_point) == (6, 3, 6)
    reopened.shutdown()


def test_checkpoint_write_is_atomic_and_corruption_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(path)
    checkpoint.write({TopicPartition("a", 0): 5, TopicPartition("b-c", 12): 7})
    assert checkpoint.read() == {("a", 0): 5, ("b-c", 12): 7}
    assert not list(tmp_path.glob("*.tmp"))
    write_atomically(path, b"0\n3\na 0 1\n")
    with pytest.raises(CorruptCheckpoint):
        checkpoint.read()


def test_leader_epoch_cache_rules(tmp_path: Path) -> None:
    cache = LeaderEpochFileCache(tmp_path / "leader-epoch-checkpoint")
    cache.assign(1, 0)
    cache.assign(1, 5)  # same epoch: no new entry
    cache.assign(3, 10)
    cache.assign(4, 20)
    assert cache.end_offset_for(1, 30) == (1, 10)
    assert cache.end_offset_for(2, 30) == (1, 10)
    assert cache.end_offset_for(4, 30) == (4, 30)
    assert cache.end_offset_for(0, 30) == (0, 0)
    assert cache.end_offset_for(7, 30) == (-1, -1)
    cache.truncate_from_end(15)
    assert cache.entries == [(1, 0), (3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(3, 12)]
    assert LeaderEpochFileCache(tmp_path / "leader-epoch-checkpoint").entries == [(3, 12)]


def test_delete_log_renames_then_removes_the_directory(tmp_path: Path) -> None:
    manager = LogManager(settings(tmp_path), small_config(file_delete_delay_ms=0), background=False)
    log = manager.get_or_create_log("gone", 0)
    log.append(batch([b"x"]), leader_epoch=0)
    manager.delete_log("gone", 0)
    assert manager.get_log("gone", 0) is None
    assert not (tmp_path / "gone-0").exists()
    pending = [p for p in tmp_path.iterdir() if p.name.endswith("-delete")]
    assert len(pending) == 1 and pending[0].name.startswith("gone-0.")
    manager.remove_deleted_files()
    assert not pending[0].exists()
    manager.shutdown()


def test_logs_spread_over_log_dirs_and_meta_properties(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    manager = LogManager(settings(*dirs), small_config(), background=False)
    for partition in range(4):
        manager.get_or_create_log("t", partition)
    assert sorted(len(list(d.glob("t-*"))) for d in dirs) == [2, 2]
    manager.write_meta_properties({"version": "0", "broker.id": "3", "cluster.id": "abc"})
    assert manager.read_meta_properties()[1]["broker.id"] == "3"
    manager.shutdown()


def test_background_retention_and_file_removal(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1024, retention_ms=1000, file_delete_delay_ms=0)
    manager = LogManager(
        settings(tmp_path, retention_check_interval_ms=50, file_delete_check_interval_ms=50,
                 cleaner_enable=False),
        config,
    )
    try:
        log = manager.get_or_create_log("old", 0)
        for i in range(100):
            log.append(batch([b"%d" % i], timestamp=BASE_TS), leader_epoch=0)
        _wait_for(lambda: len(log.segments) == 1)
        _wait_for(lambda: not list(log.dir.glob("*.deleted")))
        assert log.log_start_offset == log.segments[0].base_offset > 0
    finally:
        manager.shutdown()


def test_background_flush_by_flush_ms(tmp_path: Path) -> None:
    manager = LogManager(
        settings(tmp_path, flush_check_interval_ms=20, cleaner_enable=False),
        small_config(flush_ms=10),
    )
    try:
        log = manager.get_or_create_log("f", 0)
        log.append(batch([b"a", b"b"]), leader_epoch=0)
        _wait_for(lambda: log.recovery_point == 2)
    finally:
        manager.shutdown()


def test_flush_messages_flushes_on_append(tmp_path: Path) -> None:
    manager = LogManager(settings(tmp_path), small_config(flush_messages=3), background=False)
    log = manager.get_or_create_log("f", 0)
    log.append(batch([b"a", b"b"]), leader_epoch=0)
    assert log.recovery_point == 0
    log.append(batch([b"c"]), leader_epoch=0)
    assert log.recovery_point == 3
    manager.shutdown()


def test_cleaner_runs_for_compacted_topics_after_config_change(tmp_path: Path) -> None:
    manager = LogManager(settings(tmp_path), small_config(segment_bytes=1024), background=False)
    log = manager.get_or_create_log("c", 0)
    for i in range(200):
        log.append(batch([b"%d" % i], keys=[b"k%d" % (i % 5)]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert manager.run_cleaner_once() == 0  # delete policy: nothing to compact
    compact = LogConfig.from_topic_config(
        {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
        defaults=small_config(segment_bytes=1024),
    )
    manager.update_config("c", compact)
    assert manager.run_cleaner_once() == 1
    remaining = list(all_records(log))
    assert len(remaining) < 200
    latest = {r.key: r.value for r in remaining}
    assert latest == {b"k%d" % k: b"%d" % (195 + k) for k in range(5)}
    manager.shutdown()
    checkpoint = OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read()
    assert checkpoint[TopicPartition("c", 0)] > 0


def test_truncation_rewinds_the_cleaner_checkpoint(tmp_path: Path) -> None:
    compact = small_config(
        segment_bytes=1024, cleanup_policy="compact", min_cleanable_dirty_ratio=0.01
    )
    manager = LogManager(settings(tmp_path), compact, background=False)
    log = manager.get_or_create_log("c", 0)
    for i in range(100):
        log.append(batch([b"%d" % i], keys=[b"k%d" % (i % 5)]), leader_epoch=0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert manager.run_cleaner_once() == 1
    log.truncate_to(log.segments[1].base_offset)  # below the cleaner's first dirty offset
    # re-fill up to the old first dirty offset (100) with duplicates, then other keys only
    while log.log_end_offset < 100:
        offset = log.log_end_offset
        log.append(batch([b"new%d" % offset], keys=[b"k%d" % (offset % 5)]), leader_epoch=1)
    for i in range(10):
        log.append(batch([b"z%d" % i], keys=[b"z%d" % i]), leader_epoch=1)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert manager.run_cleaner_once() == 1
    keys = [r.key for r in all_records(log)]
    assert len(keys) == len(set(keys)) == 15, "data appended after the truncation is cleaned"
    manager.shutdown()


def test_topic_deletion_churn_with_periodic_checkpoints_never_clashes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """delete_log writes every checkpoint while the scheduler writes them too: one writer
    per file, so no FileNotFoundError on the shared .tmp and no torn file."""
    manager = LogManager(
        settings(tmp_path, high_watermark_checkpoint_interval_ms=1,
                 recovery_point_checkpoint_interval_ms=1, log_start_checkpoint_interval_ms=1,
                 cleaner_enable=False),
        small_config(file_delete_delay_ms=0),
    )
    deadline = time.monotonic() + 3
    try:
        with caplog.at_level(logging.ERROR, logger="odradek.storage"):
            for round_ in range(300):
                if time.monotonic() > deadline:
                    break
                for partition in range(3):
                    log = manager.get_or_create_log(f"churn{round_ % 4}", partition)
                    log.append(batch([b"x"]), leader_epoch=0)
                    log.update_high_watermark(log.log_end_offset)
                for partition in range(3):
                    manager.delete_log(f"churn{round_ % 4}", partition)
    finally:
        manager.shutdown()
    failures = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, failures[:3]
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        OffsetCheckpointFile(tmp_path / name).read()  # parses: not torn
