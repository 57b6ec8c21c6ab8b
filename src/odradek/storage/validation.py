"""Checks a leader applies to producer batches before they are written, and the topic's
``compression.type``.

Everything here reads only the 61-byte batch headers, except :func:`apply_compression_type`
when a topic forces a codec different from the producer's (then the batch is decoded and
re-encoded, as Kafka does).

Deliberate limits, each a per-record loop we do not run on the append path: timestamps are
checked on the batch's base (first) and max timestamps rather than every record, and
compacted topics do not reject keyless records at append time (the cleaner keeps them).
"""

from __future__ import annotations

from odradek.protocol import records as rec
from odradek.protocol.compression import CODEC_BY_NAME
from odradek.protocol.errors import (
    InvalidRecord,
    InvalidTimestamp,
    MessageTooLarge,
    RecordListTooLarge,
)
from odradek.protocol.legacy_records import convert_legacy_message_set
from odradek.protocol.records import BatchHeader
from odradek.storage.log_config import LogConfig

__all__ = ["apply_compression_type", "validate_leader_batch", "validate_producer_records"]


def validate_producer_records(
    records: bytes | bytearray | memoryview,
    config: LogConfig,
    now: int,
    *,
    from_coordinator: bool,
) -> tuple[bytes | bytearray | memoryview, list[tuple[int, BatchHeader]]]:
    """What a leader checks before it takes the log lock: the batches of one produce request
    (magic 0/1 message sets converted to one v2 batch first), their framing and CRCs, that
    they fit a segment, each batch's header, then ``compression.type``. Returns the bytes
    to write and their batches."""
    data: bytes | bytearray | memoryview = memoryview(records).cast("B")
    if rec.is_legacy_message_set(data):
        data = convert_legacy_message_set(data)
    batches = rec.validate_batches(data)
    if not batches:
        raise InvalidRecord("produce request holds no record batch")
    if len(data) > config.segment_bytes:
        raise RecordListTooLarge(
            f"{len(data)} bytes of batches do not fit segment.bytes={config.segment_bytes}"
        )
    for _pos, header in batches:
        validate_leader_batch(header, config, now, allow_control=from_coordinator)
    return apply_compression_type(data, batches, config)


def validate_leader_batch(
    header: BatchHeader, config: LogConfig, now: int, *, allow_control: bool = False
) -> None:
    """Header-only checks of one producer batch (no record is decoded). Control batches
    come only from the transaction coordinator (``allow_control``)."""
    if header.size > config.max_message_bytes:
        raise MessageTooLarge(
            f"batch of {header.size} bytes exceeds max.message.bytes={config.max_message_bytes}"
        )
    if header.record_count <= 0 or header.last_offset_delta != header.record_count - 1:
        raise InvalidRecord(
            f"batch claims {header.record_count} records but lastOffsetDelta "
            f"{header.last_offset_delta}"
        )
    if header.is_control and not allow_control:
        raise InvalidRecord("clients may not produce control batches")
    if header.timestamp_type == rec.CREATE_TIME and not config.log_append_time:
        before = min(
            config.message_timestamp_before_max_ms, config.message_timestamp_difference_max_ms
        )
        after = min(
            config.message_timestamp_after_max_ms, config.message_timestamp_difference_max_ms
        )
        # Header-only check: the batch's first (base) and largest timestamps.
        if (header.base_timestamp >= 0 and now - header.base_timestamp > before) or (
            header.max_timestamp - now > after
        ):
            raise InvalidTimestamp(
                f"timestamps {header.base_timestamp}..{header.max_timestamp} are outside the "
                f"allowed range around {now}"
            )


def apply_compression_type(
    data: bytes | bytearray | memoryview,
    batches: list[tuple[int, BatchHeader]],
    config: LogConfig,
) -> tuple[bytes | bytearray | memoryview, list[tuple[int, BatchHeader]]]:
    """Apply ``compression.type`` when it is not ``producer`` (decodes only in that case).
    Control batches (transaction markers) are kept as written: re-encoding would lose
    their control bit, and consumers read their one tiny record uncompressed anyway."""
    wanted = config.compression_type
    if wanted == "producer":
        return data, batches
    codec = 0 if wanted == "uncompressed" else CODEC_BY_NAME[wanted]
    if all(header.compression == codec or header.is_control for _pos, header in batches):
        return data, batches
    out = bytearray()
    for pos, header in batches:
        if header.compression == codec or header.is_control:
            out += data[pos : pos + header.size]
            continue
        _h, records = rec.decode_batch(data, pos)
        out += rec.encode_batch(
            records,
            compression=codec,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            timestamp_type=header.timestamp_type,
            is_transactional=header.is_transactional,
            base_timestamp=header.base_timestamp,
            max_timestamp=header.max_timestamp,
        )
    return out, rec.validate_batches(out)
