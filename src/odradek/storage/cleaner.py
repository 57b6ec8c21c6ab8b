"""Log compaction: keep the last record of every key (``cleanup.policy=compact``).

One pass over a log (:func:`clean_log`), as in Kafka's ``Cleaner``:

1. **Range.** The dirty section runs from the *first dirty offset* (the cleaner checkpoint,
   at least the log start) to the *first uncleanable offset*: the base of the first segment
   that is active, holds offsets at or above the last stable offset (not yet committed,
   could still be truncated, or part of an undecided transaction), or holds records younger
   than ``min.compaction.lag.ms``.
2. **Offset map.** Records of the dirty section are decoded and each key's latest offset is
   put in an :class:`OffsetMap` keyed by a 16-byte BLAKE2b digest of the key (Kafka uses
   MD5): a ``bytearray`` of ``log.cleaner.dedupe.buffer.size`` bytes, 24 bytes per entry,
   filled to a 0.9 load factor, as Kafka's. When the map is full the pass stops at that
   batch: this pass cleans up to there, the rest stays dirty for the next pass ("clean in
   passes").
3. **Copy.** Segments from the log start up to the map's end are rewritten, in groups that
   fit ``segment.bytes``, into ``<base>.log.cleaned`` (same base offset as the group's first
   segment). A record survives if no later record has its key; a tombstone (null value)
   survives only while its source segment is younger than ``delete.retention.ms`` (segment
   mtime, Kafka's classic rule; cleaned segments inherit their sources' newest mtime).
   A batch keeping every record is copied byte for byte; one keeping some is re-encoded with
   its own codec keeping baseOffset, lastOffsetDelta (so offsets and the producer's sequence
   range are unchanged), producer id/epoch/baseSequence and partitionLeaderEpoch, with a new
   CRC. A batch losing all records disappears, except the last batch of an idempotent
   producer, which stays as an empty batch so the producer's sequence state survives a
   restart (Kafka does the same). Records of *aborted* transactions (per the ``.txnindex``
   entries) neither enter the offset map nor survive: left in place, an aborted value
   would replace the committed one it shadows, and a reader that skips aborted data (a
   read_committed consumer, the group coordinator loading transactional offset commits)
   would find neither.

   **Markers** (control batches) follow Kafka's two-pass rule. A marker stays while any
   batch of its transaction is still in the cleaned log (kept whole, in part, or as the
   producer's empty last batch): rebuilding producer state from the log would otherwise
   find that data's transaction open forever and hold the last stable offset back, and a
   read_committed reader needs the ABORT marker to stop skipping. The first pass that finds
   a marker's transaction gone stamps it with a *delete horizon* (now +
   ``delete.retention.ms``, in the batch's base timestamp with attribute bit 0x40, as
   Kafka since KIP-534); a later pass past that horizon removes it together with its
   ``.txnindex`` entry. A consumer that read the aborted data before it was removed thus
   has ``delete.retention.ms`` to reach the marker. The other aborted-transaction entries
   of the group's ``.txnindex`` files are copied unchanged (the markers and offsets they
   name do not move), so read_committed consumers still skip aborted data.
4. **Swap.** The cleaned files are fsynced, renamed ``.cleaned`` -> ``.swap``, the originals
   renamed ``.deleted`` (removed later: readers may hold regions), and ``.swap`` renamed to the
   final name. A crash in between is finished by recovery (see
   :mod:`odradek.storage.recovery`). If the log changed meanwhile (truncation, retention),
   the swap is abandoned and the cleaned files deleted.

Offsets and order never change: cleaning only removes records.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from odradek.clock import wall_ms
from odradek.protocol import records as rec
from odradek.protocol.records import BatchHeader
from odradek.storage.log import PartitionLog
from odradek.storage.segment import LogSegment

__all__ = [
    "DELETE_HORIZON_FLAG",
    "CleanResult",
    "OffsetMap",
    "clean_log",
    "delete_horizon_of",
    "dirty_ratio",
    "first_uncleanable_offset",
]

log = logging.getLogger(__name__)

ENTRY_BYTES = 24  # 16-byte digest + 8-byte offset, as Kafka's SkimpyOffsetMap accounts
LOAD_FACTOR = 0.9
_WRITE_BUFFER = 256 * 1024
DELETE_HORIZON_FLAG = 0x40  # RecordBatch attribute: baseTimestamp holds the delete horizon


_FREE = bytes(16)
_OFFSET = struct.Struct(">q")


def key_digest(key: bytes) -> bytes:
    digest = hashlib.blake2b(key, digest_size=16).digest()
    return digest if digest != _FREE else b"\x01" + digest[1:]


class OffsetMap:
    """Key digest -> latest offset in one preallocated ``bytearray`` (Kafka's
    ``SkimpyOffsetMap``): open addressing with linear probing over 24-byte slots
    (16-byte digest, int64 offset). Memory is exactly ``memory_bytes`` whatever the keys;
    a Python dict would cost ~5x more per key. An all-zero digest marks a free slot."""

    def __init__(self, memory_bytes: int) -> None:
        self.slots = max(2, memory_bytes // ENTRY_BYTES)
        self.capacity = max(1, int(self.slots * LOAD_FACTOR))
        self._table = bytearray(self.slots * ENTRY_BYTES)
        self._entries = 0
        self.latest_offset = -1

    def __len__(self) -> int:
        return self._entries

    def free_slots(self) -> int:
        return self.capacity - self._entries

    def _find(self, digest: bytes) -> int:
        """Byte position of ``digest``'s slot, or of the free slot where it belongs."""
        table = self._table
        slot = int.from_bytes(digest[:8], "big") % self.slots
        while True:
            start = slot * ENTRY_BYTES
            existing = table[start : start + 16]
            if existing in (digest, _FREE):
                return start
            slot += 1
            if slot == self.slots:
                slot = 0

    def put(self, key: bytes, offset: int) -> None:
        digest = key_digest(key)
        start = self._find(digest)
        table = self._table
        if table[start : start + 16] == _FREE:
            if self._entries >= self.capacity:
                raise OverflowError("offset map is full")
            table[start : start + 16] = digest
            self._entries += 1
        _OFFSET.pack_into(table, start + 16, offset)
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        digest = key_digest(key)
        start = self._find(digest)
        if self._table[start : start + 16] == _FREE:
            return -1
        return int(_OFFSET.unpack_from(self._table, start + 16)[0])


