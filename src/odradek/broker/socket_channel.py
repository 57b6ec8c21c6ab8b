"""One TCP connection's bytes in and out, with zero-copy ``sendfile`` for record data.

Why own the socket instead of using an asyncio transport: a transport buffers writes in
user space and flushes them whenever the loop gets to it, so bytes written to the socket
fd directly (``os.sendfile``) could overtake bytes still in the transport's buffer and
corrupt the stream. Owning the non-blocking socket makes the order trivially right: this
class is the only writer, every write completes (or waits for writability with
``loop.add_writer``) before the next chunk starts, and nothing is buffered in between. It
also works the same on uvloop (which has no ``sock_sendfile``) and the stdlib loop.

Reads use ``loop.sock_recv_into`` — the loop's own readiness machinery, no busy loop.

A region of at most ``COPY_AT_MOST`` bytes is read with ``os.pread`` and sent in the same
``sendmsg`` as the response's other bytes: a Fetch answered with one small batch (a follower
or a consumer keeping up with the log end) then leaves as one TCP segment — header, records
and trailing tagged fields together — instead of three system calls and two segments, each
segment a wake-up of the peer. Bulk reads (catching up, large batches) keep ``sendfile``.

A TLS listener cannot use ``sendfile``; :class:`CopyingChannel` is the fallback shape:
every region is read with ``os.pread`` and sent like bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Sequence
from typing import Protocol

__all__ = [
    "COPY_AT_MOST", "ByteChannel", "CopyingChannel", "FileRegionLike", "SocketChannel",
    "read_region",
]

COPY_AT_MOST = 16 * 1024
_MAX_IOVECS = 512  # well below IOV_MAX (1024 on Linux)
_MSG_MORE = getattr(socket, "MSG_MORE", 0)
_SENDFILE_STEP = 1 << 30


class FileRegionLike(Protocol):
    """What the channel needs of ``odradek.storage.FileRegion``."""

    @property
    def position(self) -> int: ...

    @property
    def length(self) -> int: ...

    def fileno(self) -> int: ...


class ByteChannel(Protocol):
    async def recv_into(self, buffer: bytearray | memoryview) -> int: ...

    async def write_chunks(self, chunks: Sequence[bytes | FileRegionLike]) -> None: ...

    def send_now(self, chunks: list[bytes]) -> list[bytes | memoryview]:
        """Send what the socket takes without waiting; the unsent rest (all of it when
        the channel cannot send synchronously)."""
        ...

    def close(self) -> None: ...


def read_region(region: FileRegionLike) -> bytes:
    """A region's bytes, copied (what goes out where ``sendfile`` does not: small regions,
    TLS); a file shorter than the region is an error, never a short frame."""
    data = os.pread(region.fileno(), region.length, region.position)
    if len(data) != region.length:
        raise OSError(f"file ended {region.length - len(data)} bytes before the region did")
    return data


def _drop_sent(buffers: list[bytes | memoryview], sent: int) -> None:
    """Remove the first ``sent`` bytes (what one ``sendmsg`` took) from ``buffers``."""
    while sent and buffers:
        head = buffers[0]
        if len(head) <= sent:
            sent -= len(head)
            buffers.pop(0)
        else:
            buffers[0] = memoryview(head)[sent:]
            sent = 0


class SocketChannel:
    """A connected, non-blocking TCP socket driven by the running event loop."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._fd = sock.fileno()
        self._loop = asyncio.get_running_loop()
        self._closed = False

    @property
    def peer(self) -> str:
        try:
            host, port = self._sock.getpeername()[:2]
        except OSError:
            return "?"
        return f"{host}:{port}"

    async def recv_into(self, buffer: bytearray | memoryview) -> int:
        return await self._loop.sock_recv_into(self._sock, buffer)

    async def write_chunks(self, chunks: Sequence[bytes | FileRegionLike]) -> None:
        """Write ``chunks`` in order; returns when all bytes are in the kernel."""
        pending: list[bytes | memoryview] = []
        for chunk in chunks:
            if isinstance(chunk, bytes):
                if chunk:
                    pending.append(chunk)
                continue
            if chunk.length == 0:
                continue
            if chunk.length <= COPY_AT_MOST:
                pending.append(read_region(chunk))
                continue
            if pending:
                await self._send_buffers(pending, more=True)
                pending = []
            await self._sendfile(chunk)
        if pending:
            await self._send_buffers(pending, more=False)

    def send_now(self, chunks: list[bytes]) -> list[bytes | memoryview]:
        """One ``sendmsg`` of small in-memory chunks, no waiting: a response ready when its
        request is read goes out from the reader, without waking the writer task."""
        try:
            sent = self._sock.sendmsg(chunks[:_MAX_IOVECS])
        except (BlockingIOError, InterruptedError):
            return list(chunks)
        rest: list[bytes | memoryview] = list(chunks)
        _drop_sent(rest, sent)
        return rest

    async def _send_buffers(self, buffers: list[bytes | memoryview], *, more: bool) -> None:
        while buffers:
            batch = buffers[:_MAX_IOVECS]
            flags = _MSG_MORE if (more or len(buffers) > len(batch)) else 0
            try:
                sent = self._sock.sendmsg(batch, (), flags)
            except (BlockingIOError, InterruptedError):
                await self._wait_writable()
                continue
            _drop_sent(buffers, sent)
            if buffers:
                await self._wait_writable()

    async def _sendfile(self, region: FileRegionLike) -> None:
        file_fd = region.fileno()
        position = region.position
        remaining = region.length
        while remaining:
            try:
                sent = os.sendfile(self._fd, file_fd, position, min(remaining, _SENDFILE_STEP))
            except (BlockingIOError, InterruptedError):
                await self._wait_writable()
                continue
            if sent == 0:
                # The file is shorter than the region promised: never send a short frame.
                raise OSError(f"file ended {remaining} bytes before the region did")
            position += sent
            remaining -= sent
            if remaining:
                await self._wait_writable()

    async def _wait_writable(self) -> None:
        if self._closed:
            raise ConnectionResetError("channel closed")
        waiter = self._loop.create_future()

        def ready() -> None:
            if not waiter.done():
                waiter.set_result(None)

        self._loop.add_writer(self._fd, ready)
        try:
            await waiter
        finally:
            if not self._closed:
                self._loop.remove_writer(self._fd)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, ValueError):
            self._loop.remove_writer(self._fd)
        self._sock.close()


class CopyingChannel(SocketChannel):
    """Same contract, but record regions are copied (``pread`` + send): the TLS shape."""

    async def _sendfile(self, region: FileRegionLike) -> None:
        await self._send_buffers([read_region(region)], more=False)
