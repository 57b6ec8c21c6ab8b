"""Fetched RecordBatch v2 bytes → one Arrow record batch in Spark's Kafka layout (sans-IO).

Why this shape: a Python object per record costs about a microsecond; the columns Spark wants
are vectors. So the only per-record Python work is the one step that is inherently sequential
— following the records' length prefixes to find where each record starts — and everything
else is numpy over all records of a chunk at once:

* batch headers (one per batch, not per record) give base offset, timestamps, timestamp type;
  compressed payloads are decompressed once per batch;
* from the record starts, each field's varint is decoded for every record in one vectorized
  step (the few multi-byte varints take a second pass over just those records);
* keys and values are copied out of the payload buffer by one C++ ``take`` per column (see
  :func:`_binary`) — no Python ``bytes`` per record;
* headers, when asked for, are decoded in rounds: round *k* decodes the *k*-th header of every
  record that has one.

Offsets below ``start`` or at/after ``until`` are dropped (the broker returns whole batches),
as are control batches (transaction markers), exactly as Kafka consumers do.
"""

from __future__ import annotations

from array import array

import crc32c
import numpy as np
import pyarrow as pa

from ._internals import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    CorruptRecord,
    decompress,
    parse_batch_header,
)
from .schema import arrow_schema

__all__ = ["decode_chunk"]

#: Padding after the payloads, so that a corrupt varint cannot index past the buffer.
_PAD = bytes(16)


class _Batches:
    """Per-batch facts of the batches that hold wanted records, and the payload buffer."""

    __slots__ = ("base_offset", "base_ts", "buffer", "count", "first", "log_append", "max_ts",
                 "starts")

    def __init__(self) -> None:
        self.base_offset: list[int] = []
        self.base_ts: list[int] = []
        self.max_ts: list[int] = []
        self.log_append: list[int] = []
        self.count: list[int] = []
        self.first: list[int] = []        # index of the batch's first record in ``starts``
        self.starts = array("q")          # body start (attributes byte) of every record
        self.buffer = b""


def decode_chunk(raw: bytes, *, topic: str, partition: int, start: int, until: int,
                 include_headers: bool = False, check_crcs: bool = True
                 ) -> pa.RecordBatch | None:
    """The records of ``raw`` (whole batches of one partition) with ``start <= offset <
    until`` as a record batch of :func:`~odradek.spark.schema.arrow_schema`; None if none.

    Raises :class:`CorruptRecord` when a batch or record does not parse.
    """
    try:
        batches = _split_batches(raw, topic, partition, start, until, check_crcs)
        if not batches.starts:
            return None
        return _columns(batches, topic, partition, start, until, include_headers)
    except IndexError:
        raise CorruptRecord(f"{topic}-{partition}: a record runs past its batch") from None


def _split_batches(raw: bytes, topic: str, partition: int, start: int, until: int,
                   check_crcs: bool) -> _Batches:
    view = memoryview(raw)
    end = len(view)
    pos = 0
    spans: list[tuple[bytes | memoryview, int]] = []   # payload, record count
    out = _Batches()
    while end - pos >= BATCH_HEADER_SIZE:
        header = parse_batch_header(view, pos)
        size = header.length + LOG_OVERHEAD
        if pos + size > end:
            break  # the broker cut the last batch at max_bytes
        if header.magic != 2:
            raise CorruptRecord(f"{topic}-{partition}: unsupported magic {header.magic} at "
                                f"offset {header.base_offset}")
        if header.base_offset >= until:
            break
        last = header.base_offset + header.last_offset_delta
        if last < start or header.attributes & CONTROL_MASK or header.record_count <= 0:
            pos += size
            continue
        if check_crcs and crc32c.crc32c(view[pos + CRC_START:pos + size]) != header.crc:
            raise CorruptRecord(f"{topic}-{partition}: CRC mismatch in the batch at offset "
                                f"{header.base_offset}")
        payload: bytes | memoryview = view[pos + BATCH_HEADER_SIZE:pos + size]
        codec = header.attributes & COMPRESSION_MASK
        if codec:
            payload = decompress(codec, payload)
        spans.append((payload, header.record_count))
        out.base_offset.append(header.base_offset)
        out.base_ts.append(header.base_timestamp)
        out.max_ts.append(header.max_timestamp)
        out.log_append.append(1 if header.attributes & TIMESTAMP_TYPE_MASK else 0)
        out.count.append(header.record_count)
        pos += size
    if not spans:
        return out
    # One buffer holding every payload back to back, padded so that a 12-byte read at any
    # record start stays inside it.
    buffer = b"".join([*(p for p, _ in spans), _PAD])
    starts = out.starts
    offset = 0
    for payload, count in spans:
        out.first.append(len(starts))
        length = len(payload)
        stop = _record_starts(buffer, offset, count, starts)
        if stop != offset + length:
            raise CorruptRecord(f"{topic}-{partition}: the records of the batch at offset "
                                f"{out.base_offset[len(out.first) - 1]} do not fill it "
                                f"({stop - offset} of {length} bytes)")
        offset += length
    out.buffer = buffer
    return out


