"""The machinery shared by the offset and time indexes: a memory-mapped file of fixed-size,
big-endian, sorted entries.

Why mmap and not plain writes: the active segment's index takes an entry every
``index.interval.bytes`` on the append path; with a mapping that is a store into the page
cache (no syscall), and lookups read the same pages without a copy. Like Kafka, the file is
preallocated to ``segment.index.bytes`` (rounded down to whole entries) while the segment is
active, so the mapping never has to grow, and trimmed to its real length on roll or close.

Crash behaviour: the index has no checksum. A preallocated index left by a crash has zero
entries after its real ones; :meth:`MmapIndex.sanity_check` detects that and any other damage
(entries out of order, positions past the log) and the caller rebuilds the index from the log,
which is the source of truth.

Older segments' indexes are opened lazily (see ``LogSegment``) so a log with thousands of
segments maps only what it reads. All methods take the index lock: mapping and unmapping must
not race a lookup from a reader thread. The critical sections are a few struct calls.
"""

from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path

from odradek.protocol.errors import CorruptRecord

__all__ = ["CorruptIndex", "MmapIndex"]


class CorruptIndex(CorruptRecord):
    """An index file failed its sanity check; rebuild it from the log."""


class MmapIndex:
    ENTRY_SIZE = 8
    # Binary search looks at the last 8 KiB ("warm" entries) first: almost all lookups from
    # consumers and followers are near the tail, and those pages are the ones in memory.
    WARM_BYTES = 8192

    def __init__(self, path: Path, base_offset: int, max_index_size: int, writable: bool) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._lock = threading.Lock()
        self._mmap: mmap.mmap | None = None
        self._entries = 0
        self._max_entries = 0
        self._open(writable)

    # ------------------------------------------------------------------ file handling

    def _open(self, writable: bool) -> None:
        exists = self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if writable:
                target = self.max_index_size - self.max_index_size % self.ENTRY_SIZE
                if size < target:
                    os.ftruncate(fd, target)
                    size_for_map = target
                else:
                    size_for_map = size
            else:
                size_for_map = size - size % self.ENTRY_SIZE
            if size_for_map > 0:
                self._mmap = mmap.mmap(fd, size_for_map)
            else:
                self._mmap = None
        finally:
            os.close(fd)
        mapped = len(self._mmap) if self._mmap is not None else 0
        self._max_entries = mapped // self.ENTRY_SIZE
        if exists and size > 0:
            # An existing file: as many entries as it holds, minus any zeroed preallocated tail.
            self._entries = self._count_real_entries(min(size, mapped) // self.ENTRY_SIZE)
        else:
            self._entries = 0

    def _count_real_entries(self, slots: int) -> int:
        """Entries before the first all-zero slot (slot 0 may legitimately be all zero)."""
        assert self._mmap is not None
        mm = self._mmap
        zero = bytes(self.ENTRY_SIZE)
        low, high = 1, slots
        if slots == 0:
            return 0
        if mm[: self.ENTRY_SIZE] == zero and slots > 1 and mm[self.ENTRY_SIZE : 16] == zero:
            # Slot 0 alone being zero is ambiguous (a real first entry can be all zero); counting
            # it out is safe because a sparse index may always lack entries.
            return 0
        # Entries are strictly increasing, so non-zero slots form a prefix: binary search it.
        while low < high:
            mid = (low + high) // 2
            start = mid * self.ENTRY_SIZE
            if mm[start : start + self.ENTRY_SIZE] == zero:
                high = mid
            else:
                low = mid + 1
        return low

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def size_bytes(self) -> int:
        return self._entries * self.ENTRY_SIZE

    def _append_raw(self, data: bytes) -> None:
        with self._lock:
            if self._mmap is None or self._entries >= self._max_entries:
                raise CorruptIndex(f"index {self.path} is full ({self._entries} entries)")
            start = self._entries * self.ENTRY_SIZE
            self._mmap[start : start + self.ENTRY_SIZE] = data
            self._entries += 1

    def trim_to_valid_size(self) -> None:
        """Shrink the file to its entries (on roll and close) and map it read-only-sized."""
        self.resize(self._entries * self.ENTRY_SIZE)

    def resize(self, new_size: int) -> None:
        with self._lock:
            new_size -= new_size % self.ENTRY_SIZE
            if self._mmap is not None:
                # No msync here: this runs on roll under the append lock. Dirty pages stay in
                # the page cache; the segment flush (background) or recovery takes care.
                self._mmap.close()
                self._mmap = None
            os.truncate(self.path, new_size)
            if new_size > 0:
                fd = os.open(self.path, os.O_RDWR)
                try:
                    self._mmap = mmap.mmap(fd, new_size)
                finally:
                    os.close(fd)
            self._max_entries = new_size // self.ENTRY_SIZE
            self._entries = min(self._entries, self._max_entries)

    def make_writable(self) -> None:
        """Re-extend a trimmed index to its preallocated size (the segment became active again)."""
        target = self.max_index_size - self.max_index_size % self.ENTRY_SIZE
        if self._max_entries * self.ENTRY_SIZE < target:
            entries = self._entries
            self.resize(target)
            self._entries = entries

    def truncate_entries(self, entries: int) -> None:
        """Forget entries from ``entries`` on (the mapping keeps its size)."""
        with self._lock:
            if self._mmap is not None and entries < self._entries:
                start = entries * self.ENTRY_SIZE
                end = self._entries * self.ENTRY_SIZE
                self._mmap[start:end] = bytes(end - start)
            self._entries = min(entries, self._entries)

    def reset(self) -> None:
        self.truncate_entries(0)

    def flush(self) -> None:
        with self._lock:
            if self._mmap is not None:
                self._mmap.flush()

    def close(self) -> None:
        """Unmap. A reader still holding this object then sees an empty index, which is
        always a correct (if slower) answer for a sparse index."""
        with self._lock:
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            self._entries = 0
            self._max_entries = 0

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
