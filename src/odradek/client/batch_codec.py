"""The client's hot paths for RecordBatch v2: append records to an open batch, close it with
one compress + one CRC, and decode fetched batches straight into consumer records.

The byte layout and the codecs are the protocol package's (:mod:`odradek.protocol.records`,
:mod:`odradek.protocol.compression`); this module only avoids building an intermediate
``Record`` object per record on both paths. A producer appends each record's varint encoding
to one ``bytearray`` as it arrives (small varints come from a precomputed table), so closing a
batch is a single compress of that buffer and a 61-byte header; a consumer walks a decompressed
payload once, creating only the objects the application receives.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import cramjam
import crc32c as _crc32c

from odradek.protocol import compression as codecs
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.records import (
    BATCH_HEADER_SIZE,
    CONTROL_MASK,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    iter_batch_headers,
)

__all__ = ["ConsumerRecord", "RecordsBuilder", "decode_fetched", "varint"]

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC = struct.Struct(">I")
_CRC_START = 21

_TABLE_SIZE = 1 << 14
# zig-zag varints of 0..16383 (the overwhelmingly common lengths and deltas).
_SMALL: list[bytes] = []
for _n in range(_TABLE_SIZE):
    _z = _n << 1
    _out = bytearray()
    while _z > 0x7F:
        _out.append((_z & 0x7F) | 0x80)
        _z >>= 7
    _out.append(_z)
    _SMALL.append(bytes(_out))
_NULL = b"\x01"  # zig-zag varint of -1: a null key/value


def varint(value: int) -> bytes:
    """Kafka's zig-zag varint of a signed 64-bit int."""
    if 0 <= value < _TABLE_SIZE:
        return _SMALL[value]
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


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


class RecordsBuilder:
    """The records of one open batch, encoded as they are appended."""

    __slots__ = ("base_timestamp", "buffer", "count", "max_timestamp")

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.count = 0
        self.base_timestamp = -1
        self.max_timestamp = -1

    def append(self, timestamp: int, key: bytes | None, value: bytes | None,
               headers: Sequence[tuple[str, bytes | None]] | None) -> int:
        """Encode one record; returns its offset delta within the batch."""
        small = _SMALL
        count = self.count
        if count == 0:
            self.base_timestamp = timestamp
        delta = timestamp - self.base_timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        body = b"".join((
            b"\x00",
            small[delta] if 0 <= delta < _TABLE_SIZE else varint(delta),
            small[count] if count < _TABLE_SIZE else varint(count),
            _NULL if key is None else (varint(len(key)) + key),
            _NULL if value is None else (varint(len(value)) + value),
            _headers_bytes(headers) if headers else b"\x00",
        ))
        size = len(body)
        buffer = self.buffer
        buffer += small[size] if size < _TABLE_SIZE else varint(size)
        buffer += body
        self.count = count + 1
        return count

    @property
    def size_in_bytes(self) -> int:
        return len(self.buffer) + BATCH_HEADER_SIZE

    def build(self, *, compression: int = 0, producer_id: int = -1, producer_epoch: int = -1,
              base_sequence: int = -1) -> bytes:
        """Close the batch: compress once, write the header, checksum once."""
        body = self.buffer
        payload = compress(compression, body) if compression else body
        out = bytearray(BATCH_HEADER_SIZE)
        out += payload
        _HEADER.pack_into(out, 0, 0, len(out) - LOG_OVERHEAD, -1, 2, 0, compression & 0x07,
                          max(self.count - 1, 0), self.base_timestamp, self.max_timestamp,
                          producer_id, producer_epoch, base_sequence, self.count)
        _CRC.pack_into(out, 17, _crc32c.crc32c(memoryview(out)[_CRC_START:]))
        return bytes(out)


def compress(codec: int, data: bytes | bytearray) -> bytes:
    """Compress a batch's records for the wire.

    LZ4 is special: the Java broker's reader (``KafkaLZ4BlockInputStream``) rejects frames
    with *linked* blocks ("Dependent block stream is unsupported"), which is what
    ``cramjam.lz4.compress`` writes; Kafka's writer uses independent blocks, so do we.
    """
    if codec == codecs.LZ4:
        compressor = cramjam.lz4.Compressor(block_linked=False, content_checksum=False)
        compressor.compress(bytes(data))
        return bytes(compressor.finish())
    return codecs.compress(codec, data)


