"""RecordBatch v2 (magic 2): header access, validation, encode/decode (sans-IO).

Byte layout of one batch, all integers big-endian (Kafka's ``DefaultRecordBatch``)::

    0  baseOffset            int64   rewritten by the broker; not covered by the CRC
    8  length                int32   bytes after this field (batch size = length + 12)
    12 partitionLeaderEpoch  int32   rewritten by the broker; not covered by the CRC
    16 magic                 int8    2
    17 crc                   uint32  CRC-32C (Castagnoli) of bytes 21 .. end of batch
    21 attributes            int16   bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
                                     4 transactional, 5 control
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordCount           int32
    61 records               (compressed as one block when the codec is not 0)

Each record: ``length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
keyLength varint (-1 = null), key, valueLength varint (-1 = null), value, headerCount varint,
headers (keyLength varint, utf-8 key, valueLength varint (-1 = null), value)``. Varints are
zig-zag encoded base-128, least significant group first.

The hot paths (:func:`iter_batch_headers`, :func:`validate_batches`) touch only the 61-byte
headers and run one CRC-32C per batch in the ``crc32c`` C extension; nothing here loops over
records unless a caller asks to decode them.

Legacy message sets (magic 0 and 1, Kafka < 0.11) live in :mod:`.legacy_records`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import crc32c as _crc32c

from odradek.clock import wall_ms
from odradek.protocol import compression as codecs
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.record_encoding import append_record, encode_records

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "NO_TIMESTAMP",
    "BatchHeader",
    "CorruptBatch",
    "Record",
    "build_batch",
    "decode_batch",
    "decode_batches",
    "encode_batch",
    "is_legacy_message_set",
    "iter_batch_headers",
    "iter_record_keys",
    "iter_record_spans",
    "parse_batch_header",
    "read_varint",
    "rebuild_batch",
    "rewrite_offsets",
    "set_log_append_time",
    "set_log_append_time_split",
    "validate_batches",
]

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + length: the bytes not counted by ``length``
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
NO_TIMESTAMP = -1
CRC_START = 21  # the CRC covers attributes .. end
MAGIC_OFFSET = 16

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_AND_EPOCH = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_ATTRIBUTES = struct.Struct(">h")
_MAX_TIMESTAMP = struct.Struct(">q")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

CREATE_TIME = 0
LOG_APPEND_TIME = 1

assert _HEADER.size == BATCH_HEADER_SIZE


class CorruptBatch(CorruptRecord):
    """A :class:`CorruptRecord` that knows the byte position where the damage starts."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at byte {position})")
        self.position = position


