"""Deleting a partition log's oldest segments: DeleteRecords, retention, log start.

A :class:`~odradek.storage.log.PartitionLog` owns one :class:`SegmentDeletion` (composition,
not a base class): removing data from the *front* of a log is its own idea with its own
rules, stated here where they live.

* **Lock**: every change runs under the log's one ``threading.RLock``, which the
  :class:`~odradek.storage.log.PartitionLog` creates and shares with this helper; the same
  lock serializes appends, rolls and truncation (the *back* of the log), so a deletion never
  interleaves with them. It holds the lock only to decide and swap the segment list.
* **Order**: the log start advances with the segments (leader epochs and producer
  state follow it, in the same locked section); the active segment is never deleted; only the
  prefix a caller judged without the lock is deleted (``decided_on``), so a concurrent
  cleaner swap or truncation cannot make retention delete segments it did not look at.
* **Late file removal**: segments are renamed ``.deleted`` at once and unlinked after
  ``file.delete.delay.ms`` (``_pending``, owned here and guarded by the log lock), so that
  readers holding a region keep reading. The unlink itself runs outside the lock.
* **What it writes elsewhere**: the reader's ``state`` (through
  :meth:`~odradek.storage.log_reader.LogReader.publish`) and ``log_start_offset``, the leader
  epoch cache and the producer state — all under the log lock.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Sequence

from odradek.clock import wall_ms
from odradek.protocol.errors import OffsetOutOfRange
from odradek.storage.leader_epoch import LeaderEpochFileCache
from odradek.storage.log_reader import LogReader
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.segment import LogSegment

__all__ = ["DELETED_SUFFIX", "SegmentDeletion"]

log = logging.getLogger(__name__)

DELETED_SUFFIX = ".deleted"


class SegmentDeletion:
    """Removal of whole segments from the front of one log, under the log lock (see the
    module docstring for what it owns and the order of its steps)."""

    def __init__(
        self,
        reader: LogReader,
        lock: threading.RLock,
        *,
        leader_epoch_cache: LeaderEpochFileCache,
        producer_state: ProducerStateManager,
        file_delete_delay_ms: int,
        on_log_start_change: Callable[[], None],
    ) -> None:
        self._reader = reader
        self._lock = lock
        self._leader_epoch_cache = leader_epoch_cache
        self._producer_state = producer_state
        self.file_delete_delay_ms = file_delete_delay_ms  # follows the topic's config
        self._pending: list[tuple[int, LogSegment]] = []  # (unlink due ms, segment)
        # Told when the log start moves (under the lock, on whichever thread moved it): the
        # replica manager's fetch sessions must tell their clients.
        self._on_log_start_change = on_log_start_change

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: advance the log start to ``offset`` (<= high watermark); returns the
        new log start. Whole segments below it are deleted at once, asynchronously."""
        reader = self._reader
        with self._lock:
            if offset > reader.high_watermark:
                raise OffsetOutOfRange(
                    f"cannot delete records before {offset}: above the high watermark "
                    f"{reader.high_watermark}"
                )
            if offset > reader.log_start_offset:
                self._advance_log_start(offset)
                self.delete_segments_below_log_start()
            return reader.log_start_offset

    def _advance_log_start(self, offset: int) -> None:
        self._reader.log_start_offset = offset
        self._leader_epoch_cache.truncate_from_start(offset)
        self._producer_state.truncate_head(offset)
        self._on_log_start_change()

    def delete_segments_below_log_start(self) -> int:
        """Delete segments whose every offset is below the log start (never the active one)."""
        reader = self._reader
        with self._lock:
            count = 0
            for _segment, following in itertools.pairwise(reader.state.segments):
                if following.base_offset <= reader.log_start_offset:
                    count += 1
                else:
                    break
            return self.delete_oldest_segments(count, "log start offset")

    def delete_oldest_segments(
        self, count: int, reason: str, *, decided_on: Sequence[LogSegment] | None = None
    ) -> int:
        """Remove the ``count`` oldest segments (capped to keep the active one).

        ``decided_on`` is the segment list the caller looked at without the lock; only the
        prefix of it that is still the log's prefix is deleted, so a concurrent cleaner swap
        or truncation can never make retention delete segments it did not judge.
        """
        reader = self._reader
        with self._lock:
            state = reader.state
            count = min(count, len(state.segments) - 1)
            if decided_on is not None:
                still = 0
                for judged, current in zip(decided_on[:count], state.segments, strict=False):
                    if judged is not current:
                        break
                    still += 1
                count = still
            if count <= 0:
                return 0
            doomed = list(state.segments[:count])
            reader.publish(state.segments[count:])
            new_start = reader.state.base_offsets[0]
            if new_start > reader.log_start_offset:
                self._advance_log_start(new_start)
            log.info(
                "%s: deleting %d segment(s) by %s, log start now %d",
                reader.name,
                count,
                reason,
                reader.log_start_offset,
            )
            self.schedule_delete(doomed)
            return count

    def schedule_delete(self, segments: list[LogSegment]) -> None:
        """Rename to ``.deleted`` now, unlink after ``file.delete.delay.ms``. The caller holds
        the log lock (the log's truncation and cleaner swaps retire segments through here)."""
        due = wall_ms() + self.file_delete_delay_ms
        for segment in segments:
            segment.deleted = True
            try:
                segment.change_suffix(DELETED_SUFFIX)
            except OSError as exc:
                log.warning("could not rename %s for deletion: %s", segment.log_path, exc)
            self._pending.append((due, segment))

    def remove_deleted_segments(self, now: int | None = None, *, force: bool = False) -> int:
        """Unlink ``.deleted`` files whose delay has passed; returns how many segments."""
        now = now if now is not None else wall_ms()
        with self._lock:
            due = [item for item in self._pending if force or item[0] <= now]
            self._pending = [item for item in self._pending if item not in due]
        for _due, segment in due:
            segment.delete_files()
        return len(due)
