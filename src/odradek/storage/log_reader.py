"""What readers of a partition log see: the published :class:`LogState`, offsets, reads.

A :class:`~odradek.storage.log.PartitionLog` owns one :class:`LogReader` (composition, not a
base class). The reader is the half of the log that takes no lock, so everything it owns and
who may change it is stated here:

* ``state`` (:class:`LogState`: segment tuple, their base offsets, log end offset, readable
  bytes of the active segment) is immutable and replaced as a whole by :meth:`LogReader.
  publish` with one reference assignment. Only writers call ``publish``, holding the log lock
  (the :class:`~odradek.storage.log.PartitionLog` for appends, rolls, truncation and cleaner
  swaps, the :class:`~odradek.storage.log_deletion.SegmentDeletion` for deletes from the
  front). A reader takes ``state`` once into a local and works on that snapshot, so it never
  sees a half-written batch and never waits for a writer.
* ``log_start_offset`` is written only by those same writers under the log lock.
* ``high_watermark`` is moved by replication through :meth:`~LogReader.update_high_watermark`
  and :meth:`~LogReader.maybe_increment_high_watermark` without the lock (the broker calls
  them from its event loop thread; one int assignment is atomic), and reset by truncation
  under the lock. Readers clamp it to the log end of their snapshot, so a high watermark
  that briefly exceeds a truncated log is never served.
* ``_hw_position`` is a cache of the byte position of the read bound, owned by the reader;
  ``publish`` drops it whenever the segment list changes, and an entry is used only while
  its segment *object* is still in the snapshot: a reader that computed it on the old list
  can store it just after a cleaner swap cleared the cache, and the cleaned segment that
  replaced its segment keeps the same base offset but not the same bytes.

A read returns a :class:`FileRegion` holding its file descriptor: a segment deleted or
cleaned afterwards stays readable through it (see :mod:`odradek.storage.file_region`). The
exception is a follower truncation
(:meth:`~odradek.storage.log.PartitionLog.truncate_to`), which cuts the file in place as
Kafka does; it only removes data above the high watermark, which consumers never read.
Reads do small ``pread`` calls on the index tail (page cache); they can block on disk for
cold data, so the broker should run fetches for cold offsets in an executor if it cares.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import NamedTuple

from odradek.protocol.errors import OffsetOutOfRange
from odradek.storage.aborted_txn import AbortedTxn, collect_aborted, last_stable_offset
from odradek.storage.file_region import FileRegion
from odradek.storage.leader_epoch import LeaderEpochFileCache
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.segment import LogSegment

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "LogReader",
    "LogState",
    "ReadResult",
]


EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


@dataclass(frozen=True)
class ReadResult:
    region: FileRegion | None  # None when there is nothing to read
    first_offset: int  # base offset of the first batch in ``region`` (-1 when None)
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    next_offset: int = -1  # offset just after ``region`` (where the next read starts)


class LogState(NamedTuple):
    """What readers see, replaced as a whole after each change (never mutated)."""

    segments: tuple[LogSegment, ...]
    base_offsets: tuple[int, ...]
    log_end_offset: int
    active_size: int  # readable bytes of the last segment

    @classmethod
    def of(cls, segments: tuple[LogSegment, ...]) -> LogState:
        """The snapshot of a new segment list (the last one is active)."""
        active = segments[-1]
        bases = tuple(segment.base_offset for segment in segments)
        return cls(segments, bases, active.next_offset, active.size)


class LogReader:
    """The lock-free half of a partition log: offsets, the high watermark and reads over the
    last published :class:`LogState` (who owns and writes each field: the module docstring)."""

    def __init__(
        self,
        name: str,
        state: LogState,
        *,
        log_start_offset: int,
        high_watermark: int,
        leader_epoch_cache: LeaderEpochFileCache,
        producer_state: ProducerStateManager,
    ) -> None:
        self.name = name  # the log's directory name, for messages
        self.state = state
        self.log_start_offset = log_start_offset
        self.high_watermark = high_watermark
        self._hw_position: tuple[int, LogSegment, int] | None = None  # (hw, segment, position)
        self._leader_epoch_cache = leader_epoch_cache
        self._producer_state = producer_state

    def stable_end(self, high_watermark: int) -> int:
        """The last stable offset under ``high_watermark``: the first offset of the earliest
        undecided transaction when that is lower. An open transaction whose start retention
        removed no longer holds readers back below the log start (Kafka clamps the same
        way)."""
        stable = last_stable_offset(high_watermark, self._producer_state.unstable)
        return max(stable, min(self.log_start_offset, high_watermark))

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to [log start, log end]; returns the value set."""
        offset = min(max(offset, self.log_start_offset), self.state.log_end_offset)
        self.high_watermark = offset
        return offset

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Raise the high watermark to ``offset`` (never lower it); True if it moved."""
        offset = min(offset, self.state.log_end_offset)
        if offset > self.high_watermark:
            self.high_watermark = offset
            return True
        return False

    def size_bytes(self) -> int:
        state = self.state
        return sum(segment.size for segment in state.segments[:-1]) + state.active_size

    def publish(self, segments: tuple[LogSegment, ...] | None = None) -> None:
        """Replace the readers' snapshot: after an append (``segments`` None: the same
        segments, a longer active one) or with a new segment list. Writers only, under the
        log lock; it lives here, beside the readers, so the snapshot's shape is defined in
        one place."""
        state = self.state
        if segments is None or segments is state.segments:
            # An append: same segments, so the same base offsets (not rebuilt per append,
            # a tuple over every segment of the log).
            active = state.segments[-1]
            self.state = LogState(
                state.segments, state.base_offsets, active.next_offset, active.size
            )
        else:
            # A truncation or a cleaner swap can move the bytes under a cached position.
            self._hw_position = None
            self.state = LogState.of(segments)

    # ------------------------------------------------------------------ reads

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        isolation_high_watermark: bool = True,
        min_one_batch: bool = True,
        read_committed: bool = False,
    ) -> ReadResult:
        """Whole batches from the one holding ``offset``, as a file region for sendfile.

        ``offset`` below the log start or above the log end raises OffsetOutOfRange. Reading
        at the end bound (high watermark, or log end without isolation) returns no region.
        With isolation, an offset between the high watermark and the log end also returns no
        region rather than an error, as Kafka does: a new leader's high watermark may lag a
        consumer's position for a moment, and an error would make the consumer reset.
        ``read_committed`` bounds the read by the last stable offset instead.
        """
        state = self.state
        log_start = self.log_start_offset
        hw = min(self.high_watermark, state.log_end_offset)
        end = hw if isolation_high_watermark else state.log_end_offset
        if read_committed:
            end = min(end, self.stable_end(hw))
        if offset < log_start or offset > state.log_end_offset:
            raise OffsetOutOfRange(
                f"offset {offset} is outside [{log_start}, {state.log_end_offset}] of "
                f"{self.name}"
            )

        def result(region: FileRegion | None, first: int, following: int = -1) -> ReadResult:
            return ReadResult(region, first, hw, log_start, state.log_end_offset, following)

        if offset >= end:
            return result(None, -1)
        bound_segment, bound_position = self._end_position(state, end)
        index = max(bisect.bisect_right(state.base_offsets, offset) - 1, 0)
        segments = state.segments
        for number in range(index, len(segments)):  # no slicing: O(1) per read, not O(n)
            segment = segments[number]
            if segment.base_offset > bound_segment:
                break
            if segment.base_offset == bound_segment:
                max_position, end_offset = bound_position, end
            elif segment is state.segments[-1]:
                max_position, end_offset = state.active_size, state.log_end_offset
            else:
                max_position = segment.size
                end_offset = state.base_offsets[number + 1]
            try:
                found = segment.read(offset, max_bytes, max_position, min_one_batch, end_offset)
            except (ValueError, OSError):
                # The segment was deleted or truncated under us; retry on the new state.
                if self.state is state:
                    raise
                return self.read(
                    offset,
                    max_bytes,
                    isolation_high_watermark=isolation_high_watermark,
                    min_one_batch=min_one_batch,
                    read_committed=read_committed,
                )
            if found is not None:
                region, header, following = found
                return result(region, header.base_offset, following)
            if not min_one_batch:
                break
        return result(None, -1)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[fetch_offset, upper_bound)``: what a
        read_committed Fetch returns beside its data. An entry sits in the segment of its
        ABORT marker, which is at or after the fetch offset, so the search starts at the
        segment holding the fetch offset and stops once an entry shows nothing later can
        overlap (:func:`~odradek.storage.aborted_txn.collect_aborted`), as Kafka's does."""
        state = self.state
        index = max(bisect.bisect_right(state.base_offsets, fetch_offset) - 1, 0)
        found: list[AbortedTxn] = []
        for segment in state.segments[index:]:
            entries, complete = collect_aborted(
                segment.txn_index.entries, fetch_offset, upper_bound
            )
            found += entries
            if complete:
                break
        return found

    def _end_position(self, state: LogState, end: int) -> tuple[int, int]:
        """(segment base, byte position) below which all batches end before ``end``."""
        if end >= state.log_end_offset:
            return state.base_offsets[-1], state.active_size
        cached = self._hw_position
        if cached is not None and cached[0] == end:
            base = cached[1].base_offset
            slot = bisect.bisect_left(state.base_offsets, base)
            if slot < len(state.base_offsets) and state.segments[slot] is cached[1]:
                return base, cached[2]
        index = bisect.bisect_right(state.base_offsets, end) - 1
        segment = state.segments[max(index, 0)]
        max_position = state.active_size if segment is state.segments[-1] else segment.size
        found = segment.translate_offset(end, max_position)
        position = found[0] if found is not None else max_position
        self._hw_position = (end, segment, position)
        return segment.base_offset, position

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >= ``timestamp_ms``.

        Special values as in ListOffsets: -2 earliest -> (log start, -1); -1 latest ->
        (log end, -1); -3 max timestamp -> the first record with the largest timestamp.
        Uses each segment's time index, then decodes the one batch that holds the answer.
        """
        state = self.state
        if timestamp_ms == EARLIEST_TIMESTAMP:
            return self.log_start_offset, -1
        if timestamp_ms == LATEST_TIMESTAMP:
            return state.log_end_offset, -1
        if timestamp_ms == MAX_TIMESTAMP:
            # Kafka's answer is the first record (lowest offset) holding the largest
            # timestamp: the first segment with that maximum, then the first record in it
            # whose timestamp reaches it (a segment knows only the batch, not the record).
            best: LogSegment | None = None
            for segment in state.segments:
                if segment.size and (best is None or segment.max_timestamp > best.max_timestamp):
                    best = segment
            if best is None:
                return None
            max_position = state.active_size if best is state.segments[-1] else best.size
            return best.find_offset_by_timestamp(best.max_timestamp, best.base_offset,
                                                 max_position)
        start = self.log_start_offset
        for segment in state.segments:
            if segment.next_offset <= start and segment is not state.segments[-1]:
                continue
            if segment.max_timestamp < timestamp_ms:
                continue
            max_position = state.active_size if segment is state.segments[-1] else segment.size
            found = segment.find_offset_by_timestamp(timestamp_ms, start, max_position)
            if found is not None:
                return found
        return None

    def end_offset_for_leader_epoch(self, epoch: int) -> tuple[int, int]:
        return self._leader_epoch_cache.end_offset_for(epoch, self.state.log_end_offset)
