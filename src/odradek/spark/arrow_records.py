"""Fetched RecordBatch v2 bytes → one Arrow record batch in Spark's Kafka layout (sans-IO).

Why this shape: a Python object per record costs about a microsecond; the columns Spark wants
are vectors. So nothing here touches a record from Python:

* batch headers (one per batch) give base offset, timestamps and timestamp type; compressed
  payloads are decompressed once per batch and all payloads joined into one buffer;
* one compiled pass (:mod:`.record_kernels`) walks every record of every batch and fills
  plain arrays: field positions, lengths, offset and timestamp deltas;
* offsets and timestamps are numpy vector arithmetic on those arrays; keys and values are
  copied out of the buffer by one C++ ``take`` per column (see :func:`_binary`); headers,
  when asked for, get a second compiled pass.

Offsets below ``start`` or at/after ``until`` are dropped (the broker returns whole batches),
as are control batches (transaction markers), exactly as Kafka consumers do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
from .record_kernels import OK, count_headers, parse_headers, parse_records
from .schema import arrow_schema

__all__ = ["decode_chunk"]


@dataclass
class _Batches:
    """The batches holding wanted records: per-batch facts and their joined payloads."""

    base_offset: list[int] = field(default_factory=list)
    base_ts: list[int] = field(default_factory=list)
    max_ts: list[int] = field(default_factory=list)
    log_append: list[int] = field(default_factory=list)
    count: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)   # payload span in ``buffer``
    end: list[int] = field(default_factory=list)
    buffer: bytes = b""


def decode_chunk(raw: bytes, *, topic: str, partition: int, start: int, until: int,
                 include_headers: bool = False, check_crcs: bool = True
                 ) -> pa.RecordBatch | None:
    """The records of ``raw`` (whole batches of one partition) with ``start <= offset <
    until`` as a record batch of :func:`~odradek.spark.schema.arrow_schema`; None if none.

    Raises :class:`CorruptRecord` when a batch or record does not parse.
    """
    batches = _split_batches(raw, topic, partition, start, until, check_crcs)
    if not batches.count:
        return None
    return _columns(batches, topic, partition, start, until, include_headers)


def _split_batches(raw: bytes, topic: str, partition: int, start: int, until: int,
                   check_crcs: bool) -> _Batches:
    view = memoryview(raw)
    end = len(view)
    pos = 0
    payloads: list[bytes | memoryview] = []
    out = _Batches()
    offset = 0
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
        if size < BATCH_HEADER_SIZE:
            raise CorruptRecord(f"{topic}-{partition}: impossible batch length at offset "
                                f"{header.base_offset}")
        if check_crcs and crc32c.crc32c(view[pos + CRC_START:pos + size]) != header.crc:
            raise CorruptRecord(f"{topic}-{partition}: CRC mismatch in the batch at offset "
                                f"{header.base_offset}")
        payload: bytes | memoryview = view[pos + BATCH_HEADER_SIZE:pos + size]
        codec = header.attributes & COMPRESSION_MASK
        if codec:
            payload = decompress(codec, payload)
        payloads.append(payload)
        out.start.append(offset)
        offset += len(payload)
        out.end.append(offset)
        out.base_offset.append(header.base_offset)
        out.base_ts.append(header.base_timestamp)
        out.max_ts.append(header.max_timestamp)
        out.log_append.append(1 if header.attributes & TIMESTAMP_TYPE_MASK else 0)
        out.count.append(header.record_count)
        pos += size
    out.buffer = b"".join(payloads)
    return out


def _columns(batches: _Batches, topic: str, partition: int, start: int, until: int,
             include_headers: bool) -> pa.RecordBatch | None:
    buffer = batches.buffer
    u8 = np.frombuffer(buffer, dtype=np.uint8)
    counts = np.asarray(batches.count, dtype=np.int64)
    total = int(counts.sum())
    ts_delta, offset_delta, key_start, key_len, value_start, value_len, header_pos, \
        record_end = (np.empty(total, dtype=np.int64) for _ in range(8))
    bad = parse_records(u8, np.asarray(batches.start, dtype=np.int64),
                        np.asarray(batches.end, dtype=np.int64), counts, ts_delta,
                        offset_delta, key_start, key_len, value_start, value_len, header_pos,
                        record_end)
    if bad != OK:
        raise CorruptRecord(f"{topic}-{partition}: the records of the batch at offset "
                            f"{batches.base_offset[bad]} do not parse")
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
        header_pos, record_end = header_pos[keep], record_end[keep]
    n = len(offsets)
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
        columns.append(_headers(buffer, u8, header_pos, record_end, topic, partition))
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


def _headers(buffer: bytes, u8: np.ndarray, header_pos: np.ndarray, record_end: np.ndarray,
             topic: str, partition: int) -> pa.Array:
    """``array<struct<key string, value binary>>`` per record; null for a record without
    headers, as Spark's Kafka source returns it (``KafkaRecordToRowConverter``), not ``[]``."""
    counts = np.empty(len(header_pos), dtype=np.int64)
    bad = count_headers(u8, header_pos, record_end, counts)
    list_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    if bad == OK:
        np.cumsum(counts, out=list_offsets[1:])
        total = int(list_offsets[-1])
        key_start, key_len, value_start, value_len = (np.empty(total, dtype=np.int64)
                                                      for _ in range(4))
        bad = parse_headers(u8, header_pos, record_end, key_start, key_len, value_start,
                            value_len)
    if bad != OK:
        raise CorruptRecord(f"{topic}-{partition}: damaged headers in a record")
    type_ = arrow_schema(True).field("headers").type
    keys = _binary(buffer, key_start, key_len)
    try:
        keys = keys.cast(pa.string())
    except pa.ArrowInvalid:  # not UTF-8: decode leniently like Java's String constructor
        keys = pa.array([k.decode(errors="replace") for k in keys.to_pylist()], pa.string())
    values = _binary(buffer, value_start, value_len)
    entries = pa.StructArray.from_arrays([keys, values], fields=list(type_.value_type))
    return pa.ListArray.from_arrays(pa.array(list_offsets.astype(np.int32)), entries,
                                    type=type_, mask=pa.array(counts == 0))
