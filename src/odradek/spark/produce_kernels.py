"""Compiled loops for the sink: Java-compatible murmur2 over a key column, and RecordBatch v2
record encoding straight from Arrow buffers (numba, sans-IO).

The sink's per-record cost used to be the producer's ``append`` (a lock, a Python murmur2, a
record encoder, a future) for every row. These kernels do that work for a whole column slice
in one call: :func:`murmur2_partitions` hashes every key (the same function as
:func:`odradek.client.partitioner.murmur2`, which stays the reference), and
:func:`encode_records` writes the records of one partition, already cut into producer-sized
batches, into one buffer. The bytes are exactly what ``RecordsBuilder.append`` would write for
the same rows; the producer then sends each batch through its usual accumulator, sequencing
and retry machinery (:meth:`odradek.client.producer.AsyncProducer.append_encoded`).

Arrow binary columns arrive as (data bytes, int64 offsets, validity) arrays; an absent column
is passed as empty arrays with its ``has_*`` flag false.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["encode_records", "murmur2_partitions"]

_MASK = 0xFFFFFFFF


@njit(cache=True, nogil=True)
def _murmur2(data: np.ndarray, start: int, end: int) -> int:
    """``Utils.murmur2`` of ``data[start:end]`` as a signed int32 (in int64 arithmetic,
    masked to 32 bits after every multiply: numba widens small integers)."""
    m = 0x5BD1E995
    length = end - start
    h = (0x9747B28C ^ length) & _MASK
    whole = length & ~3
    for i in range(start, start + whole, 4):
        k = (int(data[i]) | (int(data[i + 1]) << 8)
             | (int(data[i + 2]) << 16) | (int(data[i + 3]) << 24))
        k = (k * m) & _MASK
        k ^= k >> 24
        k = (k * m) & _MASK
        h = ((h * m) & _MASK) ^ k
    tail = length & 3
    base = start + whole
    if tail == 3:
        h ^= int(data[base + 2]) << 16
    if tail >= 2:
        h ^= int(data[base + 1]) << 8
    if tail >= 1:
        h ^= int(data[base])
        h = (h * m) & _MASK
    h ^= h >> 13
    h = (h * m) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


@njit(cache=True, nogil=True)
def murmur2_hashes(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Signed murmur2 of every value ``data[offsets[i]:offsets[i+1]]``."""
    n = len(offsets) - 1
    out = np.empty(n, np.int32)
    for i in range(n):
        out[i] = _murmur2(data, offsets[i], offsets[i + 1])
    return out


@njit(cache=True, nogil=True)
def murmur2_partitions(data: np.ndarray, offsets: np.ndarray, num_partitions: int
                       ) -> np.ndarray:
    """``toPositive(murmur2(key)) % num_partitions`` for every key (the Java client's
    ``BuiltInPartitioner.partitionForKey``; nulls are the caller's to mask)."""
    hashes = murmur2_hashes(data, offsets)
    out = np.empty(len(hashes), np.int32)
    for i in range(len(hashes)):
        out[i] = (np.int64(hashes[i]) & 0x7FFFFFFF) % num_partitions
    return out


@njit(cache=True, nogil=True, inline="always")
def _varint_size(value: int) -> int:
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag > 0x7F:
        zigzag >>= 7
        size += 1
    return size


@njit(cache=True, nogil=True, inline="always")
def _put_varint(out: np.ndarray, pos: int, value: int) -> int:
    zigzag = (value << 1) ^ (value >> 63)
    while zigzag > 0x7F:
        out[pos] = (zigzag & 0x7F) | 0x80
        zigzag >>= 7
        pos += 1
    out[pos] = zigzag
    return pos + 1


@njit(cache=True, nogil=True, inline="always")
def _put_bytes(out: np.ndarray, pos: int, data: np.ndarray, start: int, end: int) -> int:
    n = end - start
    out[pos:pos + n] = data[start:end]
    return pos + n


@njit(cache=True, nogil=True)
def _headers_size(first: int, last: int, hk_offs: np.ndarray, hv_offs: np.ndarray,
                  hv_valid: np.ndarray) -> int:
    size = _varint_size(last - first)
    for h in range(first, last):
        klen = hk_offs[h + 1] - hk_offs[h]
        size += _varint_size(klen) + klen
        if hv_valid[h]:
            vlen = hv_offs[h + 1] - hv_offs[h]
            size += _varint_size(vlen) + vlen
        else:
            size += 1
    return size


