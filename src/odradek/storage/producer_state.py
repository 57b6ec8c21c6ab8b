"""Idempotent-producer state of one partition: per producer id, its epoch and last 5 batches.

Why here: sequence numbers are checked against what is in the log, so the state is derived
from the log and must be rebuilt from it after a restart, exactly as Kafka's log layer does.

Rules on a leader append of a batch with ``producerId >= 0`` (Kafka's ``ProducerAppendInfo``):

* epoch lower than the known one -> :class:`InvalidProducerEpoch`;
* same epoch and (firstSeq, lastSeq) equal to one of the last 5 batches -> duplicate: nothing
  is written and the original offsets are returned;
* same epoch, firstSeq not lastSeq + 1 (wrapping at 2**31 - 1) -> OutOfOrderSequenceNumber;
* new epoch must start at sequence 0; otherwise :class:`OutOfOrderSequenceNumber` for a known
  producer and :class:`UnknownProducerId` for one the log has no record of (e.g. its batches
  were removed by retention).

Followers apply batches without checks (:meth:`ProducerStateManager.update`).
Transactions are not supported yet: transactional and control batches only update the
epoch/sequence bookkeeping.

Snapshot files ``<20-digit offset>.snapshot`` (Kafka's layout, version 1)::

    0  version   int16   1
    2  crc       uint32  CRC-32C of everything after this field
    6  count     int32
    10 entries, 46 bytes each:
         producerId int64, producerEpoch int16, lastSequence int32, lastOffset int64,
         offsetDelta int32 (lastOffset - firstOffset of the last batch), timestamp int64,
         coordinatorEpoch int32 (-1), currentTxnFirstOffset int64 (-1)

A snapshot at offset N holds the state after every batch below N. It is written on segment
roll and on clean shutdown (atomically); on load the newest snapshot at or below the log end
is read and only batch *headers* after it are scanned. A snapshot that fails its CRC is
deleted and the next older one used. As in Kafka, a snapshot keeps only each producer's
last batch, so right after a restart the duplicate window is 1 batch until new batches arrive.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import crc32c as _crc32c

from odradek.protocol.errors import (
    CorruptRecord,
    InvalidProducerEpoch,
    OutOfOrderSequenceNumber,
    UnknownProducerId,
)
from odradek.protocol.records import BatchHeader
from odradek.storage.checkpoint import write_atomically

__all__ = ["BatchMetadata", "ProducerStateEntry", "ProducerStateManager"]

log = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
NUM_BATCHES_TO_RETAIN = 5
INT_MAX = 2**31 - 1
NO_EPOCH = -1

_SNAPSHOT_HEADER = struct.Struct(">hIi")
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerStateEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


class ProducerStateManager:
    """Producer entries of one partition plus its snapshot files in the partition directory.

    Not thread-safe by itself: the owning log calls it under its append lock.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0  # state covers every batch below this offset

    # ------------------------------------------------------------------- leader path

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a leader append; returns the original batch when it is a duplicate."""
        if header.producer_id < 0 or header.is_control:
            return None
        entry = self.producers.get(header.producer_id)
        epoch = header.producer_epoch
        if entry is None or entry.epoch == NO_EPOCH:
            if header.base_sequence != 0 and not header.is_transactional:
                raise UnknownProducerId(
                    f"no record of producer {header.producer_id} (first sequence "
                    f"{header.base_sequence} is not 0); its batches may have been removed"
                )
            return None
        if epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"producer {header.producer_id} epoch {epoch} is older than {entry.epoch}"
            )
        if epoch > entry.epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequenceNumber(
                    f"producer {header.producer_id} new epoch {epoch} must start at sequence 0, "
                    f"got {header.base_sequence}"
                )
            return None
        duplicate = entry.find_duplicate(header)
        if duplicate is not None:
            return duplicate
        if entry.batches and not _in_sequence(entry.last_seq, header.base_sequence):
            raise OutOfOrderSequenceNumber(
                f"producer {header.producer_id} epoch {epoch}: expected sequence "
                f"{(entry.last_seq + 1) % (INT_MAX + 1)}, got {header.base_sequence}"
            )
        return None

    # ------------------------------------------------------------------- both paths

    def update(self, header: BatchHeader) -> None:
        """Apply a batch that is now in the log (leader after :meth:`check`, or follower)."""
        if header.producer_id >= 0:
            entry = self.producers.get(header.producer_id)
            if entry is None:
                entry = self.producers[header.producer_id] = ProducerStateEntry(header.producer_id)
            if header.producer_epoch != entry.epoch:
                entry.epoch = header.producer_epoch
                entry.batches.clear()
            if not header.is_control and header.base_sequence >= 0:
                entry.batches.append(
                    BatchMetadata(
                        header.base_sequence,
                        header.last_sequence,
                        header.base_offset,
                        header.last_offset,
                        header.max_timestamp,
                    )
                )
        self.map_end_offset = max(self.map_end_offset, header.next_offset)

    def update_all(self, headers: Iterable[BatchHeader]) -> None:
        for header in headers:
            self.update(header)

    def last_offset_of(self, producer_id: int) -> int:
        entry = self.producers.get(producer_id)
        return entry.last_offset if entry else -1

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose last batch is below the new log start (retention)."""
        gone = [
            pid for pid, entry in self.producers.items() if entry.last_offset < log_start_offset
        ]
        for pid in gone:
            del self.producers[pid]
        for offset in self.snapshot_offsets():
            if offset < log_start_offset:
                self._snapshot_path(offset).unlink(missing_ok=True)

    def clear(self) -> None:
        self.producers.clear()
        self.map_end_offset = 0

    # --------------------------------------------------------------------- snapshots

    def _snapshot_path(self, offset: int) -> Path:
        return self.directory / snapshot_file_name(offset)

    def snapshot_offsets(self) -> list[int]:
        out = []
        for path in self.directory.glob("*" + SNAPSHOT_SUFFIX):
            stem = path.name[: -len(SNAPSHOT_SUFFIX)]
            if stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    def take_snapshot(self, *, sync: bool = True) -> None:
        """Write the state as ``<map_end_offset>.snapshot`` (atomically; ``sync=False`` skips
        the fsync: the CRC catches a snapshot lost to a power failure, and an older one or a
        header scan replaces it)."""
        entries = bytearray()
        count = 0
        for entry in self.producers.values():
            if not entry.batches:
                continue
            last = entry.batches[-1]
            entries += _SNAPSHOT_ENTRY.pack(
                entry.producer_id,
                entry.epoch,
                last.last_seq,
                last.last_offset,
                last.last_offset - last.first_offset,
                last.timestamp,
                -1,
                -1,
            )
            count += 1
        body = struct.pack(">i", count) + bytes(entries)
        data = struct.pack(">hI", 1, _crc32c.crc32c(body)) + body
        write_atomically(self._snapshot_path(self.map_end_offset), data, sync=sync)

    def _read_snapshot(self, offset: int) -> dict[int, ProducerStateEntry]:
        data = self._snapshot_path(offset).read_bytes()
        if len(data) < _SNAPSHOT_HEADER.size:
            raise CorruptRecord("snapshot too short")
        version, crc, count = _SNAPSHOT_HEADER.unpack_from(data)
        if version != 1 or _crc32c.crc32c(data[6:]) != crc:
            raise CorruptRecord(f"snapshot version {version} or CRC mismatch")
        if len(data) != _SNAPSHOT_HEADER.size + count * _SNAPSHOT_ENTRY.size:
            raise CorruptRecord("snapshot length does not match its entry count")
        producers = {}
        for values in _SNAPSHOT_ENTRY.iter_unpack(data[_SNAPSHOT_HEADER.size :]):
            pid, epoch, last_seq, last_offset, delta, timestamp, _coord, _txn = values
            entry = ProducerStateEntry(pid, epoch)
            first_seq = (last_seq - delta) % (INT_MAX + 1) if last_seq >= 0 else -1
            entry.batches.append(
                BatchMetadata(first_seq, last_seq, last_offset - delta, last_offset, timestamp)
            )
            producers[pid] = entry
        return producers

    def load_latest_snapshot(self, log_start_offset: int, log_end_offset: int) -> int:
        """Load the newest valid snapshot in ``[log_start, log_end]``; return its offset (the
        offset to scan from), or ``log_start_offset`` when there is none. Snapshots above the
        log end (left by a truncation or crash) are deleted."""
        self.clear()
        for offset in reversed(self.snapshot_offsets()):
            if offset > log_end_offset:
                self._snapshot_path(offset).unlink(missing_ok=True)
                continue
            if offset < log_start_offset:
                break
            try:
                self.producers = self._read_snapshot(offset)
            except (CorruptRecord, OSError, struct.error) as exc:
                log.warning(
                    "deleting bad producer snapshot %s: %s", self._snapshot_path(offset), exc
                )
                self._snapshot_path(offset).unlink(missing_ok=True)
                continue
            self.map_end_offset = offset
            return offset
        self.map_end_offset = log_start_offset
        return log_start_offset

    def delete_snapshots_after(self, offset: int) -> None:
        for snapshot in self.snapshot_offsets():
            if snapshot > offset:
                self._snapshot_path(snapshot).unlink(missing_ok=True)

    def delete_all_snapshots(self) -> None:
        for snapshot in self.snapshot_offsets():
            self._snapshot_path(snapshot).unlink(missing_ok=True)

    def retain_snapshots(self, keep: int = 2) -> None:
        """Keep only the newest ``keep`` snapshots (Kafka keeps a few around segment bases)."""
        offsets = self.snapshot_offsets()
        for offset in offsets[:-keep] if keep else offsets:
            with contextlib.suppress(OSError):
                os.unlink(self._snapshot_path(offset))