@dataclass(frozen=True)
class CleanResult:
    first_dirty_offset: int  # where the next pass starts
    bytes_read: int
    bytes_written: int
    segments_cleaned: int
    keys: int
    # The earliest delete horizon of a marker kept for now (None: none): a pass after it
    # is due even when nothing new is dirty (the log manager schedules it).
    next_delete_horizon: int | None = None


def first_uncleanable_offset(log_: PartitionLog, now: int) -> int:
    segments = log_.segments
    high_watermark = log_.last_stable_offset
    lag = log_.config.min_compaction_lag_ms
    for index, segment in enumerate(segments[:-1]):
        following = segments[index + 1].base_offset
        if following > high_watermark:
            return segment.base_offset
        if lag > 0 and segment.max_timestamp > now - lag:
            return segment.base_offset
    return segments[-1].base_offset


def dirty_ratio(log_: PartitionLog, first_dirty: int, now: int) -> float:
    """Bytes in the dirty section over bytes in the cleanable part of the log."""
    end = first_uncleanable_offset(log_, now)
    clean = dirty = 0
    for segment in log_.segments[:-1]:
        if segment.base_offset >= end:
            break
        if segment.base_offset >= first_dirty:
            dirty += segment.size
        else:
            clean += segment.size
    total = clean + dirty
    return dirty / total if total else 0.0


def _must_clean_for_max_lag(log_: PartitionLog, first_dirty: int, now: int) -> bool:
    max_lag = log_.config.max_compaction_lag_ms
    if max_lag >= 2**62:
        return False
    for segment in log_.segments[:-1]:
        if segment.base_offset >= first_dirty and segment.size:
            first_ts = segment.first_batch_timestamp
            if first_ts is None:
                first_ts = segment.largest_timestamp_for_retention()
            if now - first_ts > max_lag:
                return True
    return False


def needs_cleaning(log_: PartitionLog, first_dirty: int, now: int) -> bool:
    if not log_.config.compact:
        return False
    first_dirty = max(first_dirty, log_.log_start_offset)
    if first_uncleanable_offset(log_, now) <= first_dirty:
        return False
    ratio = dirty_ratio(log_, first_dirty, now)
    return ratio >= log_.config.min_cleanable_dirty_ratio or _must_clean_for_max_lag(
        log_, first_dirty, now
    )


class _AbortedBatches:
    """Which transactional batches belong to aborted transactions (from the .txnindex)."""

    def __init__(self, log_: PartitionLog) -> None:
        self._ranges: dict[int, list[tuple[int, int]]] = {}
        for segment in log_.segments:
            for entry in segment.txn_index.entries:
                self._ranges.setdefault(entry.producer_id, []).append(
                    (entry.first_offset, entry.last_offset))

    def __contains__(self, header: BatchHeader) -> bool:
        if not header.is_transactional or header.is_control:
            return False
        return any(first <= header.base_offset <= last
                   for first, last in self._ranges.get(header.producer_id, ()))