class BatchHeader(NamedTuple):
    """The fixed 61-byte head of a RecordBatch v2, decoded."""

    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    def placed(self, base_offset: int, partition_leader_epoch: int) -> BatchHeader:
        """This header at its offset and epoch in a leader's log (what
        :func:`rewrite_offsets` writes); ``_replace`` costs three times as much, once per
        appended batch."""
        return tuple.__new__(BatchHeader,
                             (base_offset, self[1], partition_leader_epoch, *self[3:]))

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies on disk and on the wire."""
        return self.length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        """Sequence of the batch's last record (wrapping at 2**31 like Kafka), or -1."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def parse_batch_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Decode the 61-byte header at ``pos``; raises :class:`CorruptBatch` if ``buf`` is short."""
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise CorruptBatch("truncated batch header", pos)
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def iter_batch_headers(
    buf: bytes | bytearray | memoryview,
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each batch in ``buf`` without copying record data.

    Raises :class:`CorruptBatch` (whose ``position`` is where the bad batch starts) on a
    torn tail, a length smaller than a header, a length running past the buffer, or a magic
    other than 2.
    """
    pos = 0
    end = len(buf)
    unpack = _HEADER.unpack_from
    while pos < end:
        if end - pos < BATCH_HEADER_SIZE:
            raise CorruptBatch(f"torn batch: {end - pos} bytes left, header needs 61", pos)
        header = BatchHeader._make(unpack(buf, pos))
        if header.magic != 2:
            raise CorruptBatch(f"unsupported magic {header.magic}", pos)
        if header.length < MIN_BATCH_LENGTH:
            raise CorruptBatch(f"impossible batch length {header.length}", pos)
        size = header.length + LOG_OVERHEAD
        if pos + size > end:
            raise CorruptBatch(f"torn batch: length {header.length} runs past the data", pos)
        yield pos, header
        pos += size


def validate_batches(buf: bytes | bytearray | memoryview) -> list[tuple[int, BatchHeader]]:
    """Check framing and the CRC-32C of every batch; returns what :func:`iter_batch_headers` yields.

    One C-extension CRC call per batch. Magic 0/1 input fails with :class:`CorruptBatch`; check
    :func:`is_legacy_message_set` first and convert.
    """
    view = memoryview(buf)
    batches = []
    crc_of = _crc32c.crc32c
    for pos, header in iter_batch_headers(view):
        if crc_of(view[pos + CRC_START : pos + header.length + LOG_OVERHEAD]) != header.crc:
            raise CorruptBatch(
                f"CRC mismatch in batch at offset {header.base_offset}: stored {header.crc:#x}",
                pos,
            )
        if header.record_count < 0 or header.last_offset_delta < 0:
            raise CorruptBatch("negative record count or offset delta", pos)
        batches.append((pos, header))
    return batches


def is_legacy_message_set(buf: bytes | bytearray | memoryview) -> bool:
    """True when the first entry is a magic 0/1 message (magic is at byte 16 in every format)."""
    return len(buf) > MAGIC_OFFSET and buf[MAGIC_OFFSET] in (0, 1)


def rewrite_offsets(buf: bytearray, pos: int, base_offset: int, leader_epoch: int) -> None:
    """Overwrite baseOffset and partitionLeaderEpoch in place (outside the CRC)."""
    _OFFSET_AND_EPOCH.pack_into(buf, pos, base_offset)
    _EPOCH.pack_into(buf, pos + 12, leader_epoch)


def set_log_append_time(buf: bytearray, pos: int, header: BatchHeader, timestamp_ms: int) -> None:
    """Mark the batch LogAppendTime with ``timestamp_ms`` as maxTimestamp and redo the CRC.

    As in Kafka, record timestamps are left alone: readers of a LogAppendTime batch use
    maxTimestamp for every record.
    """
    attributes = header.attributes | TIMESTAMP_TYPE_MASK
    _ATTRIBUTES.pack_into(buf, pos + 21, attributes)
    _MAX_TIMESTAMP.pack_into(buf, pos + 35, timestamp_ms)
    view = memoryview(buf)
    _CRC.pack_into(buf, pos + 17, _crc32c.crc32c(view[pos + CRC_START : pos + header.size]))


def set_log_append_time_split(
    head: bytearray, rest: bytes | bytearray | memoryview, timestamp_ms: int
) -> None:
    """:func:`set_log_append_time` for a batch held as its 61-byte header copy plus the
    untouched record bytes (the append path writes both with one ``pwritev``, no copy)."""
    (attributes,) = _ATTRIBUTES.unpack_from(head, 21)
    _ATTRIBUTES.pack_into(head, 21, attributes | TIMESTAMP_TYPE_MASK)
    _MAX_TIMESTAMP.pack_into(head, 35, timestamp_ms)
    crc = _crc32c.crc32c(memoryview(head)[CRC_START:BATCH_HEADER_SIZE])
    _CRC.pack_into(head, 17, _crc32c.crc32c(rest, crc))


# --------------------------------------------------------------------------- records


@dataclass
class Record:
    """One record. ``offset`` is filled in by decoding (base offset + ``offset_delta``)."""

    offset_delta: int = 0
    timestamp: int = NO_TIMESTAMP
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    offset: int = -1


def _get_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    try:
        first = buf[pos]
    except IndexError:
        raise CorruptRecord("truncated varint in record") from None
    if first < 0x80:  # one-byte varints are the common case (small lengths and deltas)
        return (first >> 1) ^ -(first & 1), pos + 1
    result = 0
    shift = 0
    while True:
        try:
            byte = buf[pos]
        except IndexError:
            raise CorruptRecord("truncated varint in record") from None
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecord("varint longer than 10 bytes")


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_type: int = CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    base_timestamp: int | None = None,
    preserve_offset_deltas: bool = False,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Build one RecordBatch v2 with a valid CRC.

    Offset deltas are 0..n-1 unless ``preserve_offset_deltas`` (used by the cleaner, which keeps
    each retained record's offset); ``last_offset_delta`` overrides the header field so a
    compacted batch keeps its original last offset (and producer sequence range), as Kafka's
    ``overrideLastOffset`` does. ``base_timestamp`` defaults to the first record's timestamp.
    """
    if base_timestamp is None:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    body: bytes | bytearray
    if preserve_offset_deltas:
        body = bytearray()
        max_ts = NO_TIMESTAMP
        max_delta = -1
        for record in records:
            delta = record.offset_delta
            append_record(body, record.timestamp - base_timestamp, delta, record.key,
                          record.value, record.headers)
            max_ts = max(max_ts, record.timestamp)
            max_delta = max(max_delta, delta)
    else:
        body, max_ts = encode_records(records, base_timestamp)
        max_delta = len(records) - 1
    attributes = compression & COMPRESSION_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    return build_batch(
        body,
        record_count=len(records),
        base_timestamp=base_timestamp,
        max_timestamp=max_ts if max_timestamp is None else max_timestamp,
        last_offset_delta=max(max_delta, 0) if last_offset_delta is None else last_offset_delta,
        attributes=attributes,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
    )


def build_batch(
    records_body: bytes | bytearray,
    *,
    record_count: int,
    base_timestamp: int,
    max_timestamp: int,
    last_offset_delta: int,
    attributes: int = 0,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Close a batch around already-encoded records: compress them once with the codec in
    ``attributes`` (bits 0-2), write the 61-byte header, checksum once.

    The one place the header is packed: :func:`encode_batch`, :func:`rebuild_batch` and the
    client's incremental builder all end here.
    """
    codec = attributes & COMPRESSION_MASK
    payload = codecs.compress(codec, records_body) if codec else records_body
    out = bytearray(BATCH_HEADER_SIZE)
    out += payload
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        len(out) - LOG_OVERHEAD,
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    _CRC.pack_into(out, 17, _crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def decode_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0
) -> tuple[BatchHeader, list[Record]]:
    """Decode (and decompress) the batch at ``pos``. Does not check the CRC."""
    header = parse_batch_header(buf, pos)
    if header.magic != 2:
        raise CorruptBatch(f"unsupported magic {header.magic}", pos)
    end = pos + header.size
    if header.length < MIN_BATCH_LENGTH or end > len(buf):
        raise CorruptBatch("torn batch", pos)
    payload: bytes | memoryview = memoryview(buf)[pos + BATCH_HEADER_SIZE : end]
    if header.compression:
        payload = codecs.decompress(header.compression, payload)
    else:
        payload = bytes(payload)
    records = _decode_records(payload, header)
    return header, records


def _decode_records(payload: bytes, header: BatchHeader) -> list[Record]:
    records: list[Record] = []
    pos = 0
    log_append_time = header.timestamp_type == LOG_APPEND_TIME
    for _ in range(header.record_count):
        length, pos = _get_varint(payload, pos)
        end = pos + length
        if length < 0 or end > len(payload):
            raise CorruptRecord("record length runs past the batch")
        pos += 1  # record attributes
        timestamp_delta, pos = _get_varint(payload, pos)
        offset_delta, pos = _get_varint(payload, pos)
        key, pos = _get_bytes(payload, pos)
        value, pos = _get_bytes(payload, pos)
        header_count, pos = _get_varint(payload, pos)
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(header_count):
            name, pos = _get_bytes(payload, pos)
            header_value, pos = _get_bytes(payload, pos)
            if name is None:
                raise CorruptRecord("null record header key")
            headers.append((name.decode(errors="replace"), header_value))
        if pos != end:
            raise CorruptRecord("record length does not match its fields")
        timestamp = (
            header.max_timestamp if log_append_time else header.base_timestamp + timestamp_delta
        )
        records.append(
            Record(
                offset_delta=offset_delta,
                timestamp=timestamp,
                key=key,
                value=value,
                headers=headers,
                offset=header.base_offset + offset_delta,
            )
        )
    if pos != len(payload):
        raise CorruptRecord("trailing bytes after the last record")
    return records


#: Public name for decoders elsewhere (the client's consumer-side decoder).
read_varint = _get_varint


def _get_bytes(payload: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _get_varint(payload, pos)
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(payload):
        raise CorruptRecord("record field runs past the batch")
    return payload[pos:end], end


class RecordSpan(NamedTuple):
    """Where one record sits in a batch's (decompressed) records payload, and what compaction
    needs to know about it."""

    start: int
    end: int
    offset: int
    timestamp: int
    key: bytes | None
    is_tombstone: bool


def batch_payload(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[BatchHeader, bytes]:
    """The header and the decompressed records bytes of the batch at ``pos``."""
    header = parse_batch_header(buf, pos)
    raw = memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + header.size]
    payload = codecs.decompress(header.compression, raw) if header.compression else bytes(raw)
    return header, payload


def iter_record_spans(header: BatchHeader, payload: bytes) -> Iterator[RecordSpan]:
    """Walk the records of ``payload`` reading only length, timestamp, offset and key; values
    and headers are skipped, never copied."""
    cursor = 0
    base = header.base_offset
    base_timestamp = header.base_timestamp
    for _ in range(header.record_count):
        start = cursor
        length, cursor = _get_varint(payload, cursor)
        record_end = cursor + length
        if length < 0 or record_end > len(payload):
            raise CorruptRecord("record length runs past the batch")
        timestamp_delta, cursor = _get_varint(payload, cursor + 1)
        offset_delta, cursor = _get_varint(payload, cursor)
        key, cursor = _get_bytes(payload, cursor)
        value_length, cursor = _get_varint(payload, cursor)
        yield RecordSpan(
            start,
            record_end,
            base + offset_delta,
            base_timestamp + timestamp_delta,
            key,
            value_length < 0,
        )
        cursor = record_end


def iter_record_keys(
    buf: bytes | bytearray | memoryview, pos: int = 0
) -> Iterator[tuple[int, bytes | None, bool]]:
    """``(offset, key, is_tombstone)`` of each record of the batch at ``pos``."""
    header, payload = batch_payload(buf, pos)
    for span in iter_record_spans(header, payload):
        yield span.offset, span.key, span.is_tombstone


def rebuild_batch(
    header: BatchHeader, records_bytes: bytes, record_count: int, max_timestamp: int
) -> bytes:
    """A batch with ``header``'s fields (base offset, lastOffsetDelta, base timestamp, producer
    fields, codec, epoch) around already-encoded records (a subset of the original batch's
    records, copied byte for byte: their deltas stay valid because the base offset and base
    timestamp are kept). Recompresses with the batch's codec and computes a new CRC."""
    return build_batch(
        records_bytes,
        record_count=record_count,
        base_timestamp=header.base_timestamp,
        max_timestamp=max_timestamp,
        last_offset_delta=header.last_offset_delta,
        attributes=header.attributes,
        base_offset=header.base_offset,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
    )


def decode_batches(
    buf: bytes | bytearray | memoryview,
) -> Iterator[tuple[BatchHeader, list[Record]]]:
    for pos, _header in iter_batch_headers(buf):
        yield decode_batch(buf, pos)


def records_from_values(
    values: Iterable[bytes | None], *, key: bytes | None = None, timestamp: int | None = None
) -> list[Record]:
    """Convenience for tests and tools: records with the given values and one timestamp."""
    ts = wall_ms() if timestamp is None else timestamp
    return [Record(timestamp=ts, key=key, value=value) for value in values]
