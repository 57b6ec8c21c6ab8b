"""Response frames onto a connection's transport, in order, with ``sendfile`` for record data.

The connection (:mod:`.connection`) is a protocol on the loop's transport: its responses
leave through ``transport.writelines`` in the callback that made them — one system call
for all the responses of one read. Record data is the exception: a file region longer than
``COPY_AT_MOST`` goes out with ``os.sendfile`` straight from the page cache to the socket.

Why that is safe beside a transport that buffers writes in user space: bytes written to the
socket's fd directly could overtake bytes still in the transport's buffer, so a region is
sent only while that buffer is empty. On a plain TCP transport the write-buffer high-water
mark is 0: the transport calls ``pause_writing`` the moment anything stays buffered and
``resume_writing`` once all of it has left, which is exactly "the buffer is empty again"
(:meth:`ResponseStream.resume`). When the socket fills in the middle of a region, the next
byte of it is copied into the transport: it stays buffered, which is what brings the
``resume_writing`` that continues the region (a bigger piece would only copy record data
that ``sendfile`` can send without the copy). Frames behind a
region wait in :class:`ResponseStream` (not copied) until the region has gone.

A region of at most ``COPY_AT_MOST`` bytes is read with ``os.pread`` and written with the
response's other bytes: a Fetch answered with one small batch (a follower or a consumer
keeping up with the log end) leaves as one TCP segment instead of three system calls.

Under TLS the transport encrypts in user space, so every region is read and written like
bytes (a large one only once the transport has room: bounded ciphertext in memory).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from odradek.protocol.fetch_response import Chunk

__all__ = ["COPY_AT_MOST", "FileRegionLike", "ResponseStream", "read_region"]

COPY_AT_MOST = 16 * 1024
_NUDGE = 1
_SENDFILE_STEP = 1 << 30

T = TypeVar("T")


class FileRegionLike(Protocol):
    """What the stream needs of ``odradek.storage.FileRegion``."""

    @property
    def position(self) -> int: ...

    @property
    def length(self) -> int: ...

    def fileno(self) -> int: ...


class _RegionRest:
    """What is left of a region after a partial ``sendfile``."""

    __slots__ = ("_fd", "length", "position")

    def __init__(self, fd: int, position: int, length: int) -> None:
        self._fd = fd
        self.position = position
        self.length = length

    def fileno(self) -> int:
        return self._fd


def read_region(region: FileRegionLike) -> bytes:
    """A region's bytes, copied (small regions, TLS); a file shorter than the region is an
    error, never a short frame."""
    data = os.pread(region.fileno(), region.length, region.position)
    if len(data) != region.length:
        raise OSError(f"file ended {region.length - len(data)} bytes before the region did")
    return data


class _Frame(Generic[T]):
    """A response frame still to write: its chunks, the first unsent one, its owner's token."""

    __slots__ = ("chunks", "index", "token")

    def __init__(self, chunks: list[Chunk | FileRegionLike], token: T) -> None:
        self.chunks = chunks
        self.index = 0
        self.token = token


class ResponseStream(Generic[T]):
    """Writes response frames to ``transport`` in order. ``sendfile_fd`` is the socket's fd
    when regions may be sent with ``os.sendfile`` (None under TLS); ``on_sent(token)`` is
    called once a frame has been handed to the transport (or the kernel) entirely. The owner
    forwards the transport's ``pause_writing``/``resume_writing`` to :meth:`pause` and
    :meth:`resume`; :meth:`send` and :meth:`resume` raise ``OSError`` on a broken socket or
    a short file."""

    def __init__(self, transport: asyncio.WriteTransport, sendfile_fd: int | None,
                 on_sent: Callable[[T], None]) -> None:
        self._transport = transport
        self._fd = sendfile_fd
        self._on_sent = on_sent
        self._queue: deque[_Frame[T]] = deque()
        self._paused = False
        if sendfile_fd is not None:
            transport.set_write_buffer_limits(high=0, low=0)  # see the module docstring

    @property
    def queued(self) -> int:
        """Frames not yet handed over entirely (waiting behind a region)."""
        return len(self._queue)

    @property
    def idle(self) -> bool:
        return not self._queue

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._flush()

    def send(self, frames: Sequence[tuple[Sequence[Chunk], T]]) -> None:
        """Write ``frames`` after those still queued; their bytes leave in one write unless a
        large region is among them."""
        queue = self._queue
        for chunks, token in frames:
            queue.append(_Frame(list(chunks), token))
        self._flush()

    def close(self) -> None:
        """The connection is gone: drop what was not written."""
        self._queue.clear()

    def _flush(self) -> None:
        queue = self._queue
        buffers: list[bytes] = []
        sent: list[T] = []
        try:
            while queue:
                frame = queue[0]
                if not self._write_frame(frame, buffers):
                    break
                queue.popleft()
                sent.append(frame.token)
        finally:
            if buffers:
                self._transport.writelines(buffers)
        for token in sent:
            self._on_sent(token)

    def _write_frame(self, frame: _Frame[T], buffers: list[bytes]) -> bool:
        """Move ``frame`` into ``buffers`` (or the socket); False when it must wait."""
        chunks = frame.chunks
        index = frame.index
        while index < len(chunks):
            chunk = chunks[index]
            if type(chunk) is bytes:
                if chunk:
                    buffers.append(chunk)
                index += 1
                continue
            region: FileRegionLike = chunk  # type: ignore[assignment]
            if region.length <= COPY_AT_MOST:
                if region.length:
                    buffers.append(read_region(region))
                index += 1
                continue
            if buffers:
                self._transport.writelines(buffers)
                buffers.clear()
            if self._paused:  # the transport holds bytes: the region would overtake them
                frame.index = index
                return False
            if self._fd is None:
                self._transport.write(read_region(region))
                index += 1
                continue
            rest = self._sendfile(self._fd, region)
            if rest is not None:
                chunks[index] = rest
                frame.index = index
                return False
            index += 1
        return True

    def _sendfile(self, socket_fd: int, region: FileRegionLike) -> FileRegionLike | None:
        """Send what the socket takes; the rest of the region when it had to stop."""
        file_fd, position, remaining = region.fileno(), region.position, region.length
        while remaining:
            try:
                count = os.sendfile(socket_fd, file_fd, position,
                                    min(remaining, _SENDFILE_STEP))
            except (BlockingIOError, InterruptedError):
                piece = read_region(_RegionRest(file_fd, position, min(remaining, _NUDGE)))
                self._transport.write(piece)  # stays buffered: resume_writing follows
                position += len(piece)
                remaining -= len(piece)
                if self._paused:
                    return _RegionRest(file_fd, position, remaining) if remaining else None
                continue
            if count == 0:
                # The file is shorter than the region promised: never send a short frame.
                raise OSError(f"file ended {remaining} bytes before the region did")
            position += count
            remaining -= count
        return None
