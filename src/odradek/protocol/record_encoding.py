"""The one encoder of RecordBatch v2 *records* (the part after the 61-byte header).

Kept apart from :mod:`.records` because it is the producer's hot path: every record a client
sends and every batch the broker or cleaner writes goes through :func:`append_record`, so it
avoids per-record objects and takes small varints (lengths and deltas under 16384, nearly all
of them) from a precomputed table instead of computing them.

Record layout (Kafka's ``DefaultRecord``): ``length varint, attributes int8 (0),
timestampDelta varlong, offsetDelta varint, keyLength varint (-1 = null), key,
valueLength varint (-1 = null), value, headerCount varint, headers``; each header is
``keyLength varint, utf-8 key, valueLength varint (-1 = null), value``. Varints are zig-zag,
base-128, least significant group first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["SMALL_VARINTS", "EncodableRecord", "append_record", "encode_records", "varint"]


class EncodableRecord(Protocol):
    """What the encoder reads of a record (:class:`odradek.protocol.records.Record` is one);
    the offset delta is its index in the batch."""

    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Sequence[tuple[str, bytes | None]]: ...

_TABLE_SIZE = 1 << 14


def _slow_varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


#: Zig-zag varints of 0..16383.
_SMALL: tuple[bytes, ...] = tuple(_slow_varint(n) for n in range(_TABLE_SIZE))
#: Public name for the table, for encoders that inline the common case (the client's batch
#: builder).
SMALL_VARINTS = _SMALL
_NULL = b"\x01"  # zig-zag varint of -1: a null key, value or header value
_NO_HEADERS = b"\x00"


def varint(value: int) -> bytes:
    """Kafka's zig-zag varint of a signed 64-bit int."""
    if 0 <= value < _TABLE_SIZE:
        return _SMALL[value]
    return _slow_varint(value)


def _headers_bytes(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    out = bytearray(varint(len(headers)))
    for name, value in headers:
        raw = name.encode()
        out += varint(len(raw))
        out += raw
        if value is None:
            out += _NULL
        else:
            out += varint(len(value))
            out += value
    return bytes(out)


def append_record(out: bytearray, timestamp_delta: int, offset_delta: int,
                  key: bytes | None, value: bytes | None,
                  headers: Sequence[tuple[str, bytes | None]] | None) -> None:
    """Append one encoded record to ``out``."""
    small = _SMALL
    body = b"".join((
        b"\x00",
        small[timestamp_delta] if 0 <= timestamp_delta < _TABLE_SIZE
        else _slow_varint(timestamp_delta),
        small[offset_delta] if 0 <= offset_delta < _TABLE_SIZE else _slow_varint(offset_delta),
        _NULL if key is None else (varint(len(key)) + key),
        _NULL if value is None else (varint(len(value)) + value),
        _headers_bytes(headers) if headers else _NO_HEADERS,
    ))
    size = len(body)
    out += small[size] if size < _TABLE_SIZE else _slow_varint(size)
    out += body


def encode_records(records: Sequence[EncodableRecord], base_timestamp: int
                   ) -> tuple[bytes, int]:
    """The records part of a batch for ``records`` at offset deltas 0..n-1, and their
    largest timestamp (-1 for none).

    The broker's own writes (offset commits, group metadata, markers) are small records
    with a key and a value and no headers: those are encoded inline here, one join per
    record and one for the whole body, with no call per record; anything else (a null key
    or value, headers, a field of 16 KiB or more, a timestamp before the base) goes
    through :func:`append_record`, byte for byte the same encoding.
    """
    small = _SMALL
    parts: list[bytes | bytearray] = []
    max_ts = -1
    for index, record in enumerate(records):
        key = record.key
        value = record.value
        timestamp = record.timestamp
        delta = timestamp - base_timestamp
        if (record.headers or key is None or value is None or not 0 <= delta < _TABLE_SIZE
                or index >= _TABLE_SIZE or len(key) >= _TABLE_SIZE
                or len(value) >= _TABLE_SIZE):
            out = bytearray()
            append_record(out, delta, index, key, value, record.headers)
            parts.append(out)
        else:
            body = b"".join((b"\x00", small[delta], small[index], small[len(key)], key,
                             small[len(value)], value, _NO_HEADERS))
            size = len(body)
            parts.append(small[size] if size < _TABLE_SIZE else _slow_varint(size))
            parts.append(body)
        if timestamp > max_ts:
            max_ts = timestamp
    return b"".join(parts), max_ts
