"""One segment's aborted-transaction index file (``<base>.txnindex``, format in
:mod:`odradek.storage.aborted_txn`).

Why the entries live in memory: aborts are rare and each entry is 34 bytes, while every
read_committed Fetch asks for the aborted transactions of its range; reading the file on
each fetch (as Kafka does) would cost a syscall per segment searched. The file is read once,
lazily, and appended to with plain writes (no descriptor is held: a log may have thousands
of segments).

Crash behaviour: the file has no checksum. A torn trailing entry is cut on load. Entries of
segments above the recovery point are reset by segment recovery and re-derived from the
ABORT markers while producer state is rebuilt (:meth:`PartitionLog.scan_producer_state_from`),
so an index never disagrees with its log after a restart.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from odradek.storage.aborted_txn import AbortedTxn, decode_entries, encode_entry

__all__ = ["TXN_INDEX_SUFFIX", "TransactionIndex"]

TXN_INDEX_SUFFIX = ".txnindex"


class TransactionIndex:
    """Aborted transactions whose ABORT marker is in one segment, in marker order.

    Appends happen under the owning log's lock; readers get an immutable tuple.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: tuple[AbortedTxn, ...] | None = None
        self._lock = threading.Lock()  # lazy load from reader threads
        self._unsynced = False

    @property
    def entries(self) -> tuple[AbortedTxn, ...]:
        entries = self._entries
        if entries is None:
            with self._lock:
                if self._entries is None:
                    self._entries = self._load()
                entries = self._entries
        return entries

    def _load(self) -> tuple[AbortedTxn, ...]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return ()
        entries, whole = decode_entries(data)
        if whole != len(data):
            os.truncate(self.path, whole)
        return tuple(entries)

    @property
    def last_marker_offset(self) -> int:
        entries = self.entries
        return entries[-1].last_offset if entries else -1

    def append(self, entry: AbortedTxn) -> bool:
        """Add ``entry`` unless the index already holds its marker (replays of the log while
        rebuilding producer state see markers already indexed); True if written."""
        if entry.last_offset <= self.last_marker_offset:
            return False
        with open(self.path, "ab") as file:
            file.write(encode_entry(entry))
        self._entries = (*self.entries, entry)
        self._unsynced = True
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or above ``offset`` (log truncation)."""
        kept = tuple(entry for entry in self.entries if entry.last_offset < offset)
        if len(kept) != len(self.entries):
            self._rewrite(kept)

    def reset(self) -> None:
        """Forget every entry (segment recovery re-derives them from the markers)."""
        self._rewrite(())

    def _rewrite(self, entries: tuple[AbortedTxn, ...]) -> None:
        if entries:
            self.path.write_bytes(b"".join(encode_entry(entry) for entry in entries))
            self._unsynced = True
        else:
            self.path.unlink(missing_ok=True)
        self._entries = entries

    def flush(self) -> None:
        if not self._unsynced:
            return
        self._unsynced = False
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        self._entries = ()