@njit(cache=True, nogil=True)
def encode_records(rows: np.ndarray, batch_size: int, batch_overhead: int,
                   has_key: bool, k_data: np.ndarray, k_offs: np.ndarray, k_valid: np.ndarray,
                   v_data: np.ndarray, v_offs: np.ndarray, v_valid: np.ndarray,
                   has_headers: bool, h_start: np.ndarray, h_end: np.ndarray, hk_data: np.ndarray,
                   hk_offs: np.ndarray, hv_data: np.ndarray, hv_offs: np.ndarray,
                   hv_valid: np.ndarray, out: np.ndarray, bounds: np.ndarray,
                   counts: np.ndarray) -> int:
    """Encode records ``rows`` (in order) into ``out``, starting a new batch whenever the
    next record would take the batch (``batch_overhead`` + records) past ``batch_size``;
    every record has timestamp delta 0 (the sink stamps a batch with one time). Batch ``b``
    is ``out[bounds[b]:bounds[b+1]]`` holding ``counts[b]`` records; returns the number of
    batches. Row ``r``'s headers are ``h_start[r]:h_end[r]`` of the header key and value
    columns. ``out`` must hold :func:`encoded_bound` bytes; ``bounds`` and ``counts`` one
    slot per row (plus one for ``bounds``)."""
    pos = 0
    batches = 0
    in_batch = 0
    bounds[0] = 0
    for r in rows:
        if has_key and k_valid[r]:
            klen = k_offs[r + 1] - k_offs[r]
            key_part = _varint_size(klen) + klen
        else:
            klen = -1
            key_part = 1
        if v_valid[r]:
            vlen = v_offs[r + 1] - v_offs[r]
            value_part = _varint_size(vlen) + vlen
        else:
            vlen = -1
            value_part = 1
        if has_headers:
            header_part = _headers_size(h_start[r], h_end[r], hk_offs, hv_offs, hv_valid)
        else:
            header_part = 1
        fixed = 2 + key_part + value_part + header_part  # attributes, timestamp delta 0
        body = fixed + _varint_size(in_batch)
        if in_batch and (batch_overhead + pos - bounds[batches] + _varint_size(body) + body
                         > batch_size):
            counts[batches] = in_batch
            batches += 1
            bounds[batches] = pos
            in_batch = 0
            body = fixed + 1
        pos = _put_varint(out, pos, body)
        out[pos] = 0  # attributes
        out[pos + 1] = 0  # timestamp delta
        pos = _put_varint(out, pos + 2, in_batch)
        pos = _put_varint(out, pos, klen)
        if klen > 0:
            pos = _put_bytes(out, pos, k_data, k_offs[r], k_offs[r + 1])
        pos = _put_varint(out, pos, vlen)
        if vlen > 0:
            pos = _put_bytes(out, pos, v_data, v_offs[r], v_offs[r + 1])
        if has_headers:
            first = h_start[r]
            last = h_end[r]
            pos = _put_varint(out, pos, last - first)
            for h in range(first, last):
                pos = _put_varint(out, pos, hk_offs[h + 1] - hk_offs[h])
                pos = _put_bytes(out, pos, hk_data, hk_offs[h], hk_offs[h + 1])
                if hv_valid[h]:
                    pos = _put_varint(out, pos, hv_offs[h + 1] - hv_offs[h])
                    pos = _put_bytes(out, pos, hv_data, hv_offs[h], hv_offs[h + 1])
                else:
                    out[pos] = 1
                    pos += 1
        else:
            out[pos] = 0
            pos += 1
        in_batch += 1
    if in_batch:
        counts[batches] = in_batch
        batches += 1
        bounds[batches] = pos
    return batches


def encoded_bound(rows: int, payload_bytes: int, headers: int) -> int:
    """Bytes :func:`encode_records` may write: every payload byte plus at most 5 bytes per
    varint (5 per record, 2 per header) and 2 fixed bytes per record."""
    return payload_bytes + rows * 27 + headers * 10
