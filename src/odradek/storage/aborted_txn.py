"""Aborted transactions: the ``.txnindex`` entry format and the pure questions asked of it.

Why a separate module: the format and the range queries are pure (bytes in, values out),
so they are tested exhaustively without files; :mod:`odradek.storage.txn_index` does the
file I/O.

``<20-digit base offset>.txnindex`` (Kafka's ``TransactionIndex``): one entry per aborted
transaction whose ABORT marker lies in that segment, appended in marker order, no header,
no checksum, 34 bytes each::

    0  version           int16   0
    2  producerId        int64
    10 firstOffset       int64   first offset the transaction wrote in this partition
    18 lastOffset        int64   offset of the ABORT marker
    26 lastStableOffset  int64   the partition's LSO once this transaction completed

A read_committed consumer gets, with each Fetch, the (producerId, firstOffset) of every
aborted transaction overlapping the data returned, and drops those producers' batches from
firstOffset up to the marker.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from odradek.protocol.errors import CorruptRecord

__all__ = [
    "ENTRY_SIZE",
    "AbortedTxn",
    "collect_aborted",
    "decode_entries",
    "encode_entry",
    "last_stable_offset",
]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_entry(entry: AbortedTxn) -> bytes:
    return _ENTRY.pack(VERSION, *entry)


def decode_entries(data: bytes | bytearray | memoryview) -> tuple[list[AbortedTxn], int]:
    """Entries of a ``.txnindex`` file and the byte length they cover.

    A torn trailing entry (shorter than 34 bytes, from a crash mid-append) is left out; the
    caller truncates it. An unknown version is CorruptRecord: the file is not ours to guess.
    """
    whole = len(data) - len(data) % ENTRY_SIZE
    entries = []
    for version, pid, first, last, lso in _ENTRY.iter_unpack(memoryview(data)[:whole]):
        if version != VERSION:
            raise CorruptRecord(f"unexpected aborted transaction version {version}")
        entries.append(AbortedTxn(pid, first, last, lso))
    return entries, whole


def collect_aborted(
    entries: Iterable[AbortedTxn], fetch_offset: int, upper_bound: int
) -> tuple[list[AbortedTxn], bool]:
    """Aborted transactions overlapping ``[fetch_offset, upper_bound)`` among ``entries`` (one
    segment's, in marker order), and whether the search may stop here.

    As in Kafka: an entry overlaps when its marker is at or after the fetch offset and its
    first offset is below the bound. Once an entry's lastStableOffset passes the bound,
    every transaction that could overlap the range had completed before it, so later
    segments need not be searched.
    """
    found = []
    for entry in entries:
        if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:
            found.append(entry)
        if entry.last_stable_offset > upper_bound:
            return found, True
    return found, False


def last_stable_offset(high_watermark: int, unstable: Sequence[tuple[int, int]]) -> int:
    """The LSO: the high watermark, or the first offset of the earliest transaction that is
    not yet decided for consumers, whichever is lower.

    ``unstable`` holds ``(first offset, marker offset)`` in first-offset order: ongoing
    transactions have no marker yet (marker offset ``2**63 - 1``); completed ones stay
    unstable until their marker is below the high watermark (replicated), because a new
    leader without the marker would still hold the transaction open.
    """
    for first, marker in unstable:
        if marker >= high_watermark:
            return min(first, high_watermark)
    return high_watermark
