"""Size-prefixed frames: the outermost layer of the Kafka wire protocol.

Every request and response is ``int32 size`` followed by ``size`` bytes. A
:class:`FrameReader` is fed whatever the socket delivered (``receive_data``) and hands
back complete frames (``next_frame``); it never touches a socket (sans-IO, like h11).

A length prefix that is negative or larger than ``socket.request.max.bytes`` means the peer
is broken or hostile: Kafka closes such connections, and so do we, by raising
:class:`FrameSizeInvalid` before buffering any of the body.
"""

from __future__ import annotations

from .errors import FrameSizeInvalid

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "FrameReader", "size_prefix"]

DEFAULT_MAX_FRAME_BYTES = 104_857_600  # Kafka's socket.request.max.bytes default (100 MiB)

# Compact the buffer only once this much consumed data sits in front of it: deleting the
# head of a bytearray is a memmove, so doing it per frame would be quadratic for many
# small pipelined requests.
_COMPACT_THRESHOLD = 1 << 16


def size_prefix(size: int) -> bytes:
    """The 4-byte big-endian length prefix of a frame of ``size`` bytes."""
    return size.to_bytes(4, "big", signed=True)


class FrameReader:
    """Reassembles length-prefixed frames from a byte stream.

    Frames are returned as ``memoryview`` over a private ``bytes`` copy, so they stay valid
    however much more data arrives (a view into the growing buffer would pin it).
    """

    __slots__ = ("_buffer", "_max_frame_bytes", "_position", "limit_name")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._position = 0
        self._max_frame_bytes = max_frame_bytes
        self.limit_name = "socket.request.max.bytes"  # what the error message blames

    def limit(self, max_frame_bytes: int, name: str) -> None:
        """A new largest frame (e.g. the smaller one before SASL authentication)."""
        self._max_frame_bytes = max_frame_bytes
        self.limit_name = name

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as frames."""
        return len(self._buffer) - self._position

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes read from the peer."""
        if self._position >= _COMPACT_THRESHOLD or self._position == len(self._buffer):
            del self._buffer[: self._position]
            self._position = 0
        self._buffer += data

    def next_frame(self) -> memoryview | None:
        """The next complete frame (without its size prefix), or None if more data is needed.

        :raises FrameSizeInvalid: the next length prefix is negative or too large.
        """
        start = self._position
        available = len(self._buffer) - start
        if available < 4:
            return None
        size = int.from_bytes(self._buffer[start : start + 4], "big", signed=True)
        if size < 0 or size > self._max_frame_bytes:
            raise FrameSizeInvalid(
                f"frame size {size} outside 0..{self._max_frame_bytes} ({self.limit_name})"
            )
        if available - 4 < size:
            return None
        end = start + 4 + size
        with memoryview(self._buffer) as view:
            frame = view[start + 4 : end].tobytes()
        self._position = end
        return memoryview(frame)
