"""ResponseStream: bytes and sendfile regions arrive in order, whole, under backpressure, on
the loop's own transport (asyncio's and uvloop's)."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvloop

from odradek.broker import response_stream
from odradek.broker.response_stream import COPY_AT_MOST, ResponseStream

T = TypeVar("T")
LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@dataclass(frozen=True)
class Region:
    fd: int
    position: int
    length: int

    def fileno(self) -> int:
        return self.fd


class _Writer(asyncio.Protocol):
    """The transport's owner: forwards flow control to the stream, as the connection does."""

    stream: ResponseStream[int] | None = None

    def pause_writing(self) -> None:
        assert self.stream is not None
        self.stream.pause()

    def resume_writing(self) -> None:
        assert self.stream is not None
        self.stream.resume()


def run_on(loop_name: str, scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    loop = LOOPS[loop_name]()
    try:
        return loop.run_until_complete(asyncio.wait_for(scenario(), 30))
    finally:
        loop.close()


async def stream_over(sock: socket.socket, *, sendfile: bool,
                      sent: list[int]) -> tuple[asyncio.Transport, ResponseStream[int]]:
    writer = _Writer()
    transport, _ = await asyncio.get_running_loop().connect_accepted_socket(lambda: writer, sock)
    fd = transport.get_extra_info("socket").fileno() if sendfile else None
    writer.stream = ResponseStream(transport, fd, sent.append)
    return transport, writer.stream


def interleaved(fd: int, data: bytes) -> tuple[list[list[Any]], bytes]:
    frames: list[list[Any]] = []
    expected = bytearray()
    for index, (position, length) in enumerate([(0, 1000), (5000, 1_500_000), (10, 0),
                                                (2_000_000, 1_000_000)]):
        header = f"<header {index}>".encode() * 50
        frames.append([header, Region(fd, position, length), b"<trailer>"])
        expected += header + data[position : position + length] + b"<trailer>"
    return frames, bytes(expected)


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
@pytest.mark.parametrize("sendfile", [True, False], ids=["sendfile", "copying"])
def test_bytes_and_regions_arrive_in_order(loop_name: str, sendfile: bool,
                                           tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024)
    path = tmp_path / "segment.log"
    path.write_bytes(data)

    async def scenario() -> tuple[bytes, bytes, list[int]]:
        fd = os.open(path, os.O_RDONLY)
        left, right = socket.socketpair()
        # tiny buffers force many EAGAINs: every wait-for-writability path runs
        left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        right.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        right.setblocking(False)
        sent: list[int] = []
        try:
            transport, stream = await stream_over(left, sendfile=sendfile, sent=sent)
            frames, expected = interleaved(fd, data)
            stream.send([(frame, index) for index, frame in enumerate(frames)])
            received = bytearray()
            loop = asyncio.get_running_loop()
            while len(received) < len(expected):
                received.extend(await loop.sock_recv(right, 65536))
                await asyncio.sleep(0)  # let the stream hit a full buffer now and then
            assert stream.idle
            transport.close()
            return bytes(received), expected, sent
        finally:
            os.close(fd)
            right.close()

    received, expected, sent = run_on(loop_name, scenario)
    assert len(received) == len(expected)
    assert received == expected
    assert sent == [0, 1, 2, 3], "each frame is reported sent once, in order"


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
def test_a_small_region_leaves_with_the_other_bytes_in_one_write(
    loop_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two responses, one with a small batch: one segment, one wake-up of the peer."""
    path = tmp_path / "segment.log"
    data = os.urandom(COPY_AT_MOST)
    path.write_bytes(data)

    def no_sendfile(*args: object) -> int:
        raise AssertionError("a small region must not take a sendfile of its own")

    monkeypatch.setattr(response_stream.os, "sendfile", no_sendfile)

    async def scenario() -> bytes:
        fd = os.open(path, os.O_RDONLY)
        left, right = socket.socketpair()
        try:
            transport, stream = await stream_over(left, sendfile=True, sent=[])
            stream.send([([b"<header>", Region(fd, 0, len(data)), b"<trailer>"], 0),
                         ([b"<second>"], 1)])
            right.setblocking(False)
            received = right.recv(4 * COPY_AT_MOST)  # one write: everything in one read
            transport.close()
            return received
        finally:
            os.close(fd)
            right.close()

    assert run_on(loop_name, scenario) == b"<header>" + data + b"<trailer><second>"


@pytest.mark.parametrize("sendfile", [True, False], ids=["sendfile", "copying"])
def test_region_past_end_of_file_is_an_error_not_a_short_frame(sendfile: bool,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "short.log"
    path.write_bytes(b"abc" * 10_000)

    async def scenario() -> None:
        fd = os.open(path, os.O_RDONLY)
        left, right = socket.socketpair()
        try:
            transport, stream = await stream_over(left, sendfile=sendfile, sent=[])
            with pytest.raises(OSError, match="file ended"):
                stream.send([([Region(fd, 0, 100_000)], 0)])
            transport.abort()
        finally:
            os.close(fd)
            right.close()

    run_on("asyncio", scenario)
