"""The log of one partition: an ordered list of segments plus offsets and producer state.

``<log.dir>/<topic>-<partition>/`` holds ``<base>.log/.index/.timeindex`` segments
(:mod:`.segment`), ``<offset>.snapshot`` producer snapshots and ``leader-epoch-checkpoint``.

Threading and asyncio (what may run concurrently, what blocks)
---------------------------------------------------------------
* **Appends** (:meth:`PartitionLog.append`, :meth:`~PartitionLog.append_as_follower`) and
  every structural change (roll, truncation, retention deletes, cleaner swaps, delete-records)
  are serialized by one per-log ``threading.RLock``. Under the lock the log does only
  in-memory work, ``pwrite`` into the page cache, and renames. It never fsyncs under the lock
  unless ``flush.messages`` asks for it (then the append that reaches the count pays for the
  fsync, as in Kafka). So the broker may call ``append`` directly on its event loop thread:
  an append costs one CRC-32C check per batch (C extension), a patched copy of each batch's
  61-byte header, and one ``pwritev`` of those headers plus views of the caller's bytes -
  the record data is never copied in Python.
  Rolling a segment creates three files (plus a producer-state snapshot written without
  fsync, protected by its CRC); the fsync of the old segment goes to the background
  scheduler. The one synchronous fsync on the append path is the tiny
  ``leader-epoch-checkpoint`` rewrite on the first append of a new leader epoch (Kafka does
  the same: followers depend on that history).
* **Reads** take no lock: they are this log's :class:`~.log_reader.LogReader` (see there).
* **Flush** fsyncs outside the lock, on any thread (the LogManager's flusher).
* **Retention, cleaner, file removal** run on LogManager threads and take the log lock only
  to swap the segment list (front deletes and deferred file removal are this log's
  :class:`~.log_deletion.SegmentDeletion`, sharing its lock).

Crash safety: data is durable once flushed (``recovery_point``); the rest is re-validated
on the next start (:mod:`odradek.storage.recovery`).
"""

from __future__ import annotations

import bisect
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from odradek.clock import wall_ms
from odradek.protocol import records as rec
from odradek.protocol.control_records import TxnMarker
from odradek.protocol.errors import (
    InvalidRecord,
    KafkaStorageError,
    OffsetOutOfRange,
)
from odradek.protocol.records import BatchHeader
from odradek.storage.leader_epoch import FILE_NAME as LEADER_EPOCH_FILE
from odradek.storage.leader_epoch import LeaderEpochFileCache
from odradek.storage.log_config import LogConfig
from odradek.storage.log_deletion import SegmentDeletion
from odradek.storage.log_reader import LogReader, LogState
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.scheduler import Scheduler
from odradek.storage.segment import LogSegment
from odradek.storage.transactions import (
    apply_batch,
    decode_markers,
    lenient_markers,
    replay_headers,
)
from odradek.storage.validation import validate_producer_records

__all__ = ["AppendInfo", "PartitionLog", "parse_log_dir_name"]

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
_DIR_NAME = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def parse_log_dir_name(name: str) -> tuple[str, int]:
    """``"<topic>-<partition>"`` -> (topic, partition); ValueError if it is not one."""
    match = _DIR_NAME.match(name)
    if not match:
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return match["topic"], int(match["partition"])


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    record_count: int
    max_timestamp: int
    duplicate: bool = False
    offset_of_max_timestamp: int = -1


class FlushObserver(Protocol):
    """Told how long flushes and their fsyncs took (the broker's storage metrics); called
    from whichever thread flushes, so implementations must be thread-safe."""

    def flushed(self, seconds: float) -> None: ...

    def fsynced(self, seconds: float) -> None: ...