def _record_starts(buf: bytes, pos: int, count: int, starts: array) -> int:
    """Follow ``count`` length prefixes from ``pos``, appending where each record's body
    starts; returns the position after the last record. The sequential part of decoding."""
    append = starts.append
    for _ in range(count):
        b = buf[pos]
        if b < 0x80:
            pos += 1
            append(pos)
            pos += (b >> 1) ^ -(b & 1)
            continue
        b2 = buf[pos + 1]
        if b2 < 0x80:
            value = (b & 0x7F) | (b2 << 7)
            pos += 2
            append(pos)
            pos += (value >> 1) ^ -(value & 1)
            continue
        value = b & 0x7F
        shift = 7
        pos += 1
        while True:
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > 28:
                raise CorruptRecord("record length varint longer than 5 bytes")
        append(pos)
        pos += (value >> 1) ^ -(value & 1)
    return pos


def _varints(u8: np.ndarray, pos: np.ndarray, max_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at every position of ``pos``: (values, positions after them).

    Whole-array passes with masks (one per byte of the longest varint) rather than index
    subsets: most fields are one or two bytes long for every record of a chunk.
    """
    b = u8[pos]
    value = (b & 0x7F).astype(np.int64)
    more = b >= 0x80
    after = pos + 1
    shift = 7
    while more.any():
        if shift >= 7 * max_bytes:
            raise CorruptRecord(f"varint longer than {max_bytes} bytes")
        b = u8[after]
        value |= np.where(more, (b & 0x7F).astype(np.int64) << shift, 0)
        after += more
        more &= b >= 0x80
        shift += 7
    return (value >> 1) ^ -(value & 1), after


def _columns(batches: _Batches, topic: str, partition: int, start: int, until: int,
             include_headers: bool) -> pa.RecordBatch | None:
    buffer = batches.buffer
    u8 = np.frombuffer(buffer, dtype=np.uint8)
    counts = np.asarray(batches.count, dtype=np.int64)
    body = np.frombuffer(batches.starts, dtype=np.int64)
    # attributes (1 byte), timestampDelta varlong, offsetDelta varint, key, value, headers
    ts_delta, pos = _varints(u8, body + 1, 10)
    offset_delta, pos = _varints(u8, pos, 5)
    key_len, pos = _varints(u8, pos, 5)
    key_start = pos
    value_len, pos = _varints(u8, pos + np.maximum(key_len, 0), 5)
    value_start = pos
    header_pos = pos + np.maximum(value_len, 0)

    offsets = np.repeat(np.asarray(batches.base_offset, dtype=np.int64), counts) + offset_delta
    log_append = np.repeat(np.asarray(batches.log_append, dtype=np.int32), counts)
    timestamps = np.where(log_append == 1,
                          np.repeat(np.asarray(batches.max_ts, dtype=np.int64), counts),
                          np.repeat(np.asarray(batches.base_ts, dtype=np.int64), counts)
                          + ts_delta)
    wanted = (offsets >= start) & (offsets < until)
    if not wanted.all():
        keep = np.flatnonzero(wanted)
        if not keep.size:
            return None
        offsets, log_append, timestamps = offsets[keep], log_append[keep], timestamps[keep]
        key_start, key_len = key_start[keep], key_len[keep]
        value_start, value_len = value_start[keep], value_len[keep]
        header_pos = header_pos[keep]
    n = len(offsets)
    if int(header_pos.max()) >= len(buffer) - len(_PAD):
        raise CorruptRecord(f"{topic}-{partition}: a record runs past its batch")

    columns = [
        _binary(buffer, key_start, key_len),
        _binary(buffer, value_start, value_len),
        _repeated_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(offsets),
        pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), n,
                              [None, pa.py_buffer(timestamps * 1000)]),
        pa.array(log_append),
    ]
    if include_headers:
        columns.append(_headers(buffer, u8, header_pos))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


def _binary(buffer: bytes, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """A ``binary`` array of ``buffer[start:start + length]`` per row (length -1 = null).

    Rows lie in ``buffer`` in order, each after the previous one, so offsets alternating
    start, end, start, end, ... are non-decreasing: a ``binary`` array over ``buffer`` whose
    even elements are the rows and odd elements the bytes between them, built without
    copying. One C++ ``take`` of the even elements copies the rows out.
    """
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    valid = lengths >= 0
    bounds = np.empty(2 * n, dtype=np.int32)
    bounds[0::2] = starts
    bounds[1::2] = starts + np.maximum(lengths, 0)
    nulls = n - int(np.count_nonzero(valid))
    validity = None
    if nulls:
        every = np.zeros(2 * n - 1, dtype=bool)
        every[0::2] = valid
        validity = pa.py_buffer(np.packbits(every, bitorder="little"))
    spread = pa.Array.from_buffers(pa.binary(), 2 * n - 1,
                                   [validity, pa.py_buffer(bounds), pa.py_buffer(buffer)])
    return spread.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int32)))


def _repeated_string(text: str, n: int) -> pa.Array:
    data = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(data)
    return pa.Array.from_buffers(pa.string(), n,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def _headers(buffer: bytes, u8: np.ndarray, pos: np.ndarray) -> pa.Array:
    """``array<struct<key string, value binary>>`` per record, decoded in rounds."""
    count, pos = _varints(u8, pos, 5)
    if (count < 0).any():
        raise CorruptRecord("negative header count")
    list_offsets = np.zeros(len(count) + 1, dtype=np.int64)
    np.cumsum(count, out=list_offsets[1:])
    total = int(list_offsets[-1])
    key_start = np.zeros(total, dtype=np.int64)
    key_len = np.zeros(total, dtype=np.int64)
    value_start = np.zeros(total, dtype=np.int64)
    value_len = np.zeros(total, dtype=np.int64)
    active = np.flatnonzero(count > 0)
    pos = pos[active]
    k = 0
    while active.size:
        klen, pos = _varints(u8, pos, 5)
        if (klen < 0).any():
            raise CorruptRecord("null header key")
        kstart = pos
        vlen, pos = _varints(u8, pos + klen, 5)
        vstart = pos
        pos = pos + np.maximum(vlen, 0)
        slot = list_offsets[active] + k
        key_start[slot], key_len[slot] = kstart, klen
        value_start[slot], value_len[slot] = vstart, vlen
        k += 1
        more = count[active] > k
        active, pos = active[more], pos[more]
    if total and int(max(key_start.max() + key_len.max(), value_start.max())) >= len(buffer):
        raise CorruptRecord("a header runs past its record")
    type_ = arrow_schema(True).field("headers").type
    struct_type = type_.value_type
    keys = _binary(buffer, key_start, key_len)
    try:
        keys = keys.cast(pa.string())
    except pa.ArrowInvalid:  # not UTF-8: decode leniently like Java's String constructor
        keys = pa.array([k.decode(errors="replace") for k in keys.to_pylist()], pa.string())
    values = _binary(buffer, value_start, value_len)
    entries = pa.StructArray.from_arrays([keys, values], fields=list(struct_type))
    return pa.ListArray.from_arrays(pa.array(list_offsets.astype(np.int32)), entries,
                                    type=type_)
