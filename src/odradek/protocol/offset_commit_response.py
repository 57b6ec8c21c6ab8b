"""The OffsetCommit response (v2-v9), encoded directly to its frame.

OffsetCommit is the hottest group request: a consumer commits every partition it owns,
often after every poll. Building one kio entity per partition and running kio's generic
writer over them cost about as much as the commit itself, so, like the Fetch response
(:mod:`.fetch_response`), this one is written with ``struct`` in one pass. Layout:

* v2: ``topics: [name string, partitions: [partition_index int32, error_code int16]]``;
* v3-v7: ``throttle_time_ms int32`` first;
* v8-v9 (flexible; v9 is v8 for KIP-848 members): compact strings and arrays (unsigned
  varint of length + 1) and an empty tagged-field section after each struct, and a
  response header v1 (one more empty tagged-field section after the correlation id).

``tests/protocol/test_offset_commit_response.py`` checks it byte for byte against kio.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from .framing import size_prefix

__all__ = ["FIRST_FLEXIBLE_VERSION", "TopicErrors", "encode_offset_commit_response",
           "throttle_offset"]

FIRST_FLEXIBLE_VERSION = 8
_FIRST_THROTTLE_VERSION = 3
_NO_TAGS = b"\x00"

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_PARTITION = struct.Struct(">ih")
_PARTITION_TAGGED = struct.Struct(">ihx")  # x: the partition's empty tagged-field section
_SMALL_UVARINTS = tuple(bytes((n,)) for n in range(0x80))

TopicErrors = tuple[str, Sequence[tuple[int, int]]]
"""``(topic, [(partition_index, error_code), ...])`` in request order."""


def _uvarint(value: int) -> bytes:
    if value < 0x80:
        return _SMALL_UVARINTS[value]
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_offset_commit_response(
    version: int, correlation_id: int, topics: Sequence[TopicErrors], throttle_ms: int = 0
) -> bytes:
    """The whole response frame: size prefix, header, body."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    parts: list[bytes] = [_I32.pack(correlation_id)]
    if flexible:
        parts.append(_NO_TAGS)
    if version >= _FIRST_THROTTLE_VERSION:
        parts.append(_I32.pack(throttle_ms))
    parts.append(_uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics)))
    pack = _PARTITION_TAGGED.pack if flexible else _PARTITION.pack
    for name, partitions in topics:
        raw = name.encode()
        if flexible:
            parts.append(_uvarint(len(raw) + 1) + raw + _uvarint(len(partitions) + 1))
        else:
            parts.append(_I16.pack(len(raw)) + raw + _I32.pack(len(partitions)))
        parts += [pack(index, code) for index, code in partitions]
        if flexible:
            parts.append(_NO_TAGS)
    if flexible:
        parts.append(_NO_TAGS)
    body = b"".join(parts)
    return size_prefix(len(body)) + body


def throttle_offset(version: int) -> int | None:
    """Where ``throttle_time_ms`` lies in the frame (v3+: after the size prefix, the
    correlation id and v8's header tags); None before v3, which has no such field."""
    if version < _FIRST_THROTTLE_VERSION:
        return None
    return 9 if version >= FIRST_FLEXIBLE_VERSION else 8
