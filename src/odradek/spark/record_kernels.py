"""Compiled loops over the records of RecordBatch v2 payloads (numba, sans-IO).

Finding where each record starts is inherently sequential — a record's length prefix says
where the next one begins — so no array expression can do it; a Python loop would cost a
Python object per record. These kernels are that loop compiled (a few nanoseconds per
record): one pass over all payloads fills plain arrays of positions and values, from which
:mod:`.arrow_records` builds the Arrow columns.

Every kernel bounds-checks against the payload it walks and reports damage by returning the
index of the bad batch or record (never reading past the buffer).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["parse_headers", "parse_records"]

OK = -1


@njit(cache=True, nogil=True, inline="always")
def _varint(buf: np.ndarray, pos: int, end: int) -> tuple[int, int]:
    """Zig-zag varint (up to 10 bytes) at ``pos``; (value, next) or (0, -1) if damaged."""
    result = 0
    shift = 0
    while pos < end and shift < 70:
        b = int(buf[pos])
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    return 0, -1


@njit(cache=True, nogil=True)
def parse_records(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray,
                  ts_delta: np.ndarray, offset_delta: np.ndarray, key_start: np.ndarray,
                  key_len: np.ndarray, value_start: np.ndarray, value_len: np.ndarray,
                  header_pos: np.ndarray, record_end: np.ndarray) -> int:
    """Walk the records of every batch payload ``buf[starts[b]:ends[b]]`` (``counts[b]``
    records each), filling one slot per record in the output arrays. Returns ``OK`` (-1) or
    the index of the first batch whose records do not parse or do not fill it exactly."""
    r = 0
    for b in range(len(counts)):
        pos = starts[b]
        end = ends[b]
        for _ in range(counts[b]):
            length, pos = _varint(buf, pos, end)
            if pos < 0 or length < 0 or pos + length > end:
                return b
            stop = pos + length
            pos += 1  # attributes (unused by v2 records)
            ts, pos = _varint(buf, pos, stop)
            if pos < 0:
                return b
            delta, pos = _varint(buf, pos, stop)
            if pos < 0:
                return b
            klen, pos = _varint(buf, pos, stop)
            if pos < 0 or pos + max(klen, 0) > stop:
                return b
            key_start[r] = pos
            key_len[r] = klen
            pos += max(klen, 0)
            vlen, pos = _varint(buf, pos, stop)
            if pos < 0 or pos + max(vlen, 0) > stop:
                return b
            value_start[r] = pos
            value_len[r] = vlen
            pos += max(vlen, 0)
            if pos >= stop:  # the header count is missing
                return b
            ts_delta[r] = ts
            offset_delta[r] = delta
            header_pos[r] = pos
            record_end[r] = stop
            pos = stop
            r += 1
        if pos != end:
            return b
    return OK


@njit(cache=True, nogil=True)
def count_headers(buf: np.ndarray, header_pos: np.ndarray, record_end: np.ndarray,
                  counts: np.ndarray) -> int:
    """Headers per record into ``counts``; ``OK`` or the index of a damaged record."""
    for r in range(len(header_pos)):
        n, pos = _varint(buf, header_pos[r], record_end[r])
        if pos < 0 or n < 0:
            return r
        counts[r] = n
    return OK


@njit(cache=True, nogil=True)
def parse_headers(buf: np.ndarray, header_pos: np.ndarray, record_end: np.ndarray,
                  key_start: np.ndarray, key_len: np.ndarray, value_start: np.ndarray,
                  value_len: np.ndarray) -> int:
    """Every header's key and value position, records in order (the slots were sized by
    :func:`count_headers`). ``OK`` or the index of a damaged record."""
    h = 0
    for r in range(len(header_pos)):
        stop = record_end[r]
        n, pos = _varint(buf, header_pos[r], stop)
        for _ in range(n):
            klen, pos = _varint(buf, pos, stop)
            if pos < 0 or klen < 0 or pos + klen > stop:
                return r
            key_start[h] = pos
            key_len[h] = klen
            pos += klen
            vlen, pos = _varint(buf, pos, stop)
            if pos < 0 or pos + max(vlen, 0) > stop:
                return r
            value_start[h] = pos
            value_len[h] = vlen
            pos += max(vlen, 0)
            h += 1
        if pos != stop:
            return r
    return OK
