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

Transactions: a producer's first transactional batch opens its transaction at that batch's
base offset (``currentTxnFirstOffset``); its COMMIT or ABORT marker closes it and yields a
:class:`CompletedTxn` (the log indexes aborted ones). A marker is checked on the leader
path: an epoch older than the producer's is fenced (INVALID_PRODUCER_EPOCH), as is a
coordinator epoch older than the last marker's (TRANSACTION_COORDINATOR_FENCED); a newer
epoch is accepted (the coordinator bumps the epoch when it aborts for a fenced or timed-out
producer). A plain (non-transactional) batch from a producer with an open transaction is
INVALID_TXN_STATE. :attr:`ProducerStateManager.unstable` lists the transactions that hold
the last stable offset back: ongoing ones, and completed ones until their marker is
replicated (:func:`odradek.storage.aborted_txn.last_stable_offset`).

Snapshot files ``<20-digit offset>.snapshot`` (Kafka's layout, version 1)::

    0  version   int16   1
    2  crc       uint32  CRC-32C of everything after this field
    6  count     int32
    10 entries, 46 bytes each:
         producerId int64, producerEpoch int16, lastSequence int32, lastOffset int64,
         offsetDelta int32 (lastOffset - firstOffset of the last batch), timestamp int64,
         coordinatorEpoch int32, currentTxnFirstOffset int64 (-1: no open transaction)

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import crc32c as _crc32c

from odradek.protocol.control_records import TxnMarker
from odradek.protocol.errors import (
    CorruptRecord,
    InvalidProducerEpoch,
    InvalidTxnState,
    OutOfOrderSequenceNumber,
    TransactionCoordinatorFenced,
    UnknownProducerId,
)
from odradek.protocol.records import BatchHeader
from odradek.storage.checkpoint import write_atomically

__all__ = ["BatchMetadata", "CompletedTxn", "ProducerStateEntry", "ProducerStateManager"]

log = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
NUM_BATCHES_TO_RETAIN = 5
INT_MAX = 2**31 - 1
NO_EPOCH = -1
NO_MARKER = 2**63 - 1  # marker offset of a transaction still open

_SNAPSHOT_HEADER = struct.Struct(">hIi")
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    marker_offset: int
    aborted: bool


@dataclass
class ProducerStateEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    # Max timestamp of the producer's last batch or marker: what DescribeProducers reports
    # and what producer.id.expiration.ms is measured from (Kafka's lastTimestamp).
    last_timestamp: int = -1
    # Timestamp of the open transaction's first batch (its last timestamp after a restart):
    # the age of the oldest open transaction is what an operator alerts on.
    txn_start_timestamp: int = -1

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
        # Completed transactions whose marker may not be replicated yet, in marker order.
        self._unreplicated: list[CompletedTxn] = []
        # (first offset, marker offset) of every transaction holding the LSO back, in first
        # offset order; replaced whole on change so lock-free readers see a consistent tuple.
        self.unstable: tuple[tuple[int, int], ...] = ()
        # Open transactions here and the earliest start timestamp among them (-1: none),
        # published with ``unstable`` for the metrics.
        self.open_transactions = 0
        self.oldest_open_txn_timestamp = -1

    # ------------------------------------------------------------------- leader path

    def check(self, header: BatchHeader, *, from_client: bool = True) -> BatchMetadata | None:
        """Validate a leader append; returns the original batch when it is a duplicate.

        Sequence rules are the client's: a batch the broker writes for a producer itself
        (``from_client`` False: a TxnOffsetCommit into ``__consumer_offsets``) carries no
        sequence, so only its epoch is checked, as Kafka does for non-client appends."""
        if header.producer_id < 0:
            return None
        entry = self.producers.get(header.producer_id)
        epoch = header.producer_epoch
        if header.is_control:
            return None  # markers are checked by check_marker, with their record decoded
        if entry is not None and entry.current_txn_first_offset >= 0 and not (
            header.is_transactional
        ):
            raise InvalidTxnState(
                f"producer {header.producer_id} wrote a non-transactional batch inside its "
                f"open transaction"
            )
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
        if not from_client:
            return None
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

    def check_marker(self, marker: TxnMarker) -> None:
        """Validate a transaction marker the coordinator asks the leader to write."""
        entry = self.producers.get(marker.producer_id)
        if entry is None:
            return
        if marker.producer_epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"marker for producer {marker.producer_id} has epoch {marker.producer_epoch}, "
                f"older than {entry.epoch}"
            )
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFenced(
                f"marker for producer {marker.producer_id} from coordinator epoch "
                f"{marker.coordinator_epoch}, older than {entry.coordinator_epoch}"
            )

    # ------------------------------------------------------------------- both paths

    def update(self, header: BatchHeader, marker: TxnMarker | None = None) -> CompletedTxn | None:
        """Apply a batch that is now in the log (leader after :meth:`check`, or follower).

        ``marker`` is the decoded record of a control batch; the transaction it closes comes
        back (None when the producer had no open transaction here: nothing to index)."""
        completed = None
        if header.producer_id >= 0:
            entry = self.producers.get(header.producer_id)
            if entry is None:
                entry = self.producers[header.producer_id] = ProducerStateEntry(header.producer_id)
            if header.producer_epoch != entry.epoch:
                entry.epoch = header.producer_epoch
                entry.batches.clear()
            entry.last_timestamp = max(entry.last_timestamp, header.max_timestamp)
            if header.is_control:
                if marker is not None:
                    completed = self._end_txn(entry, header.base_offset, marker)
            elif header.is_transactional and entry.current_txn_first_offset < 0:
                entry.current_txn_first_offset = header.base_offset
                entry.txn_start_timestamp = header.max_timestamp
                self._publish_unstable()
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
        return completed

    def _end_txn(
        self, entry: ProducerStateEntry, marker_offset: int, marker: TxnMarker
    ) -> CompletedTxn | None:
        entry.coordinator_epoch = max(entry.coordinator_epoch, marker.coordinator_epoch)
        first = entry.current_txn_first_offset
        if first < 0:
            return None
        entry.current_txn_first_offset = -1
        completed = CompletedTxn(entry.producer_id, first, marker_offset, marker.is_abort)
        self._unreplicated.append(completed)
        self._publish_unstable()
        return completed

    def stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO an aborted-index entry records: the first offset of the earliest other
        transaction still open, else just past the marker (Kafka's rule)."""
        firsts = [
            entry.current_txn_first_offset
            for entry in self.producers.values()
            if entry.current_txn_first_offset >= 0 and entry.producer_id != completed.producer_id
        ]
        return min(firsts, default=completed.marker_offset + 1)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is replicated (below the HW)."""
        if self._unreplicated and self._unreplicated[0].marker_offset < high_watermark:
            self._unreplicated = [
                txn for txn in self._unreplicated if txn.marker_offset >= high_watermark
            ]
            self._publish_unstable()

    def _publish_unstable(self) -> None:
        open_entries = [
            entry for entry in self.producers.values() if entry.current_txn_first_offset >= 0
        ]
        self.open_transactions = len(open_entries)
        self.oldest_open_txn_timestamp = min(
            (entry.txn_start_timestamp for entry in open_entries), default=-1)
        pairs = [(entry.current_txn_first_offset, NO_MARKER) for entry in open_entries]
        pairs += [(txn.first_offset, txn.marker_offset) for txn in self._unreplicated]
        self.unstable = tuple(sorted(pairs))

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose last batch is below the new log start (retention)."""
        gone = [
            pid for pid, entry in self.producers.items() if entry.last_offset < log_start_offset
        ]
        for pid in gone:
            del self.producers[pid]
        self._publish_unstable()
        for offset in self.snapshot_offsets():
            if offset < log_start_offset:
                self._snapshot_path(offset).unlink(missing_ok=True)

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms`` (by their last batch's
        timestamp) that have no open transaction, as Kafka does, so the state and its
        snapshots do not grow with every producer that ever wrote; returns how many.
        A forgotten producer that comes back is a new one to this partition (its next
        sequence is accepted only from 0, or refused UNKNOWN_PRODUCER_ID)."""
        gone = [
            pid for pid, entry in self.producers.items()
            if entry.current_txn_first_offset < 0
            and now_ms - entry.last_timestamp >= expiration_ms
        ]
        for pid in gone:
            del self.producers[pid]
        return len(gone)

    def clear(self) -> None:
        self.producers.clear()
        self._unreplicated = []
        self.unstable = ()
        self.open_transactions = 0
        self.oldest_open_txn_timestamp = -1
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
            if (not entry.batches and entry.current_txn_first_offset < 0
                    and entry.last_timestamp < 0):
                continue
            last = entry.batches[-1] if entry.batches else BatchMetadata(-1, -1, -1, -1, -1)
            entries += _SNAPSHOT_ENTRY.pack(
                entry.producer_id,
                entry.epoch,
                last.last_seq,
                last.last_offset,
                last.last_offset - last.first_offset,
                entry.last_timestamp,
                entry.coordinator_epoch,
                entry.current_txn_first_offset,
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
            pid, epoch, last_seq, last_offset, delta, timestamp, coordinator, txn_first = values
            entry = ProducerStateEntry(
                pid, epoch, coordinator_epoch=coordinator, current_txn_first_offset=txn_first,
                last_timestamp=timestamp, txn_start_timestamp=timestamp if txn_first >= 0 else -1,
            )
            if last_offset >= 0:
                first_seq = (last_seq - delta) % (INT_MAX + 1) if last_seq >= 0 else -1
                entry.batches.append(
                    BatchMetadata(first_seq, last_seq, last_offset - delta, last_offset, timestamp)
                )
            producers[pid] = entry
        return producers

    def load_latest_snapshot(
        self, log_start_offset: int, log_end_offset: int, *, at_most: int | None = None
    ) -> int:
        """Load the newest valid snapshot in ``[log_start, log_end]``; return its offset (the
        offset to scan from), or ``log_start_offset`` when there is none. Snapshots above the
        log end (left by a truncation or crash) are deleted; ones above ``at_most`` are
        skipped (recovery replays from there to re-index aborted transactions)."""
        self.clear()
        for offset in reversed(self.snapshot_offsets()):
            if offset > log_end_offset:
                self._snapshot_path(offset).unlink(missing_ok=True)
                continue
            if at_most is not None and offset > at_most:
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
            self._publish_unstable()
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
