"""Reading and writing Kafka's hand-laid binary formats, bounds-checked.

Some of Kafka's byte formats are not request or response messages, so kio has no codec for
them: the ``__consumer_offsets`` keys and values, and the consumer protocol's subscription
and assignment blobs carried inside JoinGroup/SyncGroup. They use the protocol's primitives:
big-endian integers; a string is an int16 length and UTF-8 bytes (-1 = null); ``bytes`` an
int32 length; an array an int32 count. In a "flexible" version lengths are compact
(unsigned varint of length + 1, 0 = null) and each struct ends with tagged fields.

:class:`BinaryReader` refuses to read past its buffer and raises the caller's error type
(a ``ValueError`` subclass) naming the position, so a truncated or hostile blob is a clean
error at the caller's boundary.
"""

from __future__ import annotations

import struct

__all__ = ["BinaryReader", "BinaryWriter", "TruncatedData"]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class TruncatedData(ValueError):
    """The data ends before the field being read (or a length in it is impossible)."""


class BinaryReader:
    """Reads fields in order from ``buf``; ``flexible`` switches to compact lengths."""

    __slots__ = ("buf", "error", "flexible", "pos")

    def __init__(
        self, buf: bytes | memoryview, *, flexible: bool = False,
        error: type[ValueError] = TruncatedData,
    ) -> None:
        self.buf = bytes(buf)
        self.pos = 0
        self.flexible = flexible
        self.error = error

    @property
    def more(self) -> bool:
        """Bytes remain (fields a newer version appended, for forward-compatible readers)."""
        return self.pos < len(self.buf)

    def _take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.buf):
            raise self.error(f"truncated at byte {self.pos} (wanted {size} more)")
        chunk = self.buf[self.pos : end]
        self.pos = end
        return chunk

    def int8(self) -> int:
        value = self._take(1)[0]
        return value - 256 if value > 127 else value

    def int16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            byte = self._take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 28:
                raise self.error("unsigned varint longer than 5 bytes")

    def _length(self, classic: int) -> int:
        """A string/bytes/array length: classic int form, or compact (n + 1, 0 = null)."""
        return self.uvarint() - 1 if self.flexible else classic

    def nullable_string(self) -> str | None:
        size = self._length(0 if self.flexible else self.int16())
        if size < 0:
            return None
        try:
            return self._take(size).decode()
        except UnicodeDecodeError as exc:
            raise self.error(f"string at byte {self.pos - size} is not UTF-8: {exc}") from None

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise self.error(f"null where a string is required at byte {self.pos}")
        return value

    def nullable_bytes(self) -> bytes | None:
        size = self._length(0 if self.flexible else self.int32())
        return None if size < 0 else self._take(size)

    def bytes_(self) -> bytes:
        """``bytes`` with null read as empty (fields Kafka never writes as null)."""
        value = self.nullable_bytes()
        return b"" if value is None else value

    def array_length(self) -> int:
        """An array's element count (null = 0); each element is at least one byte, so a
        count larger than what is left is refused before anyone loops over it."""
        count = max(self._length(0 if self.flexible else self.int32()), 0)
        if count > len(self.buf) - self.pos:
            raise self.error(f"array of {count} elements at byte {self.pos} cannot fit")
        return count

    def skip_tagged_fields(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


class BinaryWriter:
    """Appends fields in the classic (non-flexible) encoding; ``bytes(writer.out)`` at the end."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def int8(self, value: int) -> None:
        self.out += value.to_bytes(1, "big", signed=True)

    def int16(self, value: int) -> None:
        self.out += _I16.pack(value)

    def int32(self, value: int) -> None:
        self.out += _I32.pack(value)

    def int64(self, value: int) -> None:
        self.out += _I64.pack(value)

    def string(self, value: str | None) -> None:
        if value is None:
            self.int16(-1)
            return
        data = value.encode()
        if len(data) > 0x7FFF:
            raise ValueError(f"string of {len(data)} bytes does not fit an int16 length")
        self.int16(len(data))
        self.out += data

    def bytes_(self, value: bytes | None) -> None:
        if value is None:
            self.int32(-1)
            return
        self.int32(len(value))
        self.out += value
