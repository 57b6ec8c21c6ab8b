"""Leader epoch -> start offset history of one partition (``leader-epoch-checkpoint``).

File format (text, Kafka's)::

    0                      version
    <n>                    number of entries
    <epoch> <startOffset>  n lines, epochs and offsets strictly increasing

An entry says "the first batch written under ``epoch`` has offset ``startOffset``". Followers
use it through OffsetForLeaderEpoch to find where their log diverges from the leader's.

The file is rewritten atomically (tmp + fsync + rename) on every change; changes happen once
per leadership change or truncation, so this is not on the append hot path. A missing or
malformed file yields an empty history, which is safe (the follower falls back to truncating
to the high watermark).
"""

from __future__ import annotations

import bisect
import logging
import threading
from pathlib import Path
from typing import NamedTuple

from odradek.storage.checkpoint import write_atomically
from odradek.types import LeaderEpoch, Offset

__all__ = ["EpochEntry", "LeaderEpochFileCache"]

log = logging.getLogger(__name__)

FILE_NAME = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = LeaderEpoch(-1)
UNDEFINED_EPOCH_OFFSET = Offset(-1)


class EpochEntry(NamedTuple):
    epoch: LeaderEpoch
    start_offset: Offset


def _entry(line: str) -> EpochEntry:
    epoch, start_offset = line.split()
    return EpochEntry(LeaderEpoch(int(epoch)), Offset(int(start_offset)))


class LeaderEpochFileCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: list[EpochEntry] = self._read()

    def _read(self) -> list[EpochEntry]:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return []
        try:
            if int(lines[0]) != 0:
                raise ValueError(f"version {lines[0]}")
            count = int(lines[1])
            entries = [_entry(line) for line in lines[2 : 2 + count]]
            if len(entries) != count:
                raise ValueError("entry count")
            return entries
        except (IndexError, ValueError, TypeError) as exc:
            log.warning("%s is malformed (%s); starting with no epoch history", self.path, exc)
            return []

    def _write(self) -> None:
        lines = ["0", str(len(self._entries))]
        lines += [f"{entry.epoch} {entry.start_offset}" for entry in self._entries]
        write_atomically(self.path, ("\n".join(lines) + "\n").encode())

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> LeaderEpoch:
        entries = self._entries
        return entries[-1].epoch if entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (no-op if already known).

        Entries that conflict (an epoch >= ``epoch`` or a start offset >= ``start_offset``) are
        dropped first, as in Kafka, keeping both columns strictly increasing.
        """
        if epoch < 0:
            return
        with self._lock:
            entries = self._entries
            if entries and entries[-1].epoch == epoch and entries[-1].start_offset <= start_offset:
                return
            if entries and entries[-1].epoch > epoch and entries[-1].start_offset <= start_offset:
                return  # a stale epoch never rewinds the history
            self._entries = [
                entry
                for entry in entries
                if entry.epoch < epoch and entry.start_offset < start_offset
            ]
            self._entries.append(EpochEntry(LeaderEpoch(epoch), Offset(start_offset)))
            self._write()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` answering OffsetForLeaderEpoch, with Kafka's rules:

        the latest epoch ends at the log end; an older epoch ends where the next higher epoch
        starts, reported with the largest known epoch <= the requested one; an epoch above
        all known ones, or an empty history, is undefined ``(-1, -1)``.
        """
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH or not entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == entries[-1].epoch:
            return requested_epoch, log_end_offset
        epochs = [entry.epoch for entry in entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, entries[0].start_offset
        return entries[higher - 1].epoch, entries[higher].start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (the log was truncated there)."""
        with self._lock:
            kept = [entry for entry in self._entries if entry.start_offset < end_offset]
            if kept != self._entries:
                self._entries = kept
                self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget history before ``start_offset``; the epoch covering it now starts there."""
        with self._lock:
            entries = self._entries
            covering = [entry for entry in entries if entry.start_offset <= start_offset]
            if not covering:
                return
            kept = [EpochEntry(covering[-1].epoch, Offset(start_offset))]
            kept += [entry for entry in entries if entry.start_offset > start_offset]
            if kept != entries:
                self._entries = kept
                self._write()

    def clear(self) -> None:
        with self._lock:
            self._entries = []
            self._write()

    def flush(self) -> None:
        with self._lock:
            self._write()
