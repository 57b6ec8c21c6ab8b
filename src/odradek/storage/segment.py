"""One log segment: ``<base>.log`` plus its ``.index``, ``.timeindex`` and ``.txnindex``.

``<base>`` is the first offset the segment may hold, zero-padded to 20 digits. The ``.log``
file is RecordBatch v2 batches back to back, exactly as they travel on the wire (see
:mod:`odradek.protocol.records`), with no file header: any Kafka record reader can parse it.

Writes happen only through the owning ``PartitionLog`` under its append lock. Reads may run
concurrently from any thread; they are given an upper byte bound (``max_position``) taken
from the log's published state, so they never see a half-written batch.

Indexes of segments other than the active one are opened lazily on first use: a log with
thousands of segments maps only the indexes it actually searches.

Crash behaviour: the ``.log`` is the truth. :meth:`LogSegment.recover` scans it batch by
batch, checks every CRC, truncates at the first torn or corrupt batch and rebuilds both
indexes from what remains.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import crc32c as _crc32c

from odradek.clock import wall_ms
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.records import (
    BATCH_HEADER_SIZE,
    CRC_START,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    CorruptBatch,
    decode_batch,
    parse_batch_header,
)
from odradek.storage.file_region import FileRegion, SegmentFile
from odradek.storage.mmap_index import CorruptIndex
from odradek.storage.offset_index import OffsetIndex, OffsetPosition
from odradek.storage.time_index import TimeIndex, TimestampOffset
from odradek.storage.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

__all__ = [
    "LOG_OVERHEAD",
    "LogSegment",
    "check_index_or_rebuild",
    "scan_headers",
    "segment_file_name",
]

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
_FIRST_SCAN_CHUNK = 8 * 1024
_SCAN_CHUNK = 256 * 1024
_RECOVERY_CHUNK = 8 * 1024 * 1024


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def scan_headers(file: SegmentFile, start: int, end: int) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for batches starting in ``[start, end)``.

    Reads the file in chunks (8 KiB, doubling up to 256 KiB) and jumps over large batches, so
    the cost is one read per chunk of headers, not per batch. Raises :class:`CorruptBatch` on
    an impossible length or a batch running past ``end``.
    """
    position = start
    chunk = b""
    chunk_start = start
    # Lookups usually stop within one index interval: start small, grow for long scans.
    chunk_size = _FIRST_SCAN_CHUNK
    while position < end:
        relative = position - chunk_start
        if relative < 0 or relative + BATCH_HEADER_SIZE > len(chunk):
            chunk = file.pread(min(chunk_size, end - position), position)
            chunk_size = min(chunk_size * 2, _SCAN_CHUNK)
            chunk_start = position
            relative = 0
            if len(chunk) < BATCH_HEADER_SIZE:
                raise CorruptBatch("torn batch header", position)
        header = parse_batch_header(chunk, relative)
        if header.length < MIN_BATCH_LENGTH or header.magic != 2:
            raise CorruptBatch(f"impossible batch (length {header.length})", position)
        if position + header.size > end:
            raise CorruptBatch("batch runs past the end of the segment", position)
        yield position, header
        position += header.size


class _EmptyOffsetIndex(OffsetIndex):
    """Stand-in for the index of a deleted segment: no entries, no file."""

    def __init__(self) -> None:
        self.base_offset = 0
        self._entries = 0
        self._max_entries = 0
        self._mmap = None
        self._lock = threading.Lock()

    def lookup(self, offset: int) -> OffsetPosition:
        return OffsetPosition(offset, 0)

    def lookup_position(self, position: int) -> OffsetPosition:
        return OffsetPosition(0, 0)


class _EmptyTimeIndex(TimeIndex):
    def __init__(self) -> None:
        self.base_offset = 0
        self._entries = 0
        self._max_entries = 0
        self._mmap = None
        self._lock = threading.Lock()

    def lookup(self, timestamp: int) -> TimestampOffset:
        return TimestampOffset(-1, 0)