def delete_horizon_of(header: BatchHeader) -> int | None:
    """The delete horizon a cleaner stamped on this batch, if any (KIP-534)."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_FLAG else None


class _Markers:
    """Decides, over one whole pass from the log start, which markers may go: a producer's
    transactional batches kept since its previous marker belong to the transaction its next
    marker closes (a producer has one transaction open at a time)."""

    def __init__(self, now: int, delete_retention_ms: int) -> None:
        self.now = now
        self.delete_retention_ms = delete_retention_ms
        self._with_data: set[int] = set()  # producers with kept batches in an open txn
        self.removed: set[int] = set()  # offsets of the markers dropped
        self.next_horizon: int | None = None  # earliest horizon of a marker kept for now

    def _pending(self, horizon: int) -> None:
        if self.next_horizon is None or horizon < self.next_horizon:
            self.next_horizon = horizon

    def kept_data(self, header: BatchHeader) -> None:
        if header.is_transactional:
            self._with_data.add(header.producer_id)

    def on_marker(self, data: bytes, header: BatchHeader) -> bytes | None:
        """The marker batch to write (maybe stamped with its horizon), or None to drop it."""
        if header.producer_id in self._with_data:
            self._with_data.discard(header.producer_id)
            return data
        horizon = delete_horizon_of(header)
        if horizon is None:
            horizon = self.now + self.delete_retention_ms
            self._pending(horizon)
            stamped = header._replace(attributes=header.attributes | DELETE_HORIZON_FLAG,
                                      base_timestamp=horizon)
            _header, payload = rec.batch_payload(data)
            return rec.rebuild_batch(stamped, payload, header.record_count,
                                     header.max_timestamp)
        if horizon > self.now:
            self._pending(horizon)
            return data
        self.removed.add(header.base_offset)
        return None


def _build_offset_map(
    log_: PartitionLog, start: int, end: int, offset_map: OffsetMap, aborted: _AbortedBatches
) -> tuple[int, int]:
    """Fill the map from ``[start, end)``; returns (offset after the last batch mapped, bytes)."""
    mapped_end = start
    bytes_read = 0
    for segment in log_.segments:
        if segment.base_offset >= end:
            break
        if segment.next_offset <= start and segment is not log_.segments[-1]:
            continue
        for position, header in segment.iter_headers():
            if header.next_offset <= start:
                continue
            if header.base_offset >= end:
                return mapped_end, bytes_read
            if header.is_control or header in aborted:
                mapped_end = header.next_offset
                continue
            if header.record_count > offset_map.free_slots() and mapped_end > start:
                return mapped_end, bytes_read
            data = segment.read_bytes(position, header.size)
            bytes_read += header.size
            for offset, key, _tombstone in rec.iter_record_keys(data):
                if key is not None and offset >= start:
                    offset_map.put(key, offset)
            mapped_end = header.next_offset
    return mapped_end, bytes_read


def _group_segments(segments: list[LogSegment], max_bytes: int) -> list[list[LogSegment]]:
    groups: list[list[LogSegment]] = []
    for segment in segments:
        if (
            groups
            and sum(s.size for s in groups[-1]) + segment.size <= max_bytes
            and segment.next_offset - groups[-1][0].base_offset <= 2**31 - 1
        ):
            groups[-1].append(segment)
        else:
            groups.append([segment])
    return groups


def _filter_batch(
    data: bytes,
    header: BatchHeader,
    offset_map: OffsetMap,
    retain_tombstones: bool,
    producer_last_offsets: dict[int, int],
    aborted: _AbortedBatches,
) -> bytes | None:
    """The batch as it should be after cleaning, or None to drop it.

    Surviving records are copied byte for byte out of the decompressed payload (their offset
    and timestamp deltas stay valid: base offset and base timestamp are kept), so cleaning
    never decodes values or re-encodes records.
    """
    discard = header in aborted
    _header, payload = rec.batch_payload(data)
    kept: list[rec.RecordSpan] = []
    total = 0
    for span in rec.iter_record_spans(header, payload):
        total += 1
        if discard:
            continue
        if span.key is not None and offset_map.get(span.key) > span.offset:
            continue  # a later record has this key
        if span.is_tombstone and not retain_tombstones:
            continue
        kept.append(span)
    if len(kept) == total:
        return data
    if not kept and producer_last_offsets.get(header.producer_id, -2) != header.last_offset:
        return None
    if header.timestamp_type == rec.LOG_APPEND_TIME:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max((span.timestamp for span in kept), default=header.max_timestamp)
    records_bytes = b"".join(payload[span.start : span.end] for span in kept)
    return rec.rebuild_batch(header, records_bytes, len(kept), max_timestamp)


def _clean_group(
    log_: PartitionLog,
    group: list[LogSegment],
    offset_map: OffsetMap,
    delete_horizon_ms: int,
    producer_last_offsets: dict[int, int],
    aborted: _AbortedBatches,
    markers: _Markers,
) -> tuple[LogSegment, int]:
    directory: Path = log_.dir
    base = group[0].base_offset
    for kind in ("log", "index", "timeindex", "txnindex"):
        (directory / f"{base:020d}.{kind}.cleaned").unlink(missing_ok=True)
    cleaned = LogSegment(
        directory,
        base,
        index_interval_bytes=log_.config.index_interval_bytes,
        max_index_size=log_.config.segment_index_bytes,
        suffix=".cleaned",
    )
    cleaned.make_active()
    written = 0
    newest_mtime = 0
    buffer = bytearray()
    pending: list[tuple[int, BatchHeader]] = []

    def flush_buffer() -> None:
        nonlocal buffer, pending
        if pending:
            cleaned.append(buffer, pending)
        buffer, pending = bytearray(), []

    for segment in group:
        mtime = segment.last_modified_ms()
        newest_mtime = max(newest_mtime, mtime)
        retain_tombstones = mtime > delete_horizon_ms
        for position, header in segment.iter_headers():
            data = segment.read_bytes(position, header.size)
            out: bytes | None
            if header.is_control:
                out = markers.on_marker(data, header)
            else:
                out = _filter_batch(data, header, offset_map, retain_tombstones,
                                    producer_last_offsets, aborted)
                if out is not None:
                    markers.kept_data(header)
            if out is None:
                continue
            new_header = rec.parse_batch_header(out)
            pending.append((len(buffer), new_header))
            buffer += out
            written += len(out)
            if len(buffer) >= _WRITE_BUFFER:
                flush_buffer()
    flush_buffer()
    for segment in group:
        for entry in segment.txn_index.entries:
            if entry.last_offset not in markers.removed:
                cleaned.txn_index.append(entry)
    cleaned.next_offset = group[-1].next_offset
    cleaned.on_become_inactive()
    cleaned.flush()
    os.utime(cleaned.log_path, ns=(newest_mtime * 1_000_000, newest_mtime * 1_000_000))
    return cleaned, written


def clean_log(
    log_: PartitionLog,
    first_dirty_offset: int,
    *,
    dedupe_buffer_size: int = 128 * 1024 * 1024,
    now: int | None = None,
    horizon_due: bool = False,
) -> CleanResult | None:
    """One cleaning pass; returns None when there was nothing to clean. ``horizon_due``: a
    marker's delete horizon passed, so the clean part is copied again even when nothing new
    is dirty (the offset map is then empty: no record is shadowed that was not before)."""
    now = now if now is not None else wall_ms()
    start = max(first_dirty_offset, log_.log_start_offset)
    end = first_uncleanable_offset(log_, now)
    if end <= start and not horizon_due:
        return None
    offset_map = OffsetMap(dedupe_buffer_size)
    aborted = _AbortedBatches(log_)
    mapped_end, bytes_read = start, 0
    if end > start:
        mapped_end, bytes_read = _build_offset_map(log_, start, end, offset_map, aborted)
    if mapped_end <= start and not horizon_due:
        return None
    producer_last_offsets = {
        pid: entry.last_offset for pid, entry in log_.producer_state.producers.items()
    }
    sources = [
        segment
        for segment in log_.segments[:-1]
        if segment.base_offset < mapped_end and segment.base_offset < end
    ]
    delete_horizon = now - log_.config.delete_retention_ms
    markers = _Markers(now, log_.config.delete_retention_ms)
    cleaned_count = 0
    written_total = 0
    for group in _group_segments(sources, log_.config.segment_bytes):
        cleaned, written = _clean_group(
            log_, group, offset_map, delete_horizon, producer_last_offsets, aborted, markers
        )
        bytes_read += sum(segment.size for segment in group)
        if not log_.replace_segments([cleaned], group):
            log.info("%s: log changed during cleaning; abandoning this pass", log_.dir.name)
            cleaned.delete_files()
            return None
        cleaned_count += len(group)
        written_total += written
    log.info(
        "%s: cleaned %d segment(s) up to offset %d (%d keys)",
        log_.dir.name,
        cleaned_count,
        mapped_end,
        len(offset_map),
    )
    return CleanResult(mapped_end, bytes_read, written_total, cleaned_count, len(offset_map),
                       markers.next_horizon)
