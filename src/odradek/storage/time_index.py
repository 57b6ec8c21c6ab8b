"""The sparse time index of one segment (``<20-digit base offset>.timeindex``).

File format: a sequence of 12-byte entries, no header, no checksum::

    0  timestamp        int64  big-endian   largest batch timestamp seen so far
    8  relative offset  int32  big-endian   offset (minus base) of the batch holding it

Entries are strictly increasing in timestamp (and non-decreasing in offset). An entry is
added beside each offset index entry when the largest timestamp grew, and once more when the
segment is rolled, so the last entry holds the segment's largest timestamp. Lookups for a
target timestamp find the last entry below it and scan the log from there.

Crash behaviour: see :mod:`odradek.storage.mmap_index`; a damaged index is rebuilt.
"""

from __future__ import annotations

import operator
import struct
from pathlib import Path
from typing import NamedTuple

from odradek.storage.mmap_index import CorruptIndex, MmapIndex

__all__ = ["TimeIndex", "TimestampOffset"]

_ENTRY = struct.Struct(">qi")


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(MmapIndex):
    ENTRY_SIZE = 12

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = 10485760, writable: bool = True
    ) -> None:
        super().__init__(path, base_offset, max_index_size, writable)

    def _entry(self, slot: int) -> tuple[int, int]:
        assert self._mmap is not None
        timestamp, relative = _ENTRY.unpack_from(self._mmap, slot * 12)
        return timestamp, relative

    @property
    def last_entry(self) -> TimestampOffset:
        """The largest timestamp indexed, or (-1, base offset) for an empty index."""
        with self._lock:
            if self._entries == 0:
                return TimestampOffset(-1, self.base_offset)
            timestamp, relative = self._entry(self._entries - 1)
            return TimestampOffset(timestamp, self.base_offset + relative)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Add an entry if ``timestamp`` is larger than the last one."""
        if self._entries:
            last_timestamp, last_relative = self._entry(self._entries - 1)
            if timestamp <= last_timestamp or offset - self.base_offset < last_relative:
                return
        if self.is_full and skip_full_check:
            return
        self._append_raw(_ENTRY.pack(timestamp, offset - self.base_offset))

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= ``timestamp``, or (-1, base offset)."""
        with self._lock:
            entries = self._entries
            if entries == 0 or self._entry(0)[0] > timestamp:
                return TimestampOffset(-1, self.base_offset)
            low, high = 0, entries - 1
            while low < high:
                mid = (low + high + 1) // 2
                if self._entry(mid)[0] <= timestamp:
                    low = mid
                else:
                    high = mid - 1
            found_ts, relative = self._entry(low)
            return TimestampOffset(found_ts, self.base_offset + relative)

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        keep = 0
        with self._lock:
            for slot in range(self._entries):
                if self.base_offset + self._entry(slot)[1] >= offset:
                    break
                keep = slot + 1
        self.truncate_entries(keep)

    def sanity_check(self, next_offset: int) -> None:
        """Raise :class:`CorruptIndex` unless entries increase and point below ``next_offset``."""
        with self._lock:
            if self._entries == 0:
                return
            assert self._mmap is not None
            entries = list(_ENTRY.iter_unpack(self._mmap[: self._entries * 12]))
        timestamps = [entry[0] for entry in entries]
        relatives = [entry[1] for entry in entries]
        if (
            relatives[0] < 0
            or self.base_offset + relatives[-1] >= max(next_offset, self.base_offset + 1)
            or not all(map(operator.lt, timestamps, timestamps[1:]))
            or not all(map(operator.le, relatives, relatives[1:]))
        ):
            raise CorruptIndex(f"time index {self.path}: entries out of order or past the log end")
