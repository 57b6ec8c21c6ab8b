"""Which fetched batches a read_committed reader must drop (sans-IO).

Why a client-side step at all: the broker returns read_committed consumers everything below
the last stable offset, aborted data included, plus the ``(producerId, firstOffset)`` of
every aborted transaction overlapping the data; the reader drops those itself. Kafka's
consumer algorithm, which this follows: walk the batches in offset order; a producer becomes
"aborted" once a batch reaches the first offset of one of its aborted transactions; its
transactional batches are dropped until its ABORT marker, which ends that. Control batches
are never records. Batches of producers not in the list (committed transactions,
non-transactional data) are kept.

The caller keeps advancing its position over dropped batches (they are only filtered, never
re-fetched), so a response made only of aborted data still moves the reader forward.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from odradek.protocol.control_records import ControlType, control_type_of_key
from odradek.protocol.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    decode_batch,
    parse_batch_header,
)

__all__ = ["aborted_batch_offsets", "without_batches"]


def aborted_batch_offsets(records: bytes | memoryview,
                          aborted: Iterable[tuple[int, int]]) -> frozenset[int]:
    """Base offsets of the batches in ``records`` that belong to aborted transactions."""
    pending = sorted((first, pid) for pid, first in aborted)
    if not pending:
        return frozenset()
    heapq.heapify(pending)
    aborted_now: set[int] = set()
    drop: set[int] = set()
    view = memoryview(records)
    pos, end = 0, len(view)
    while end - pos >= BATCH_HEADER_SIZE:
        header = parse_batch_header(view, pos)
        size = header.length + LOG_OVERHEAD
        if pos + size > end:
            break
        while pending and pending[0][0] <= header.last_offset:
            aborted_now.add(heapq.heappop(pending)[1])
        pid = header.producer_id
        if header.is_control:
            if pid in aborted_now and _is_abort(view, pos):
                aborted_now.discard(pid)
        elif header.is_transactional and pid in aborted_now:
            drop.add(header.base_offset)
        pos += size
    return frozenset(drop)


def _is_abort(view: memoryview, pos: int) -> bool:
    _header, records = decode_batch(view, pos)
    return bool(records) and control_type_of_key(records[0].key) == ControlType.ABORT


def without_batches(records: bytes, base_offsets: frozenset[int]) -> bytes:
    """``records`` with the batches starting at ``base_offsets`` cut out (bytes untouched
    otherwise; a partial batch at the end stays)."""
    if not base_offsets:
        return records
    view = memoryview(records)
    kept: list[memoryview] = []
    pos, end = 0, len(view)
    while end - pos >= BATCH_HEADER_SIZE:
        header = parse_batch_header(view, pos)
        size = header.length + LOG_OVERHEAD
        if header.base_offset not in base_offsets or pos + size > end:
            kept.append(view[pos:pos + size])
        pos += size
    kept.append(view[pos:])
    return b"".join(kept)