class PartitionLog:
    """Append-only log of one partition. Construct through :func:`odradek.storage.recovery.
    open_log` or ``LogManager``; the constructor takes already-loaded segments.

    It owns a :class:`~odradek.storage.log_reader.LogReader` (``reader``: the published
    snapshot, offsets, lock-free reads) and a :class:`~odradek.storage.log_deletion.
    SegmentDeletion` (deletes from the front, under the log lock it shares); each module
    states its own rules. Their public methods are bound here once per log (``read`` ...
    ``remove_deleted_segments``): a delegating method would add a Python call per Fetch.

    Owned here, under ``_lock``: appends, rolls, truncation and cleaner swaps, which write
    the reader's snapshot and offsets, the leader epoch cache and the producer state;
    ``recovery_point`` is raised by :meth:`flush` (under ``_flush_lock``) and lowered by
    truncation; ``config`` is replaced whole by :meth:`update_config`.
    """

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        *,
        log_start_offset: int,
        recovery_point: int,
        high_watermark: int = 0,
        producer_state: ProducerStateManager | None = None,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.dir = directory
        self.topic, self.partition = parse_log_dir_name(directory.name)
        self.config = config
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self.flush_observer: FlushObserver | None = None
        self._scheduler = scheduler
        assert segments, "a log always has at least one segment"
        active = segments[-1]
        start = min(max(log_start_offset, segments[0].base_offset), active.next_offset)
        self.recovery_point = min(recovery_point, active.next_offset)
        self.leader_epoch_cache = LeaderEpochFileCache(directory / LEADER_EPOCH_FILE)
        self.leader_epoch_cache.truncate_from_end(active.next_offset)
        self.producer_state = producer_state or ProducerStateManager(directory)
        self.reader = reader = LogReader(
            directory.name,
            LogState.of(tuple(segments)),
            log_start_offset=start,
            high_watermark=min(max(high_watermark, start), active.next_offset),
            leader_epoch_cache=self.leader_epoch_cache,
            producer_state=self.producer_state,
        )
        self._deletion = SegmentDeletion(
            reader,
            self._lock,
            leader_epoch_cache=self.leader_epoch_cache,
            producer_state=self.producer_state,
            file_delete_delay_ms=config.file_delete_delay_ms,
            on_log_start_change=self._log_start_changed,
        )
        self.read = reader.read
        self.aborted_transactions = reader.aborted_transactions
        self.offset_for_timestamp = reader.offset_for_timestamp
        self.end_offset_for_leader_epoch = reader.end_offset_for_leader_epoch
        self.update_high_watermark = reader.update_high_watermark
        self.maybe_increment_high_watermark = reader.maybe_increment_high_watermark
        self.size_bytes = reader.size_bytes
        self.delete_records_before = self._deletion.delete_records_before
        self.delete_segments_below_log_start = self._deletion.delete_segments_below_log_start
        self.delete_oldest_segments = self._deletion.delete_oldest_segments
        self.remove_deleted_segments = self._deletion.remove_deleted_segments
        self._unflushed_messages = 0
        self.last_flush_ms = wall_ms()
        self._roll_jitter_ms = self._draw_roll_jitter()
        self._truncated_to: int | None = None
        self.on_log_start_change: Callable[[], None] | None = None  # fetch sessions listen
        self.closed = False

    def _log_start_changed(self) -> None:
        if self.on_log_start_change is not None:
            self.on_log_start_change()

    # ------------------------------------------------------------------ offsets (lock-free)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return self.reader.state.segments

    @property
    def active_segment(self) -> LogSegment:
        return self.reader.state.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.reader.state.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.reader.log_start_offset

    @property
    def high_watermark(self) -> int:
        return self.reader.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The LSO: read_committed consumers read below it (the HW, or the first offset of
        the earliest undecided transaction when that is lower)."""
        reader = self.reader
        return reader.stable_end(min(reader.high_watermark, reader.state.log_end_offset))

    def _draw_roll_jitter(self) -> int:
        """Kafka's ``segment.jitter.ms``: a random amount taken off ``segment.ms`` per segment,
        so that partitions created together do not all roll at the same moment."""
        jitter = self.config.segment_jitter_ms
        return random.randrange(jitter) if jitter > 0 else 0

    # ------------------------------------------------------------------ appends

    def append(
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_epoch: int,
        now_ms: int | None = None,
        from_coordinator: bool = False,
    ) -> AppendInfo:
        """Validate ``records`` (one or more batches from a producer), assign offsets, write.

        Only a coordinator (``from_coordinator``: WriteTxnMarkers, or the group coordinator
        writing a TxnOffsetCommit) may write control batches; each must be a transaction marker
        that passes the producer's epoch checks (InvalidProducerEpoch,
        TransactionCoordinatorFenced). A coordinator's batches carry no producer sequence, so
        only their epoch is checked.

        Raises CorruptRecord (bad CRC or framing), InvalidRecord (impossible header fields),
        MessageTooLarge (a batch above ``max.message.bytes``), RecordListTooLarge (the request
        does not fit a segment), InvalidTimestamp, and the producer-state errors. A duplicate
        idempotent batch is not written; its original offsets come back with
        ``duplicate=True``. Magic 0/1 message sets are converted to one v2 batch first.
        """
        now = now_ms if now_ms is not None else wall_ms()
        data, batches = validate_producer_records(
            records, self.config, now, from_coordinator=from_coordinator
        )
        markers = decode_markers(data, batches) if from_coordinator else {}
        with self._lock:
            for marker in markers.values():
                self.producer_state.check_marker(marker)
            if len(batches) == 1:
                duplicate = self.producer_state.check(
                    batches[0][1], from_client=not from_coordinator)
                if duplicate is not None:
                    return AppendInfo(
                        duplicate.first_offset,
                        duplicate.last_offset,
                        -1,
                        self.reader.log_start_offset,
                        batches[0][1].record_count,
                        batches[0][1].max_timestamp,
                        duplicate=True,
                    )
            else:
                for _pos, header in batches:
                    if self.producer_state.check(
                            header, from_client=not from_coordinator) is not None:
                        raise InvalidRecord(
                            "duplicate idempotent batch inside a multi-batch append"
                        )
            first_offset = self.reader.state.log_end_offset
            next_offset = first_offset
            log_append_time = now if self.config.log_append_time else -1
            # No copy of the records: each batch is written as a patched copy of its 61-byte
            # header followed by a view of the caller's bytes, in one pwritev.
            view = memoryview(data)
            buffers: list[bytes | bytearray | memoryview] = []
            assigned: list[tuple[int, BatchHeader]] = []
            new_markers = {}
            for pos, header in batches:
                if pos in markers:
                    new_markers[next_offset] = markers[pos]
                head = bytearray(view[pos : pos + rec.BATCH_HEADER_SIZE])
                rest = view[pos + rec.BATCH_HEADER_SIZE : pos + header.size]
                rec.rewrite_offsets(head, 0, next_offset, leader_epoch)
                header = header.placed(next_offset, leader_epoch)
                if log_append_time >= 0:
                    rec.set_log_append_time_split(head, rest, log_append_time)
                    header = header._replace(max_timestamp=log_append_time)
                buffers.append(head)
                buffers.append(rest)
                assigned.append((pos, header))
                next_offset = header.next_offset
            info = self._append_locked(buffers, assigned, leader_epoch, new_markers)
            return AppendInfo(
                first_offset,
                next_offset - 1,
                log_append_time,
                self.reader.log_start_offset,
                info[0],
                info[1],
                offset_of_max_timestamp=info[2],
            )

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches fetched from the leader, keeping their offsets and epochs.

        Checks CRCs and that offsets continue the log (``base offset >= log end``); a batch
        below the log end raises :class:`OffsetOutOfRange` (the follower must truncate
        first). Producer state is updated without sequence checks.
        """
        data = bytes(records)
        batches = rec.validate_batches(data)
        if not batches:
            return AppendInfo(-1, -1, -1, self.reader.log_start_offset, 0, -1)
        with self._lock:
            expected = self.reader.state.log_end_offset
            for _pos, header in batches:
                if header.base_offset < expected:
                    raise OffsetOutOfRange(
                        f"follower append at offset {header.base_offset} below log end {expected}"
                    )
                expected = header.next_offset
            first_offset = batches[0][1].base_offset
            markers = lenient_markers(data, batches, self.dir.name)
            count, max_ts, offset_of_max = self._append_locked(data, batches, None, markers)
            return AppendInfo(
                first_offset,
                batches[-1][1].last_offset,
                -1,
                self.reader.log_start_offset,
                count,
                max_ts,
                offset_of_max_timestamp=offset_of_max,
            )

    def _append_locked(
        self,
        data: bytes | list[bytes | bytearray | memoryview],
        batches: list[tuple[int, BatchHeader]],
        leader_epoch: int | None,
        markers: dict[int, TxnMarker],
    ) -> tuple[int, int, int]:
        if self.closed:
            raise KafkaStorageError(f"log {self.dir.name} is closed")
        first = batches[0][1]
        last = batches[-1][1]
        size = sum(len(b) for b in data) if isinstance(data, list) else len(data)
        segment = self._maybe_roll(size, first, last)
        segment.append(data, batches)
        count = 0
        max_ts = -1
        offset_of_max = -1
        epoch_cache = self.leader_epoch_cache
        producer_state = self.producer_state
        for _pos, header in batches:
            count += header.record_count
            if header.max_timestamp > max_ts:
                max_ts, offset_of_max = header.max_timestamp, header.last_offset
            epoch = header.partition_leader_epoch if leader_epoch is None else leader_epoch
            if epoch >= 0 and epoch > epoch_cache.latest_epoch:
                epoch_cache.assign(epoch, header.base_offset)
            if header.producer_id >= 0:
                apply_batch(producer_state, segment, header, markers.get(header.base_offset))
        producer_state.map_end_offset = last.next_offset
        producer_state.on_high_watermark(self.reader.high_watermark)
        self.reader.publish()
        self._unflushed_messages += count
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()
        return count, max_ts, offset_of_max

    # ------------------------------------------------------------------ rolling

    def _maybe_roll(self, size: int, first: BatchHeader, last: BatchHeader) -> LogSegment:
        segment = self.reader.state.segments[-1]
        config = self.config
        if segment.size == 0:
            return segment
        reason = None
        if segment.size + size > config.segment_bytes:
            reason = "segment.bytes"
        elif wall_ms() - segment.created_ms > config.segment_ms - self._roll_jitter_ms:
            reason = "segment.ms"
        elif segment.indexes_full:
            reason = "index full"
        elif last.last_offset - segment.base_offset > INT_MAX:
            reason = "relative offset overflow"
        if reason is None:
            return segment
        log.debug("rolling %s at offset %d (%s)", self.dir.name, first.base_offset, reason)
        return self._roll_locked(first.base_offset)

    def roll(self) -> LogSegment:
        """Start a new segment at the log end (no-op if the active one is empty)."""
        with self._lock:
            if self.active_segment.size == 0:
                return self.active_segment
            return self._roll_locked(self.reader.state.log_end_offset)

    def _roll_locked(self, base_offset: int) -> LogSegment:
        old = self.reader.state.segments[-1]
        base_offset = max(base_offset, old.next_offset)
        new = LogSegment(
            self.dir,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_size=self.config.segment_index_bytes,
        )
        new.make_active()
        self._roll_jitter_ms = self._draw_roll_jitter()
        old.on_become_inactive()
        self.reader.publish((*self.reader.state.segments, new))
        self.producer_state.map_end_offset = base_offset
        try:
            self.producer_state.take_snapshot(sync=False)  # no fsync under the append lock
            self.producer_state.retain_snapshots(3)
        except OSError as exc:
            log.warning("%s: could not write producer snapshot: %s", self.dir.name, exc)
        self._run_in_background(f"flush {old.log_path.name}", lambda: self._flush_segment(old))
        return new

    def _flush_segment(self, segment: LogSegment) -> None:
        try:
            segment.flush()
        except (OSError, ValueError) as exc:  # deleted or closed meanwhile
            log.debug("flush of %s skipped: %s", segment.log_path, exc)

    def _run_in_background(self, name: str, task: Callable[[], None]) -> None:
        if self._scheduler is not None:
            self._scheduler.schedule(name, task)
        else:
            task()

    # ------------------------------------------------------------------ flush

    def flush(self) -> None:
        """fsync everything appended so far and advance the recovery point. No log lock held
        during the fsyncs, so appends continue meanwhile."""
        with self._flush_lock:
            state = self.reader.state
            target = state.log_end_offset
            if target <= self.recovery_point and self._unflushed_messages == 0:
                return
            start = bisect.bisect_right(state.base_offsets, self.recovery_point) - 1
            observer = self.flush_observer
            began = time.perf_counter()
            for segment in state.segments[max(start, 0) :]:
                fsync_began = time.perf_counter()
                self._flush_segment(segment)
                if observer is not None:
                    observer.fsynced(time.perf_counter() - fsync_began)
            if observer is not None:
                observer.flushed(time.perf_counter() - began)
            # a truncation may have happened during the fsyncs
            end = self.reader.state.log_end_offset
            self.recovery_point = max(self.recovery_point, min(target, end))
            self._unflushed_messages = 0
            self.last_flush_ms = wall_ms()

    # ------------------------------------------------------------------ truncation

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding offsets >= ``offset`` (follower truncation)."""
        with self._lock:
            state = self.reader.state
            if offset >= state.log_end_offset:
                return
            if offset <= state.base_offsets[0]:
                self._truncate_fully_locked(offset)
                return
            keep = [s for s in state.segments if s.base_offset < offset]
            removed = [s for s in state.segments if s.base_offset >= offset]
            active = keep[-1]
            active.truncate_to(offset)
            if removed:
                active.make_active()
            self.reader.publish(tuple(keep))
            self._deletion.schedule_delete(removed)
            new_end = self.reader.state.log_end_offset
            self._after_truncation(new_end)

    def take_truncation_point(self) -> int | None:
        """The lowest offset truncated to since the last call (the cleaner rewinds its
        first-dirty checkpoint to it, as Kafka's cleaner does on truncation)."""
        point, self._truncated_to = self._truncated_to, None
        return point

    def _after_truncation(self, new_end: int) -> None:
        self._truncated_to = (
            new_end if self._truncated_to is None else min(self._truncated_to, new_end)
        )
        self.recovery_point = min(self.recovery_point, new_end)
        self.reader.high_watermark = min(self.reader.high_watermark, new_end)
        self.reader.log_start_offset = min(self.reader.log_start_offset, new_end)
        self.leader_epoch_cache.truncate_from_end(new_end)
        self._rebuild_producer_state()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop all data; the log restarts empty at ``offset`` (log start = end = hw)."""
        with self._lock:
            self._truncate_fully_locked(offset)

    def _truncate_fully_locked(self, offset: int) -> None:
        # Old files move aside first: the new segment may take the same name.
        self._deletion.schedule_delete(list(self.reader.state.segments))
        new = LogSegment(
            self.dir,
            offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_size=self.config.segment_index_bytes,
        )
        new.make_active()
        self.reader.publish((new,))
        self.reader.log_start_offset = offset
        self.reader.high_watermark = offset
        self.recovery_point = offset
        self._truncated_to = offset
        self.leader_epoch_cache.clear()
        self.producer_state.clear()
        self.producer_state.delete_all_snapshots()
        self.producer_state.map_end_offset = offset

    def replace_segments(
        self, new_segments: list[LogSegment], old_segments: list[LogSegment]
    ) -> bool:
        """Swap cleaned segments in for ``old_segments`` (which must still be contiguous in the
        log). Returns False (and changes nothing) if the log changed meanwhile."""
        with self._lock:
            if self.closed:
                return False
            current = list(self.reader.state.segments)
            try:
                start = current.index(old_segments[0])
            except ValueError:
                return False
            if current[start : start + len(old_segments)] != old_segments or (
                start + len(old_segments) >= len(current)
            ):
                return False
            for segment in new_segments:
                segment.change_suffix(".swap")
            self._deletion.schedule_delete(old_segments)
            for segment in new_segments:
                segment.change_suffix("")
            current[start : start + len(old_segments)] = new_segments
            self.reader.publish(tuple(current))
            return True

    # ------------------------------------------------------------------ producer state

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """``producer.id.expiration.ms``: drop idle producers without an open transaction
        (under the append lock: the append path reads the same entries)."""
        with self._lock:
            return self.producer_state.remove_expired_producers(now_ms, expiration_ms)

    def _rebuild_producer_state(self) -> None:
        end = self.reader.state.log_end_offset
        self.producer_state.delete_snapshots_after(end)
        start = self.producer_state.load_latest_snapshot(self.reader.log_start_offset, end)
        self.scan_producer_state_from(start)

    def scan_producer_state_from(self, start_offset: int) -> None:
        """Replay batch headers from ``start_offset`` to the log end (no record decoding)."""
        replay_headers(self.producer_state, self.reader.state, start_offset)

    # ------------------------------------------------------------------ lifecycle

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        self._deletion.file_delete_delay_ms = config.file_delete_delay_ms
        for segment in self.reader.state.segments:
            segment.index_interval_bytes = config.index_interval_bytes

    def close(self) -> None:
        """Flush, write a producer snapshot at the log end, trim indexes, release files."""
        with self._lock:
            if self.closed:
                return
            self.flush()
            try:
                self.producer_state.map_end_offset = self.reader.state.log_end_offset
                self.producer_state.take_snapshot()
            except OSError as exc:
                log.warning("%s: no producer snapshot on close: %s", self.dir.name, exc)
            for segment in self.reader.state.segments:
                segment.close()
            self.remove_deleted_segments(force=True)
            self.closed = True

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.dir.name}, start={self.reader.log_start_offset}, "
            f"end={self.log_end_offset}, hw={self.reader.high_watermark}, "
            f"segments={len(self.reader.state.segments)})"
        )
