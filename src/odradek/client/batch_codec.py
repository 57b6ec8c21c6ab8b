"""The client's hot paths for RecordBatch v2: append records to an open batch, close it with
one compress + one CRC, and decode fetched batches straight into consumer records.

The byte layout, the record encoder and the codecs are the protocol package's
(:func:`odradek.protocol.record_encoding.append_record`,
:func:`odradek.protocol.records.build_batch`, :mod:`odradek.protocol.compression`); this
module only keeps the producer's *incremental* use of them (records are encoded as they are
appended, so closing a batch is one compress and a header) and a consumer-side decoder that
walks a payload once, creating only the objects the application receives.
"""

from __future__ import annotations

from collections.abc import Sequence

import crc32c as _crc32c

from odradek.protocol import compression as codecs
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.record_encoding import SMALL_VARINTS, append_record, varint
from odradek.protocol.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    build_batch,
    iter_batch_headers,
    parse_batch_header,
    read_varint,
)

__all__ = ["ConsumerRecord", "RecordsBuilder", "decode_fetched", "varint"]

_TABLE_SIZE = len(SMALL_VARINTS)
#: A value this short keeps the whole record body under the varint table (the body adds at
#: most 3 + 3 * 2 bytes around the value).
_BODY_LIMIT = _TABLE_SIZE - 16


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
        count = self.count
        if count == 0:
            self.base_timestamp = timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        append_record(self.buffer, timestamp - self.base_timestamp, count, key, value, headers)
        self.count = count + 1
        return count

    def append_value(self, timestamp: int, value: bytes) -> int:
        """:meth:`append` for the common record (no key, no headers, a non-empty batch,
        small deltas and lengths), encoded inline; returns the bytes added. Falls back to
        :meth:`append` otherwise, so the bytes are always the same."""
        count = self.count
        delta = timestamp - self.base_timestamp
        vlen = len(value)
        if count and 0 <= delta < _TABLE_SIZE and count < _TABLE_SIZE and vlen < _BODY_LIMIT:
            if timestamp > self.max_timestamp:
                self.max_timestamp = timestamp
            small = SMALL_VARINTS
            body = b"".join((b"\x00", small[delta], small[count], b"\x01", small[vlen], value,
                             b"\x00"))
            head = small[len(body)]
            buffer = self.buffer
            buffer += head
            buffer += body
            self.count = count + 1
            return len(head) + len(body)
        before = len(self.buffer)
        self.append(timestamp, None, value, None)
        return len(self.buffer) - before

    @property
    def size_in_bytes(self) -> int:
        return len(self.buffer) + BATCH_HEADER_SIZE

    def build(self, *, compression: int = 0, producer_id: int = -1, producer_epoch: int = -1,
              base_sequence: int = -1, transactional: bool = False) -> bytes:
        """Close the batch: compress once, write the header, checksum once.
        ``transactional`` sets the attribute bit that makes the batch part of its
        producer's open transaction (held back from read_committed readers until the
        marker)."""
        attributes = compression & COMPRESSION_MASK
        if transactional:
            attributes |= TRANSACTIONAL_MASK
        return build_batch(self.buffer, record_count=self.count,
                           base_timestamp=self.base_timestamp,
                           max_timestamp=self.max_timestamp,
                           last_offset_delta=max(self.count - 1, 0),
                           attributes=attributes,
                           producer_id=producer_id, producer_epoch=producer_epoch,
                           base_sequence=base_sequence)


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
                   check_crcs: bool = True, skip: frozenset[int] = frozenset()) -> int:
    """Decode every complete batch in a fetched ``records`` blob into ``out``.

    Records below ``fetch_offset`` (the broker returns whole batches, so the first one may
    start earlier), control batches (transaction markers) and the batches whose base offset
    is in ``skip`` (aborted transactions, for read_committed) are skipped; a partial batch at
    the end (the broker cut the response at ``max_bytes``) is ignored. Returns the offset after
    the last batch seen, which may be past the last record returned when a batch was skipped
    entirely, so the next fetch does not ask for it again.
    """
    view = memoryview(records)
    next_offset = fetch_offset
    pos = 0
    end = len(view)
    while end - pos >= BATCH_HEADER_SIZE:
        header = parse_batch_header(view, pos)
        size = header.length + LOG_OVERHEAD
        if pos + size > end:
            break  # truncated by max_bytes
        if header.magic != 2:
            raise CorruptRecord(f"{topic}-{partition}: unsupported magic {header.magic} "
                                f"at offset {header.base_offset}")
        last = header.base_offset + header.last_offset_delta
        if last < fetch_offset or header.attributes & CONTROL_MASK or (
                skip and header.base_offset in skip):
            pos += size
            next_offset = max(next_offset, last + 1)
            continue
        if check_crcs and _crc32c.crc32c(view[pos + CRC_START:pos + size]) != header.crc:
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
                _, pos = read_varint(payload, pos)
            pos += 1  # attributes
            b = payload[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                ts_delta, pos = read_varint(payload, pos)
            b = payload[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = read_varint(payload, pos)
            b = payload[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = read_varint(payload, pos)
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
                length, pos = read_varint(payload, pos)
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
                count, pos = read_varint(payload, pos)
                headers = []
                for _h in range(count):
                    length, pos = read_varint(payload, pos)
                    name = payload[pos:pos + length].decode(errors="replace")
                    pos += length
                    length, pos = read_varint(payload, pos)
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


def batch_headers(records: bytes) -> list[BatchHeader]:
    """Headers of every complete batch (used by tests and tools)."""
    return [header for _pos, header in iter_batch_headers(records)]
