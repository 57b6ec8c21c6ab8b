"""SocketChannel: bytes and sendfile regions arrive in order, whole, under backpressure."""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

from odradek.broker import socket_channel
from odradek.broker.socket_channel import COPY_AT_MOST, CopyingChannel, SocketChannel


@dataclass(frozen=True)
class Region:
    fd: int
    position: int
    length: int

    def fileno(self) -> int:
        return self.fd


async def write_and_collect(
    channel_type: type[SocketChannel], chunks_for: object, tmp_path: Path
) -> tuple[bytes, bytes]:
    data = os.urandom(3 * 1024 * 1024)
    path = tmp_path / "segment.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    left, right = socket.socketpair()
    # tiny buffers force many EAGAINs: every wait-for-writability path runs
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    right.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    right.setblocking(False)
    loop = asyncio.get_running_loop()
    try:
        channel = channel_type(left)
        chunks, expected = chunks_for(fd, data)  # type: ignore[operator]
        received = bytearray()

        async def reader() -> None:
            while len(received) < len(expected):
                received.extend(await loop.sock_recv(right, 65536))
                await asyncio.sleep(0)  # let the writer hit a full buffer now and then

        await asyncio.wait_for(asyncio.gather(channel.write_chunks(chunks), reader()), 30)
        channel.close()
        return bytes(received), expected
    finally:
        os.close(fd)
        right.close()


def interleaved(fd: int, data: bytes) -> tuple[list[object], bytes]:
    chunks: list[object] = []
    expected = bytearray()
    for index, (position, length) in enumerate([(0, 1000), (5000, 1_500_000), (10, 0),
                                                (2_000_000, 1_000_000)]):
        header = f"<header {index}>".encode() * 50
        chunks.append(header)
        expected += header
        chunks.append(Region(fd, position, length))
        expected += data[position : position + length]
    chunks.append(b"<trailer>")
    expected += b"<trailer>"
    return chunks, bytes(expected)


@pytest.mark.parametrize("channel_type", [SocketChannel, CopyingChannel])
def test_bytes_and_regions_arrive_in_order(channel_type: type[SocketChannel],
                                           tmp_path: Path) -> None:
    received, expected = asyncio.run(write_and_collect(channel_type, interleaved, tmp_path))
    assert len(received) == len(expected)
    assert received == expected


def test_a_small_region_leaves_with_the_other_bytes_in_one_send(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A response with one small batch is one segment: one wake-up of the peer, not two."""
    path = tmp_path / "segment.log"
    data = os.urandom(COPY_AT_MOST)
    path.write_bytes(data)

    def no_sendfile(*args: object) -> int:
        raise AssertionError("a small region must not take a sendfile of its own")

    monkeypatch.setattr(socket_channel.os, "sendfile", no_sendfile)

    async def scenario() -> bytes:
        fd = os.open(path, os.O_RDONLY)
        left, right = socket.socketpair()
        try:
            await SocketChannel(left).write_chunks([b"<header>", Region(fd, 0, len(data)),
                                                    b"<trailer>"])
            right.setblocking(False)
            return right.recv(4 * COPY_AT_MOST)  # one send: everything in one read
        finally:
            os.close(fd)
            left.close()
            right.close()

    assert asyncio.run(scenario()) == b"<header>" + data + b"<trailer>"


def test_region_past_end_of_file_is_an_error_not_a_short_frame(tmp_path: Path) -> None:
    path = tmp_path / "short.log"
    path.write_bytes(b"abc")

    async def scenario() -> None:
        fd = os.open(path, os.O_RDONLY)
        left, right = socket.socketpair()
        try:
            with pytest.raises(OSError, match="file ended"):
                await SocketChannel(left).write_chunks([Region(fd, 0, 10)])
        finally:
            os.close(fd)
            left.close()
            right.close()

    asyncio.run(scenario())


def test_send_now_returns_what_the_socket_did_not_take() -> None:
    async def scenario() -> None:
        left, right = socket.socketpair()
        left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        right.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        right.setblocking(False)
        try:
            channel = SocketChannel(left)
            chunks = [os.urandom(700) for _ in range(100)]
            rest = channel.send_now(chunks)
            assert rest, "70 KB cannot fit 4 KB socket buffers in one send"
            received = bytearray()
            while True:
                try:
                    data = right.recv(65536)
                except BlockingIOError:
                    break
                received.extend(data)
            assert bytes(received) + b"".join(bytes(c) for c in rest) == b"".join(chunks)
            assert channel.send_now([]) == []
            channel.close()
        finally:
            right.close()

    asyncio.run(scenario())
