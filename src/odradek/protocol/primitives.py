"""The few wire primitives odradek encodes by hand (headers, Fetch responses).

Everything else goes through kio's generated codecs; these exist for the paths where we
must control the byte layout (zero-copy Fetch) or where speed matters per request.
"""

from __future__ import annotations

import struct

__all__ = [
    "INT16",
    "INT32",
    "INT64",
    "array_length",
    "read_tagged_fields_end",
    "read_unsigned_varint",
    "string_field",
    "unsigned_varint",
]

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")


def string_field(value: str, flexible: bool) -> bytes:
    """A non-null string field: int16 length + UTF-8, or compact (varint length + 1)."""
    raw = value.encode("utf-8")
    return (unsigned_varint(len(raw) + 1) if flexible else INT16.pack(len(raw))) + raw


def array_length(count: int | None, flexible: bool) -> bytes:
    """An array's length prefix (None: a null array): int32, or compact (varint count + 1)."""
    if flexible:
        return unsigned_varint(0 if count is None else count + 1)
    return INT32.pack(-1 if count is None else count)


def unsigned_varint(value: int) -> bytes:
    """Encode a non-negative int as Kafka's unsigned varint (protobuf base-128)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_unsigned_varint(buffer: memoryview | bytes, offset: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``offset``: returns (value, next offset).

    :raises ValueError: the buffer ends inside the varint, or it is longer than 5 bytes.
    """
    value = 0
    shift = 0
    for index in range(offset, min(offset + 5, len(buffer))):
        byte = buffer[index]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, index + 1
        shift += 7
    raise ValueError("truncated or over-long unsigned varint")


def read_tagged_fields_end(buffer: memoryview | bytes, offset: int) -> int:
    """Skip a tagged-field section (count, then tag/size/bytes each); return its end."""
    count, offset = read_unsigned_varint(buffer, offset)
    for _ in range(count):
        _tag, offset = read_unsigned_varint(buffer, offset)
        size, offset = read_unsigned_varint(buffer, offset)
        offset += size
        if offset > len(buffer):
            raise ValueError("tagged field runs past the end of the buffer")
    return offset
