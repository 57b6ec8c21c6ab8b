"""The sparse offset index of one segment (``<20-digit base offset>.index``).

File format: a sequence of 8-byte entries, no header, no checksum::

    0  relative offset  int32  big-endian   (offset - segment base offset)
    4  position         int32  big-endian   byte position of a batch in the .log file

Entries are strictly increasing in both fields. One entry is added when more than
``index.interval.bytes`` of batches were appended since the previous one; it maps the *last*
offset of the batch just appended to that batch's start position, as Kafka does, so the
entry found for a target offset points at or before the batch holding it.

Relative offsets never leave this module: the API takes and returns absolute offsets.
Crash behaviour: see :mod:`odradek.storage.mmap_index`; a damaged index is rebuilt.
"""

from __future__ import annotations

import array
import operator
import struct
import sys
from pathlib import Path
from typing import NamedTuple

from odradek.storage.mmap_index import CorruptIndex, MmapIndex

__all__ = ["OffsetIndex", "OffsetPosition"]

_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(MmapIndex):
    ENTRY_SIZE = 8

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = 10485760, writable: bool = True
    ) -> None:
        super().__init__(path, base_offset, max_index_size, writable)

    def _entry(self, slot: int) -> tuple[int, int]:
        assert self._mmap is not None
        relative, position = _ENTRY.unpack_from(self._mmap, slot * 8)
        return relative, position

    @property
    def last_entry(self) -> OffsetPosition:
        with self._lock:
            if self._entries == 0:
                return OffsetPosition(self.base_offset, 0)
            relative, position = self._entry(self._entries - 1)
            return OffsetPosition(self.base_offset + relative, position)

    def append(self, offset: int, position: int) -> None:
        """Add an entry; silently ignores one that is not past the last entry."""
        relative = offset - self.base_offset
        if self._entries:
            last_relative, last_position = self._entry(self._entries - 1)
            if relative <= last_relative or position <= last_position:
                return
        if not 0 <= relative <= 0x7FFFFFFF:
            raise CorruptIndex(f"offset {offset} does not fit segment {self.base_offset}")
        self._append_raw(_ENTRY.pack(relative, position))

    def lookup(self, offset: int) -> OffsetPosition:
        """The entry with the largest offset <= ``offset``, or (base offset, 0)."""
        target = offset - self.base_offset
        with self._lock:
            slot = self._search(target, key=0)
            if slot < 0:
                return OffsetPosition(self.base_offset, 0)
            relative, position = self._entry(slot)
            return OffsetPosition(self.base_offset + relative, position)

    def lookup_position(self, position: int) -> OffsetPosition:
        """The entry with the largest position <= ``position``, or (base offset, 0)."""
        with self._lock:
            slot = self._search(position, key=1)
            if slot < 0:
                return OffsetPosition(self.base_offset, 0)
            relative, found = self._entry(slot)
            return OffsetPosition(self.base_offset + relative, found)

    def _search(self, target: int, key: int) -> int:
        """Largest slot whose field ``key`` is <= target, or -1. Caller holds the lock."""
        entries = self._entries
        if entries == 0 or self._entry(0)[key] > target:
            return -1
        warm_start = max(0, entries - self.WARM_BYTES // self.ENTRY_SIZE)
        low, high = (
            (warm_start, entries - 1)
            if self._entry(warm_start)[key] <= target
            else (
                0,
                warm_start,
            )
        )
        while low < high:
            mid = (low + high + 1) // 2
            if self._entry(mid)[key] <= target:
                low = mid
            else:
                high = mid - 1
        return low

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        with self._lock:
            slot = self._search(offset - self.base_offset - 1, key=0) if self._entries else -1
        self.truncate_entries(slot + 1)

    def sanity_check(self, log_size: int) -> None:
        """Raise :class:`CorruptIndex` unless entries increase and point inside the log."""
        with self._lock:
            if self._entries == 0:
                return
            assert self._mmap is not None
            values = array.array("i", self._mmap[: self._entries * 8])
            if sys.byteorder == "little":
                values.byteswap()
        relatives, positions = values[0::2], values[1::2]
        if (
            relatives[0] < 0
            or positions[-1] >= log_size
            or not all(map(operator.lt, relatives, relatives[1:]))
            or not all(map(operator.lt, positions, positions[1:]))
        ):
            raise CorruptIndex(
                f"offset index {self.path}: entries out of order or past the log end {log_size}"
            )
