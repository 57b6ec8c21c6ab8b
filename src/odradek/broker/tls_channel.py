"""A TLS connection with the :class:`~.socket_channel.ByteChannel` contract.

Why ``ssl.SSLObject`` over memory BIOs instead of an ``SSLSocket`` or an asyncio transport:
the loop's ``sock_*`` calls refuse SSL sockets, and a transport would bring back the
buffering :mod:`.socket_channel` avoids. Here TLS is a pure transformation between two
in-memory buffers, and this class moves ciphertext between them and the non-blocking socket
with the loop's own ``sock_recv``/``sock_sendall``. Record data cannot go out with
``sendfile`` under TLS: file regions are read (``pread``) and encrypted like any bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Sequence

from .socket_channel import FileRegionLike, read_region

__all__ = ["TlsChannel"]

_RECV = 256 * 1024
_WRITE_STEP = 256 * 1024  # encrypt and send in steps: bounded ciphertext in memory


class TlsChannel:
    """Server side of one TLS connection. Create with :meth:`accept` (runs the handshake)."""

    def __init__(self, sock: socket.socket, context: ssl.SSLContext) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._closed = False
        self._eof = False  # the peer closed TLS (close_notify)
        self._write_lock = asyncio.Lock()
        try:
            host, port = sock.getpeername()[:2]
            self.peer = f"{host}:{port}"
        except OSError:
            self.peer = "?"

    @classmethod
    async def accept(cls, sock: socket.socket, context: ssl.SSLContext,
                     timeout_s: float) -> TlsChannel:
        """The handshake, bounded in time (a peer that never finishes it holds nothing)."""
        channel = cls(sock, context)
        try:
            await asyncio.wait_for(channel._handshake(), timeout_s)
        except BaseException:
            channel.close()
            raise
        return channel

    def peer_certificate(self) -> dict[str, object] | None:
        return self._tls.getpeercert() or None  # type: ignore[return-value]

    async def _handshake(self) -> None:
        while True:
            try:
                self._tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            await self._flush()
            if not await self._fill():
                raise ConnectionResetError("peer closed during the TLS handshake")
        await self._flush()

    async def _fill(self) -> bool:
        """Read ciphertext from the socket into the TLS engine; False at end of stream."""
        data = await self._loop.sock_recv(self._sock, _RECV)
        if not data:
            self._incoming.write_eof()
            return False
        self._incoming.write(data)
        return True

    async def _flush(self) -> None:
        # Read the engine's output under the lock: the reader (handshake messages, tickets)
        # and the writer both flush, and ciphertext must leave in the order it was made.
        async with self._write_lock:
            data = self._outgoing.read()
            if data:
                await self._loop.sock_sendall(self._sock, data)

    async def recv_into(self, buffer: bytearray | memoryview) -> int:
        view = memoryview(buffer)
        while True:
            count = self._decrypt_into(view)
            if count or self._eof:
                return count
            await self._flush()  # e.g. TLS 1.3 session tickets or a key update
            if not await self._fill():
                return 0

    def _decrypt_into(self, view: memoryview) -> int:
        """Everything already decryptable, as much as fits. One ``read`` yields at most one
        TLS record (16 KiB): filling the buffer from all of them spares the connection a
        round of frame parsing per record."""
        total = 0
        while total < len(view):
            try:
                count = int(self._tls.read(len(view) - total, view[total:]))
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                self._eof = True
                break
            except ssl.SSLError as exc:
                raise ConnectionResetError(f"TLS error: {exc}") from exc
            if count == 0:
                self._eof = True
                break
            total += count
        return total

    async def write_chunks(self, chunks: Sequence[bytes | FileRegionLike]) -> None:
        for chunk in chunks:
            if isinstance(chunk, bytes):
                data = chunk
            else:
                if chunk.length == 0:
                    continue
                data = read_region(chunk)
            view = memoryview(data)
            for start in range(0, len(view), _WRITE_STEP):
                piece = view[start:start + _WRITE_STEP]
                while piece:
                    written = self._tls.write(piece)
                    piece = piece[written:]
                await self._flush()

    def send_now(self, chunks: list[bytes]) -> list[bytes | memoryview]:
        """TLS records go through the SSL object and its buffers: always the writer's job."""
        return list(chunks)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, ValueError):
            self._sock.close()