_EMPTY_OFFSET_INDEX = _EmptyOffsetIndex()
_EMPTY_TIME_INDEX = _EmptyTimeIndex()


class LogSegment:
    """A segment's files and the in-memory facts about them (size, index cursors)."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        max_index_size: int = 10485760,
        suffix: str = "",
        created_ms: int | None = None,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.max_index_size = max_index_size
        self.suffix = suffix
        # Never reset: readers may still use it; the descriptor closes when the segment and
        # every region handed out are garbage (see file_region).
        self.file = SegmentFile(self.log_path)
        self.size = self.file.size()
        self.created_ms = created_ms if created_ms is not None else wall_ms()
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._writable_indexes = False
        self.bytes_since_last_index_entry = 0
        self._max_timestamp: int | None = None  # lazily from the time index when loaded
        self._offset_of_max_timestamp = base_offset
        self.first_batch_timestamp: int | None = None
        # The offset after the last batch; set by the log when it loads or appends.
        self.next_offset = base_offset
        # (position, base offset) of the first batch of the latest append: a read at the log
        # end (followers, consumers keeping up) starts its header scan there instead of at the
        # index entry up to an index interval (dozens of small batches) before it.
        self._tail: tuple[int, int] | None = None
        # Removed from the log: readers holding it scan from position 0 instead of reopening
        # index files that are being renamed or unlinked.
        self.deleted = False
        self.txn_index = TransactionIndex(self._path(TXN_INDEX_SUFFIX))

    # ---------------------------------------------------------------- paths and indexes

    def _path(self, kind: str) -> Path:
        return self.directory / (segment_file_name(self.base_offset, kind) + self.suffix)

    @property
    def log_path(self) -> Path:
        return self._path(LOG_SUFFIX)

    @property
    def index_path(self) -> Path:
        return self._path(INDEX_SUFFIX)

    @property
    def time_index_path(self) -> Path:
        return self._path(TIME_INDEX_SUFFIX)

    @property
    def offset_index(self) -> OffsetIndex:
        if self.deleted:
            return _EMPTY_OFFSET_INDEX
        if self._offset_index is None:
            self._offset_index = OffsetIndex(
                self.index_path, self.base_offset, self.max_index_size, self._writable_indexes
            )
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self.deleted:
            return _EMPTY_TIME_INDEX
        if self._time_index is None:
            self._time_index = TimeIndex(
                self.time_index_path, self.base_offset, self.max_index_size, self._writable_indexes
            )
        return self._time_index

    def make_active(self) -> None:
        """Preallocate indexes for appends (this is now the log's last segment)."""
        self._writable_indexes = True
        if self._offset_index is not None:
            self._offset_index.make_writable()
        if self._time_index is not None:
            self._time_index.make_writable()
        _ = self.offset_index, self.time_index

    @property
    def indexes_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    @property
    def max_timestamp(self) -> int:
        """Largest batch timestamp in the segment (-1 if none)."""
        if self._max_timestamp is None:
            last = self.time_index.last_entry
            self._max_timestamp, self._offset_of_max_timestamp = last.timestamp, last.offset
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        _ = self.max_timestamp
        return self._offset_of_max_timestamp

    def last_modified_ms(self) -> int:
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def largest_timestamp_for_retention(self) -> int:
        """Kafka's rule: the largest record timestamp, or the file's mtime when there is none."""
        ts = self.max_timestamp
        return ts if ts > 0 else self.last_modified_ms()

    # ----------------------------------------------------------------------- writing

    def append(
        self,
        data: bytes | bytearray | memoryview | list[bytes | bytearray | memoryview],
        batches: list[tuple[int, BatchHeader]],
    ) -> None:
        """Write validated batches at the end of the file. ``data`` is the batches' bytes, or a
        list of buffers that concatenate to them; ``batches`` holds (position in data, header)."""
        start = self.size
        if isinstance(data, list):
            self.file.pwritev(data, start)
            length = sum(len(buffer) for buffer in data)
        else:
            self.file.pwrite(data, start)
            length = len(data)
        max_ts = self.max_timestamp
        offset_index = self.offset_index
        time_index = self.time_index
        for relative, header in batches:
            if header.max_timestamp > max_ts:
                max_ts = header.max_timestamp
                self._offset_of_max_timestamp = header.last_offset
            if self.first_batch_timestamp is None:
                self.first_batch_timestamp = header.max_timestamp
            self.bytes_since_last_index_entry += header.size
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                offset_index.append(header.last_offset, start + relative)
                time_index.maybe_append(max_ts, self._offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
        self._max_timestamp = max_ts
        self.size = start + length
        if batches:
            self.next_offset = batches[-1][1].next_offset
            self._tail = (start + batches[0][0], batches[0][1].base_offset)

    def flush(self) -> None:
        if not self.file.closed:
            os.fdatasync(self.file.fileno())
        if self._offset_index is not None:
            self._offset_index.flush()
        if self._time_index is not None:
            self._time_index.flush()
        self.txn_index.flush()

    def on_become_inactive(self) -> None:
        """Called on roll: final time index entry, then trim both indexes (as Kafka does)."""
        if self.size and self.max_timestamp >= 0:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
            )
        self._writable_indexes = False
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    # ----------------------------------------------------------------------- reading

    def translate_offset(
        self, offset: int, max_position: int | None = None
    ) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        end = self.size if max_position is None else max_position
        start = self.offset_index.lookup(offset).position
        if start >= end:
            start = 0
        tail = self._tail
        if tail is not None and start < tail[0] < end and tail[1] <= offset:
            start = tail[0]  # batches hold increasing offsets: none before it can hold offset
        for position, header in scan_headers(self.file, start, end):
            if header.last_offset >= offset:
                return position, header
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_batch: bool = True,
        end_offset: int | None = None,
    ) -> tuple[FileRegion, BatchHeader, int] | None:
        """A region of whole batches from the one holding ``start_offset``, at most ``max_size``
        bytes (but at least the first batch when ``min_one_batch``), below ``max_position``.

        Returns (region, first batch header, offset to read next). ``end_offset`` is the offset
        that corresponds to ``max_position`` (default: the segment's next offset).
        """
        end = self.size if max_position is None else max_position
        found = self.translate_offset(start_offset, end)
        if found is None:
            return None
        position, header = found
        limit = min(end, position + max_size)
        if header.size > limit - position:
            if not min_one_batch:
                return None
            return FileRegion(self.file, position, header.size), header, header.next_offset
        region_end, next_offset = self._batch_boundary_at_or_before(
            position, limit, end, self.next_offset if end_offset is None else end_offset
        )
        return FileRegion(self.file, position, region_end - position), header, next_offset

    def _batch_boundary_at_or_before(
        self, start: int, limit: int, end: int, end_offset: int
    ) -> tuple[int, int]:
        """The largest batch boundary in ``[start, limit]`` and the offset that starts there.

        The offset index entries are batch starts, so the index narrows the search to one
        index interval, which is then walked header by header.
        """
        if limit >= end:
            return end, end_offset
        boundary = max(start, self.offset_index.lookup_position(limit).position)
        next_offset: int | None = None
        for position, header in scan_headers(self.file, boundary, end):
            if position + header.size > limit:
                return position, header.base_offset
            next_offset = header.next_offset
            boundary = position + header.size
        return boundary, end_offset if next_offset is None or boundary >= end else next_offset

    def find_offset_by_timestamp(
        self, timestamp: int, start_offset: int, max_position: int | None = None
    ) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``start_offset`` whose
        timestamp is >= ``timestamp``; decodes only the one batch that holds it."""
        end = self.size if max_position is None else max_position
        entry = self.time_index.lookup(timestamp)
        start = self.offset_index.lookup(max(entry.offset, start_offset)).position
        if start >= end:
            start = 0
        for position, header in scan_headers(self.file, start, end):
            if header.max_timestamp >= timestamp and header.last_offset >= start_offset:
                data = self.file.pread(header.size, position)
                _, records = decode_batch(data)
                for record in records:
                    if record.timestamp >= timestamp and record.offset >= start_offset:
                        return record.offset, record.timestamp
        return None

    def iter_headers(
        self, start_position: int = 0, max_position: int | None = None
    ) -> Iterator[tuple[int, BatchHeader]]:
        end = self.size if max_position is None else max_position
        return scan_headers(self.file, start_position, end)

    def read_bytes(self, position: int, length: int) -> bytes:
        return self.file.pread(length, position)

    # ------------------------------------------------------------ recovery and truncation

    def recover(self) -> int:
        """Validate every batch, truncate at the first bad one, rebuild both indexes.

        Returns the number of bytes truncated. Reads 8 MiB at a time; one CRC per batch.
        """
        file_size = self.file.size()
        self.make_active()  # indexes preallocated for the rebuild; the caller trims them
        offset_index = self.offset_index
        time_index = self.time_index
        offset_index.reset()
        time_index.reset()
        self.bytes_since_last_index_entry = 0
        max_ts = -1
        offset_of_max = self.base_offset
        next_offset = self.base_offset
        position = 0
        valid_end = 0
        problem: str | None = None
        crc_of = _crc32c.crc32c
        while position < file_size and problem is None:
            chunk = self.file.pread(min(_RECOVERY_CHUNK, file_size - position), position)
            view = memoryview(chunk)
            relative = 0
            while True:
                if len(chunk) - relative < BATCH_HEADER_SIZE:
                    if position + relative + BATCH_HEADER_SIZE > file_size and relative < len(
                        chunk
                    ):
                        problem = "torn batch header at the end"
                    break
                header = parse_batch_header(chunk, relative)
                if (
                    header.magic != 2
                    or header.length < MIN_BATCH_LENGTH
                    or header.base_offset < next_offset
                    or header.last_offset_delta < 0
                ):
                    problem = f"impossible batch header (offset {header.base_offset})"
                    break
                if relative + header.size > len(chunk):
                    if position + relative + header.size > file_size:
                        problem = "torn batch at the end"
                    elif relative == 0:
                        # one batch larger than the chunk: read it whole
                        chunk = self.file.pread(header.size, position)
                        view = memoryview(chunk)
                        continue
                    break
                if crc_of(view[relative + CRC_START : relative + header.size]) != header.crc:
                    problem = f"CRC mismatch in batch at offset {header.base_offset}"
                    break
                if header.max_timestamp > max_ts:
                    max_ts = header.max_timestamp
                    offset_of_max = header.last_offset
                if self.first_batch_timestamp is None:
                    self.first_batch_timestamp = header.max_timestamp
                self.bytes_since_last_index_entry += header.size
                if self.bytes_since_last_index_entry > self.index_interval_bytes:
                    offset_index.append(header.last_offset, position + relative)
                    time_index.maybe_append(max_ts, offset_of_max)
                    self.bytes_since_last_index_entry = 0
                next_offset = header.next_offset
                relative += header.size
            position += relative
            valid_end = position
            if relative == 0 and problem is None:
                break
        truncated = file_size - valid_end
        if truncated:
            log.warning(
                "segment %s: %s; truncating %d bytes at position %d",
                self.log_path,
                problem or "trailing bytes",
                truncated,
                valid_end,
            )
            os.ftruncate(self.file.fileno(), valid_end)
        self._tail = None
        self.size = valid_end
        self._max_timestamp = max_ts
        self._offset_of_max_timestamp = offset_of_max
        self.next_offset = next_offset
        return truncated

    def load_next_offset(self) -> None:
        """Find the offset after the last batch by scanning from the last index entry."""
        last = self.offset_index.last_entry
        start = last.position if last.position < self.size else 0
        next_offset = self.base_offset
        for _position, header in scan_headers(self.file, start, self.size):
            next_offset = header.next_offset
        self.next_offset = next_offset

    def rebuild_indexes(self) -> None:
        """Delete and rebuild both indexes from the log (used when they are missing or bad)."""
        self.close_indexes()
        self.index_path.unlink(missing_ok=True)
        self.time_index_path.unlink(missing_ok=True)
        writable = self._writable_indexes
        self._writable_indexes = True
        self.recover()
        if not writable:
            self.on_become_inactive()

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (a batch is atomic, so one that
        straddles ``offset`` goes too, as in Kafka). Returns the bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, _header = found
        removed = self.size - position
        if removed <= 0:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self._tail = None
        os.ftruncate(self.file.fileno(), position)
        self.size = position
        self.bytes_since_last_index_entry = 0
        self._max_timestamp = None
        # The time index may now lack the max timestamp; recompute from remaining headers.
        self._recompute_max_timestamp()
        self.load_next_offset()
        return removed

    def _recompute_max_timestamp(self) -> None:
        start = self.time_index.last_entry
        max_ts, offset_of_max = start.timestamp, start.offset
        begin = self.offset_index.lookup(start.offset).position if start.timestamp >= 0 else 0
        for _position, header in scan_headers(self.file, begin, self.size):
            if header.max_timestamp > max_ts:
                max_ts, offset_of_max = header.max_timestamp, header.last_offset
        self._max_timestamp, self._offset_of_max_timestamp = max_ts, offset_of_max

    # ---------------------------------------------------------------------- lifecycle

    def close_indexes(self) -> None:
        if self._offset_index is not None:
            self._offset_index.close()
            self._offset_index = None
        if self._time_index is not None:
            self._time_index.close()
            self._time_index = None

    def close(self) -> None:
        """Trim indexes if writable and let go of the file (outstanding regions keep it open)."""
        if self._writable_indexes:
            try:
                self.offset_index.trim_to_valid_size()
                self.time_index.trim_to_valid_size()
            except (OSError, ValueError, CorruptRecord) as exc:
                log.warning("segment %s: could not trim indexes: %s", self.log_path, exc)
            self._writable_indexes = False
        self.close_indexes()

    def change_suffix(self, suffix: str) -> None:
        """Rename all four files to ``<base>.<kind><suffix>`` (e.g. ``.deleted``)."""
        old = (self.log_path, self.index_path, self.time_index_path)
        self.close_indexes()
        self.suffix = suffix
        for source, target in zip(
            old, (self.log_path, self.index_path, self.time_index_path), strict=False
        ):
            if source.exists():
                os.replace(source, target)
        self.file.path = self.log_path
        self.txn_index.rename(self._path(TXN_INDEX_SUFFIX))

    def delete_files(self) -> None:
        self.close_indexes()
        self.txn_index.delete()
        for path in (self.log_path, self.index_path, self.time_index_path):
            path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, next={self.next_offset})"


def check_index_or_rebuild(segment: LogSegment, *, is_last: bool = False) -> None:
    """Sanity-check a loaded segment's indexes; rebuild them from the log when damaged.

    For the last segment its exact next offset is found first (a header scan from the last
    index entry), because the time index check needs it.
    """
    try:
        if not segment.index_path.exists() or not segment.time_index_path.exists():
            raise CorruptIndex("index file missing")
        segment.offset_index.sanity_check(max(segment.size, 1))
        if is_last:
            segment.load_next_offset()
        segment.time_index.sanity_check(segment.next_offset)
        interval = segment.index_interval_bytes
        if segment.offset_index.entries == 0 and segment.size > 2 * interval > 0:
            # Appends index every batch once ``interval`` bytes passed, so this was emptied.
            raise CorruptIndex(f"no index entry for {segment.size} bytes of batches")
    except (CorruptIndex, CorruptRecord, OSError, ValueError) as exc:
        log.warning("segment %s: rebuilding indexes (%s)", segment.log_path, exc)
        segment.rebuild_indexes()
