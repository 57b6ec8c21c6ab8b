"""All partition logs of a broker across its log dirs, and the background work on them.

Each log dir holds ``<topic>-<partition>/`` directories, the offset checkpoints of
:mod:`odradek.storage.checkpoint`, ``meta.properties`` (written by the broker) and, between a
clean shutdown and the next start, the empty marker file ``.kafka_cleanshutdown``.

Start-up: every log is opened (:func:`odradek.storage.recovery.open_log`) with the recovery
point, log start offset and high watermark from the checkpoints. If the marker is present no
segment is scanned; it is then removed, so a crash from here on is detected as unclean.
A checkpoint file that does not parse counts as an unclean shutdown with unknown offsets
(full recovery of that dir). Directories named ``*-delete`` are removed in the background.

Background work (``background=True``), on one scheduler thread plus a cleaner thread:

* flusher, every second: flushes logs whose ``flush.ms`` elapsed;
* retention, every ``log.retention.check.interval.ms``;
* idle producers dropped from producer state (``producer.id.expiration.ms``), every
  ``producer.id.expiration.check.interval.ms``;
* checkpoints: recovery points every ``log.flush.offset.checkpoint.interval.ms`` and log
  start offsets every 60 s, high watermarks every
  ``replica.high.watermark.checkpoint.interval.ms``;
* removal of ``.deleted`` segment files whose ``file.delete.delay.ms`` passed, every second;
* the cleaner, every ``log.cleaner.backoff.ms`` (compacted logs only; also once a
  transaction marker's delete horizon passes, to remove it).

Shutdown flushes and closes every log, writes every checkpoint, then the marker.
"""

from __future__ import annotations

import logging
import shutil
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from odradek.clock import monotonic_s, wall_ms
from odradek.storage.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CorruptCheckpoint,
    OffsetCheckpointFile,
    fsync_directory,
    read_meta_properties,
    write_meta_properties,
)
from odradek.storage.cleaner import clean_log, needs_cleaning
from odradek.storage.log import PartitionLog, parse_log_dir_name
from odradek.storage.log_config import LogConfig
from odradek.storage.recovery import open_log
from odradek.storage.retention import apply_retention
from odradek.storage.scheduler import Scheduler
from odradek.types import TopicPartition

__all__ = ["CLEAN_SHUTDOWN_FILE", "LogManager", "LogManagerObserver", "LogManagerSettings"]

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
DELETE_DIR_SUFFIX = "-delete"


class LogManagerObserver(Protocol):
    """What the broker's metrics are told: flushes (any thread), start-up recovery, and
    each cleaner pass (the cleaner thread). Implementations must be thread-safe."""

    def flushed(self, seconds: float) -> None: ...

    def fsynced(self, seconds: float) -> None: ...

    def recovered(self, seconds: float, *, clean: int, unclean: int) -> None: ...

    def cleaned(self, seconds: float, *, read_bytes: int, written_bytes: int) -> None: ...

    def cleaner_failed(self) -> None: ...


class LogManagerSettings(Protocol):
    """What the log manager reads of the broker's configuration: where logs live and the
    cadence of the background work. The broker passes its ``log`` section
    (``config_sections.LogManagerConfig``); storage sits below the configuration layer, so it
    states what it needs instead of naming that class."""

    @property
    def log_dirs(self) -> tuple[Path, ...]: ...
    @property
    def retention_check_interval_ms(self) -> int: ...
    @property
    def recovery_point_checkpoint_interval_ms(self) -> int: ...
    @property
    def high_watermark_checkpoint_interval_ms(self) -> int: ...
    @property
    def log_start_checkpoint_interval_ms(self) -> int: ...
    @property
    def flush_check_interval_ms(self) -> int: ...
    @property
    def file_delete_check_interval_ms(self) -> int: ...
    @property
    def cleaner_enable(self) -> bool: ...
    @property
    def cleaner_backoff_ms(self) -> int: ...
    @property
    def cleaner_dedupe_buffer_size(self) -> int: ...
    @property
    def producer_id_expiration_ms(self) -> int: ...
    @property
    def producer_id_expiration_check_interval_ms(self) -> int: ...