class ConsumerRecord:
    """One record as the consumer hands it to the application."""

    __slots__ = ("headers", "key", "leader_epoch", "offset", "partition", "timestamp",
                 "timestamp_type", "topic", "value")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int,
                 timestamp_type: int, key: bytes | None, value: bytes | None,
                 headers: list[tuple[str, bytes | None]], leader_epoch: int = -1) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers
        self.leader_epoch = leader_epoch

    def __repr__(self) -> str:
        return (f"ConsumerRecord(topic={self.topic!r}, partition={self.partition}, "
                f"offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConsumerRecord):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    __hash__ = None  # type: ignore[assignment]


def decode_fetched(records: bytes | memoryview, topic: str, partition: int,
                   fetch_offset: int, out: list[ConsumerRecord], *,
                   check_crcs: bool = True) -> int:
    """Decode every complete batch in a fetched ``records`` blob into ``out``.

    Records below ``fetch_offset`` (the broker returns whole batches, so the first one may
    start earlier) and control batches (transaction markers) are skipped; a partial batch at
    the end (the broker cut the response at ``max_bytes``) is ignored. Returns the offset after
    the last batch seen, which may be past the last record returned when a batch was skipped
    entirely, so the next fetch does not ask for it again.
    """
    view = memoryview(records)
    next_offset = fetch_offset
    pos = 0
    end = len(view)
    unpack = _HEADER.unpack_from
    while end - pos >= BATCH_HEADER_SIZE:
        header = BatchHeader._make(unpack(view, pos))
        size = header.length + LOG_OVERHEAD
        if pos + size > end:
            break  # truncated by max_bytes
        if header.magic != 2:
            raise CorruptRecord(f"{topic}-{partition}: unsupported magic {header.magic} "
                                f"at offset {header.base_offset}")
        last = header.base_offset + header.last_offset_delta
        if last < fetch_offset or header.attributes & CONTROL_MASK:
            pos += size
            next_offset = max(next_offset, last + 1)
            continue
        if check_crcs and _crc32c.crc32c(view[pos + _CRC_START:pos + size]) != header.crc:
            raise CorruptRecord(f"{topic}-{partition}: CRC mismatch in batch at offset "
                                f"{header.base_offset}")
        payload: bytes | memoryview = view[pos + BATCH_HEADER_SIZE:pos + size]
        codec = header.attributes & 0x07
        payload = codecs.decompress(codec, payload) if codec else bytes(payload)
        _decode_records(payload, header, topic, partition, fetch_offset, out)
        pos += size
        next_offset = max(next_offset, last + 1)
    return next_offset


def _decode_records(payload: bytes, header: BatchHeader, topic: str, partition: int,
                    fetch_offset: int, out: list[ConsumerRecord]) -> None:
    log_append = bool(header.attributes & TIMESTAMP_TYPE_MASK)
    timestamp_type = LOG_APPEND_TIME if log_append else 0
    base_offset = header.base_offset
    base_ts = header.base_timestamp
    max_ts = header.max_timestamp
    epoch = header.partition_leader_epoch
    pos = 0
    n = len(payload)
    append = out.append
    try:
        for _ in range(header.record_count):
            # record length
            b = payload[pos]
            if b < 0x80:
                pos += 1
            else:
                _, pos = _varint_at(payload, pos)
            pos += 1  # attributes
            b = payload[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                ts_delta, pos = _varint_at(payload, pos)
            b = payload[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = _varint_at(payload, pos)
            b = payload[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = _varint_at(payload, pos)
            if length < 0:
                key = None
            else:
                key = payload[pos:pos + length]
                pos += length
            b = payload[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = _varint_at(payload, pos)
            if length < 0:
                value = None
            else:
                value = payload[pos:pos + length]
                pos += length
            b = payload[pos]
            if b == 0:
                pos += 1
                headers: list[tuple[str, bytes | None]] = []
            else:
                count, pos = _varint_at(payload, pos)
                headers = []
                for _h in range(count):
                    length, pos = _varint_at(payload, pos)
                    name = payload[pos:pos + length].decode(errors="replace")
                    pos += length
                    length, pos = _varint_at(payload, pos)
                    if length < 0:
                        headers.append((name, None))
                    else:
                        headers.append((name, payload[pos:pos + length]))
                        pos += length
            offset = base_offset + offset_delta
            if offset < fetch_offset:
                continue
            append(ConsumerRecord(topic, partition, offset,
                                  max_ts if log_append else base_ts + ts_delta,
                                  timestamp_type, key, value, headers, epoch))
    except IndexError:
        raise CorruptRecord(f"{topic}-{partition}: record runs past its batch at offset "
                            f"{base_offset}") from None
    if pos > n:
        raise CorruptRecord(f"{topic}-{partition}: record runs past its batch")


def _varint_at(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecord("varint longer than 10 bytes")


def batch_headers(records: bytes) -> list[BatchHeader]:
    """Headers of every complete batch (used by tests and tools)."""
    return [header for _pos, header in iter_batch_headers(records)]
