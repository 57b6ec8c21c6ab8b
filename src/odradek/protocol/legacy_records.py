"""Legacy message sets (magic 0 and 1, Kafka < 0.11), only ever *converted* to v2.

Old clients produce them; Kafka's broker converts them on append and so do we
(:func:`convert_legacy_message_set`, called by the log). odradek never stores them. Each
message is ``offset int64, size int32, crc uint32 (CRC-32 IEEE of the rest), magic int8,
attributes int8, [timestamp int64 when magic 1], key bytes, value bytes``; a compressed
message wraps a whole inner message set in its value.
"""

from __future__ import annotations

import struct
import zlib

from odradek.protocol import compression as codecs
from odradek.protocol.errors import CorruptRecord, InvalidRecord

from .records import (
    COMPRESSION_MASK,
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    CorruptBatch,
    Record,
    encode_batch,
)

__all__ = ["convert_legacy_message_set", "encode_legacy_message"]


_LEGACY_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_LEGACY_CODECS = {0: 0, 1: 1, 2: 2, 3: 3}


def convert_legacy_message_set(buf: bytes | bytearray | memoryview) -> bytes:
    """Convert a magic 0/1 message set into one RecordBatch v2 (what Kafka's broker does on append
    when clients older than 0.11 produce).

    Compressed wrapper messages are unwrapped; the batch is written with the same codec.
    Magic 0 messages have no timestamp and get -1 (NO_TIMESTAMP). Each message's CRC-32 (IEEE) is
    checked. Offsets are not kept: the log assigns new ones, as it does for v2.
    """
    messages, codec, timestamp_type = _read_legacy(memoryview(buf), depth=0)
    if not messages:
        raise InvalidRecord("empty legacy message set")
    records = [Record(timestamp=ts, key=key, value=value) for ts, key, value in messages]
    return encode_batch(records, compression=codec, timestamp_type=timestamp_type)


def _read_legacy(
    view: memoryview, depth: int
) -> tuple[list[tuple[int, bytes | None, bytes | None]], int, int]:
    out: list[tuple[int, bytes | None, bytes | None]] = []
    codec_seen = 0
    timestamp_type = CREATE_TIME
    pos = 0
    end = len(view)
    while pos < end:
        if end - pos < _LEGACY_ENTRY.size:
            if depth == 0 and out:
                break  # a partial trailing message is dropped, as Kafka's readers do
            raise CorruptBatch("truncated legacy message", pos)
        _offset, size, crc, magic, attributes = _LEGACY_ENTRY.unpack_from(view, pos)
        body_start = pos + 12
        body_end = body_start + size
        if magic not in (0, 1) or size < 14 or body_end > end:
            raise CorruptBatch(f"malformed legacy message (magic {magic}, size {size})", pos)
        if zlib.crc32(view[body_start + 4 : body_end]) != crc:
            raise CorruptBatch("legacy message CRC mismatch", pos)
        cursor = body_start + 6
        timestamp = NO_TIMESTAMP
        if magic == 1:
            (timestamp,) = struct.unpack_from(">q", view, cursor)
            cursor += 8
            if attributes & TIMESTAMP_TYPE_MASK:
                timestamp_type = LOG_APPEND_TIME
        key, cursor = _legacy_bytes(view, cursor, body_end)
        value, cursor = _legacy_bytes(view, cursor, body_end)
        codec = attributes & COMPRESSION_MASK
        if codec:
            if depth > 0 or value is None:
                raise CorruptBatch("nested or empty compressed legacy wrapper", pos)
            if codec not in _LEGACY_CODECS:
                raise CorruptBatch(f"unknown legacy codec {codec}", pos)
            inner, _codec, inner_type = _read_legacy(
                memoryview(codecs.decompress(codec, value)), depth + 1
            )
            if timestamp_type == LOG_APPEND_TIME or inner_type == LOG_APPEND_TIME:
                inner = [(timestamp, k, v) for _t, k, v in inner]
            out.extend(inner)
            codec_seen = codec
        else:
            out.append((timestamp, key, value))
        pos = body_end
    return out, codec_seen, timestamp_type


def _legacy_bytes(view: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecord("truncated legacy message field")
    (length,) = struct.unpack_from(">i", view, pos)
    pos += 4
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptRecord("legacy message field runs past the message")
    return bytes(view[pos : pos + length]), pos + length


def encode_legacy_message(
    key: bytes | None, value: bytes | None, *, magic: int = 1, timestamp: int = 0, offset: int = 0
) -> bytes:
    """One uncompressed magic 0/1 message (for tests and tools that speak to old brokers)."""
    body = bytearray(struct.pack(">bb", magic, 0))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field_value in (key, value):
        if field_value is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(field_value)) + field_value
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)