class LogManager:
    """The broker's logs, with the background work of its :class:`LogManagerSettings`
    (``settings`` is replaced whole by :meth:`reconfigure`)."""

    def __init__(
        self,
        settings: LogManagerSettings,
        default_config: LogConfig,
        *,
        background: bool = True,
        topic_configs: Mapping[str, LogConfig] | None = None,
        observer: LogManagerObserver | None = None,
    ) -> None:
        if not settings.log_dirs:
            raise ValueError("at least one log dir is required")
        self.settings = settings
        self.log_dirs = [Path(directory) for directory in settings.log_dirs]
        self.default_config = default_config
        self._topic_configs: dict[str, LogConfig] = dict(topic_configs or {})
        self._lock = threading.RLock()
        # One writer per checkpoint file: the scheduler's periodic checkpoints, a topic
        # deletion and shutdown all write the same files (through the same ``.tmp``).
        self._checkpoint_lock = threading.RLock()
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._log_dir_of: dict[TopicPartition, Path] = {}
        self._cleaner_offsets: dict[TopicPartition, int] = {}
        # Earliest delete horizon of a transaction marker the cleaner kept, per log: a pass
        # is due then even if nothing is dirty (in memory: after a restart, the next
        # ordinary pass removes them).
        self._marker_horizons: dict[TopicPartition, int] = {}
        self._deleted_dirs: list[tuple[int, Path]] = []
        self._closed = False
        self._scheduler = Scheduler() if background else None
        self._observer = observer
        started = monotonic_s()
        loaded = {True: 0, False: 0}  # partitions after a clean / an unclean shutdown
        for directory in self.log_dirs:
            clean, count = self._load_dir(directory)
            loaded[clean] += count
        if observer is not None:
            observer.recovered(monotonic_s() - started, clean=loaded[True],
                               unclean=loaded[False])
            for partition_log in self._logs.values():
                partition_log.flush_observer = observer
        self._cleaner_stop = threading.Event()
        self._cleaner_thread: threading.Thread | None = None
        if self._scheduler is not None:
            for name, task, period_ms in (
                ("flusher", self._flush_due_logs, settings.flush_check_interval_ms),
                ("retention", self.run_retention_once, settings.retention_check_interval_ms),
                ("producer-expiration", self.remove_expired_producers,
                 settings.producer_id_expiration_check_interval_ms),
                ("recovery-point-checkpoint", self._checkpoint_recovery_points,
                 settings.recovery_point_checkpoint_interval_ms),
                ("log-start-checkpoint", self._checkpoint_log_start_offsets,
                 settings.log_start_checkpoint_interval_ms),
                ("high-watermark-checkpoint", self._checkpoint_high_watermarks,
                 settings.high_watermark_checkpoint_interval_ms),
                ("delete-files", self.remove_deleted_files,
                 settings.file_delete_check_interval_ms),
            ):
                self._scheduler.schedule(name, task, delay_ms=period_ms, period_ms=period_ms)
            if settings.cleaner_enable:
                self._cleaner_thread = threading.Thread(
                    target=self._cleaner_loop,
                    args=(settings.cleaner_backoff_ms,),
                    name="odradek-log-cleaner",
                    daemon=True,
                )
                self._cleaner_thread.start()

    def reconfigure(self, settings: LogManagerSettings) -> None:
        """A new ``log`` section (dynamic broker configs). The next cleaner pass uses its
        dedupe buffer size; the log dirs and the background cadences stay as started."""
        self.settings = settings

    # ------------------------------------------------------------------ loading

    def _load_dir(self, directory: Path) -> tuple[bool, int]:
        """Open every log of ``directory``: (after a clean shutdown?, logs opened)."""
        directory.mkdir(parents=True, exist_ok=True)
        marker = directory / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        try:
            recovery_points = OffsetCheckpointFile(directory / RECOVERY_POINT_CHECKPOINT).read()
            log_starts = OffsetCheckpointFile(directory / LOG_START_OFFSET_CHECKPOINT).read()
        except CorruptCheckpoint as exc:
            log.warning("%s; recovering every log of %s", exc, directory)
            recovery_points, log_starts, clean = {}, {}, False
        high_watermarks = self._read_optional(directory / REPLICATION_OFFSET_CHECKPOINT)
        self._cleaner_offsets.update(self._read_optional(directory / CLEANER_OFFSET_CHECKPOINT))
        started = monotonic_s()
        for child in sorted(directory.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                self._deleted_dirs.append((0, child))
                continue
            try:
                topic, partition = parse_log_dir_name(child.name)
            except ValueError:
                continue
            key = TopicPartition(topic, partition)
            partition_log = open_log(
                child,
                self._topic_configs.get(topic, self.default_config),
                recovery_point=recovery_points.get(key, 0),
                log_start_offset=log_starts.get(key, 0),
                high_watermark=high_watermarks.get(key, 0),
                had_clean_shutdown=clean,
                scheduler=self._scheduler,
            )
            self._logs[key] = partition_log
            self._log_dir_of[key] = directory
        marker.unlink(missing_ok=True)
        log.info(
            "loaded %d logs from %s in %.3f s (%s shutdown)",
            sum(1 for d in self._log_dir_of.values() if d == directory),
            directory,
            monotonic_s() - started,
            "clean" if clean else "unclean",
        )
        return clean, sum(1 for d in self._log_dir_of.values() if d == directory)

    @staticmethod
    def _read_optional(path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except CorruptCheckpoint as exc:
            log.warning("ignoring %s", exc)
            return {}

    # ------------------------------------------------------------------ logs

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get(TopicPartition(topic, partition))

    def get_or_create_log(
        self, topic: str, partition: int, config: LogConfig | None = None
    ) -> PartitionLog:
        key = TopicPartition(topic, partition)
        with self._lock:
            existing = self._logs.get(key)
            if existing is not None:
                return existing
            if config is not None:
                self._topic_configs[topic] = config
            config = self._topic_configs.get(topic, self.default_config)
            counts = {directory: 0 for directory in self.log_dirs}
            for directory in self._log_dir_of.values():
                counts[directory] += 1
            directory = min(self.log_dirs, key=lambda d: counts[d])
            partition_log = open_log(
                directory / f"{topic}-{partition}",
                config,
                had_clean_shutdown=True,
                scheduler=self._scheduler,
            )
            partition_log.flush_observer = self._observer
            self._logs[key] = partition_log
            self._log_dir_of[key] = directory
            return partition_log

    def all_logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def topic_config(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self.default_config)

    def update_config(self, topic: str, config: LogConfig) -> None:
        with self._lock:
            self._topic_configs[topic] = config
            for (log_topic, _partition), partition_log in self._logs.items():
                if log_topic == topic:
                    partition_log.update_config(config)

    def delete_log(self, topic: str, partition: int) -> None:
        """Close the log, rename its dir to ``<topic>-<p>.<uuid>-delete``, remove it later."""
        key = TopicPartition(topic, partition)
        with self._lock:
            partition_log = self._logs.pop(key, None)
            directory = self._log_dir_of.pop(key, None)
            self._cleaner_offsets.pop(key, None)
            self._marker_horizons.pop(key, None)
        if partition_log is None or directory is None:
            return
        partition_log.close()
        target = directory / f"{topic}-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        partition_log.dir.rename(target)
        fsync_directory(directory)
        due = wall_ms() + partition_log.config.file_delete_delay_ms
        with self._lock:
            self._deleted_dirs.append((due, target))
        self.checkpoint()

    # ------------------------------------------------------------------ background work

    def run_retention_once(self, now: int | None = None) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        total = 0
        for partition_log in self.all_logs():
            if not partition_log.closed:
                total += apply_retention(partition_log, now)
        return total

    def remove_expired_producers(self, now: int | None = None) -> int:
        """``producer.id.expiration.ms`` on every log; returns producers removed. Uses the
        settings of the moment (a dynamic change applies at the next check)."""
        now = now if now is not None else wall_ms()
        expiration = self.settings.producer_id_expiration_ms
        return sum(partition_log.remove_expired_producers(now, expiration)
                   for partition_log in self.all_logs() if not partition_log.closed)

    def run_cleaner_once(self, now: int | None = None) -> int:
        """One cleaning pass over every compacted log that needs it; returns logs cleaned."""
        cleaned = 0
        for key, partition_log in list(self._logs.items()):
            if partition_log.closed or not partition_log.config.compact:
                continue
            first_dirty = self._cleaner_offsets.get(key, 0)
            truncated = partition_log.take_truncation_point()
            if truncated is not None and truncated < first_dirty:
                first_dirty = self._cleaner_offsets[key] = truncated
            current = now if now is not None else wall_ms()
            horizon = self._marker_horizons.get(key)
            horizon_due = horizon is not None and horizon <= current
            if not horizon_due and not needs_cleaning(partition_log, first_dirty, current):
                continue
            began = monotonic_s()
            result = clean_log(
                partition_log,
                first_dirty,
                dedupe_buffer_size=self.settings.cleaner_dedupe_buffer_size,
                now=current,
                horizon_due=horizon_due,
            )
            if result is not None or horizon_due:
                next_horizon = result.next_delete_horizon if result is not None else None
                if next_horizon is None:
                    self._marker_horizons.pop(key, None)
                else:
                    self._marker_horizons[key] = next_horizon
            if result is not None and self._observer is not None:
                self._observer.cleaned(monotonic_s() - began, read_bytes=result.bytes_read,
                                       written_bytes=result.bytes_written)
            if result is not None:
                self._cleaner_offsets[key] = result.first_dirty_offset
                cleaned += 1
        if cleaned:
            self._checkpoint_cleaner_offsets()
        return cleaned

    def _cleaner_loop(self, backoff_ms: int) -> None:
        while not self._cleaner_stop.wait(backoff_ms / 1000):
            try:
                self.run_cleaner_once()
            except Exception:
                log.exception("log cleaner pass failed")
                if self._observer is not None:
                    self._observer.cleaner_failed()

    def _flush_due_logs(self) -> None:
        now = wall_ms()
        for partition_log in self.all_logs():
            if (
                not partition_log.closed
                and now - partition_log.last_flush_ms >= partition_log.config.flush_ms
            ):
                partition_log.flush()

    def remove_deleted_files(self, now: int | None = None, *, force: bool = False) -> int:
        """Unlink ``.deleted`` segments and ``-delete`` dirs whose delay passed."""
        now = now if now is not None else wall_ms()
        removed = 0
        for partition_log in self.all_logs():
            removed += partition_log.remove_deleted_segments(now, force=force)
        with self._lock:
            due = [item for item in self._deleted_dirs if force or item[0] <= now]
            self._deleted_dirs = [item for item in self._deleted_dirs if item not in due]
        for _due, directory in due:
            shutil.rmtree(directory, ignore_errors=True)
            removed += 1
        return removed

    # ------------------------------------------------------------------ checkpoints

    def _write_per_dir(
        self, file_name: str, value_of: Callable[[TopicPartition, PartitionLog], int | None]
    ) -> None:
        """Write one checkpoint file in every log dir from a consistent snapshot of the
        logs, holding the checkpoint lock (the one writer of these files)."""
        with self._checkpoint_lock:
            with self._lock:
                snapshot = [
                    (key, self._log_dir_of.get(key), value_of(key, partition_log))
                    for key, partition_log in self._logs.items()
                ]
            for directory in self.log_dirs:
                entries = {
                    key: value
                    for key, log_dir, value in snapshot
                    if log_dir == directory and value is not None
                }
                OffsetCheckpointFile(directory / file_name).write(entries)

    def _checkpoint_recovery_points(self) -> None:
        self._write_per_dir(RECOVERY_POINT_CHECKPOINT, lambda _key, log: log.recovery_point)

    def _checkpoint_log_start_offsets(self) -> None:
        self._write_per_dir(LOG_START_OFFSET_CHECKPOINT, lambda _key, log: log.log_start_offset)

    def _checkpoint_high_watermarks(self) -> None:
        self._write_per_dir(REPLICATION_OFFSET_CHECKPOINT, lambda _key, log: log.high_watermark)

    def _checkpoint_cleaner_offsets(self) -> None:
        self._write_per_dir(CLEANER_OFFSET_CHECKPOINT,
                            lambda key, _log: self._cleaner_offsets.get(key))

    def checkpoint(self) -> None:
        """Write every checkpoint file now."""
        with self._checkpoint_lock:
            self._checkpoint_recovery_points()
            self._checkpoint_log_start_offsets()
            self._checkpoint_high_watermarks()
            self._checkpoint_cleaner_offsets()

    # ------------------------------------------------------------------ meta.properties

    def read_meta_properties(self) -> list[dict[str, str]]:
        return [read_meta_properties(directory) for directory in self.log_dirs]

    def write_meta_properties(self, properties: Mapping[str, str]) -> None:
        for directory in self.log_dirs:
            write_meta_properties(directory, properties)

    # ------------------------------------------------------------------ shutdown

    def shutdown(self) -> None:
        """Stop background work, flush and close logs, checkpoint, write the clean marker."""
        if self._closed:
            return
        self._closed = True
        self._cleaner_stop.set()
        if self._cleaner_thread is not None:
            self._cleaner_thread.join(60)
        if self._scheduler is not None:
            self._scheduler.shutdown()
        for partition_log in self.all_logs():
            partition_log.close()
        self.checkpoint()
        for directory in self.log_dirs:
            marker = directory / CLEAN_SHUTDOWN_FILE
            marker.touch()
            fsync_directory(directory)
