"""Open segment files and the byte ranges of them that reads hand out.

A :class:`SegmentFile` is one file descriptor shared by a segment and every
:class:`FileRegion` a read returned. The descriptor is closed when the last holder lets go
(CPython's reference counting makes that immediate), never while a region is alive. That is
what makes retention safe against in-flight fetches: a deleted segment is renamed to
``.deleted``, then unlinked after ``file.delete.delay.ms``; a region taken before either step
still reads the old bytes through its descriptor, and the descriptor number cannot be reused
for another file under the reader's feet.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FileRegion", "SegmentFile"]

_IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 16


class SegmentFile:
    """An open ``.log`` file (read/write), closed when garbage collected or by :meth:`close`."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path, *, create: bool = True) -> None:
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        self._fd = os.open(path, flags, 0o644)
        self.path = path

    def fileno(self) -> int:
        if self._fd < 0:
            raise ValueError(f"segment file {self.path} is closed")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def size(self) -> int:
        return os.fstat(self.fileno()).st_size

    def pread(self, length: int, position: int) -> bytes:
        """Read up to ``length`` bytes (fewer only at end of file)."""
        chunks = []
        fd = self.fileno()
        while length > 0:
            chunk = os.pread(fd, length, position)
            if not chunk:
                break
            chunks.append(chunk)
            length -= len(chunk)
            position += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def pwrite(self, data: bytes | bytearray | memoryview, position: int) -> None:
        view = memoryview(data)
        fd = self.fileno()
        while view:
            written = os.pwrite(fd, view, position)
            view = view[written:]
            position += written

    def pwritev(self, buffers: list[bytes | bytearray | memoryview], position: int) -> None:
        """Write ``buffers`` back to back at ``position`` with as few syscalls as possible."""
        fd = self.fileno()
        pending = [memoryview(buffer).cast("B") for buffer in buffers if len(buffer)]
        first = 0
        while first < len(pending):
            written = os.pwritev(fd, pending[first : first + _IOV_MAX], position)
            position += written
            while written and first < len(pending):
                size = len(pending[first])
                if written >= size:
                    written -= size
                    first += 1
                else:
                    pending[first] = pending[first][written:]
                    written = 0

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            self.close()


@dataclass(frozen=True)
class FileRegion:
    """``length`` bytes at ``position`` of ``file``: whole record batches, ready for
    ``os.sendfile(socket_fd, region.fileno(), region.position, region.length)``."""

    file: SegmentFile
    position: int
    length: int

    def fileno(self) -> int:
        return self.file.fileno()

    def read_bytes(self) -> bytes:
        """The bytes, copied (for tests and for transports that cannot sendfile, e.g. TLS)."""
        return self.file.pread(self.length, self.position)
