"""Deleting a partition log's oldest segments: DeleteRecords, retention, log start.

Split from :mod:`odradek.storage.log` because removing data from the *front* of a log is
its own idea with its own rules — advance the log start first (leader epochs and producer
state follow it), never delete the active segment, only delete the prefix a caller judged
without the lock, and delete files late: segments are renamed ``.deleted`` at once and
unlinked after ``file.delete.delay.ms`` so that readers holding a region keep reading.
Appends, rolls and truncation (the *back* of the log) stay in
:class:`~odradek.storage.log.PartitionLog`, which extends :class:`SegmentDeletion`; both
take the same per-log lock for the moment they swap the segment list.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Sequence

from odradek.clock import wall_ms
from odradek.protocol.errors import OffsetOutOfRange
from odradek.storage.config import LogConfig
from odradek.storage.log_reader import LogReader
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.segment import LogSegment

__all__ = ["DELETED_SUFFIX", "SegmentDeletion"]

log = logging.getLogger(__name__)

DELETED_SUFFIX = ".deleted"


class SegmentDeletion(LogReader):
    """Removal of whole segments from the front of the log, under the log lock.
    :class:`~odradek.storage.log.PartitionLog` sets every attribute below."""

    config: LogConfig
    producer_state: ProducerStateManager
    _lock: threading.RLock
    _pending_deletes: list[tuple[int, LogSegment]]
    # Told when the log start moves (under the lock, on whichever thread moved it): the
    # replica manager's fetch sessions must tell their clients.
    on_log_start_change: Callable[[], None] | None

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: advance the log start to ``offset`` (<= high watermark); returns the
        new log start. Whole segments below it are deleted at once, asynchronously."""
        with self._lock:
            if offset > self._high_watermark:
                raise OffsetOutOfRange(
                    f"cannot delete records before {offset}: above the high watermark "
                    f"{self._high_watermark}"
                )
            if offset > self._log_start_offset:
                self._advance_log_start(offset)
                self.delete_segments_below_log_start()
            return self._log_start_offset

    def _advance_log_start(self, offset: int) -> None:
        self._log_start_offset = offset
        self.leader_epoch_cache.truncate_from_start(offset)
        self.producer_state.truncate_head(offset)
        if self.on_log_start_change is not None:
            self.on_log_start_change()

    def delete_segments_below_log_start(self) -> int:
        """Delete segments whose every offset is below the log start (never the active one)."""
        with self._lock:
            state = self._state
            count = 0
            for _segment, following in itertools.pairwise(state.segments):
                if following.base_offset <= self._log_start_offset:
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
        with self._lock:
            state = self._state
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
            self._publish(state.segments[count:])
            new_start = self._state.base_offsets[0]
            if new_start > self._log_start_offset:
                self._advance_log_start(new_start)
            log.info(
                "%s: deleting %d segment(s) by %s, log start now %d",
                self.dir.name,
                count,
                reason,
                self._log_start_offset,
            )
            self._schedule_delete(doomed)
            return count

    def _schedule_delete(self, segments: list[LogSegment]) -> None:
        """Rename to ``.deleted`` now, unlink after ``file.delete.delay.ms``."""
        due = wall_ms() + self.config.file_delete_delay_ms
        for segment in segments:
            segment.deleted = True
            try:
                segment.change_suffix(DELETED_SUFFIX)
            except OSError as exc:
                log.warning("could not rename %s for deletion: %s", segment.log_path, exc)
            self._pending_deletes.append((due, segment))

    def remove_deleted_segments(self, now: int | None = None, *, force: bool = False) -> int:
        """Unlink ``.deleted`` files whose delay has passed; returns how many segments."""
        now = now if now is not None else wall_ms()
        with self._lock:
            due = [item for item in self._pending_deletes if force or item[0] <= now]
            self._pending_deletes = [item for item in self._pending_deletes if item not in due]
        for _due, segment in due:
            segment.delete_files()
        return len(due)
