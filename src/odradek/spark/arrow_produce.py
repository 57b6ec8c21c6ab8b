"""One Arrow record batch of sink rows → encoded RecordBatch v2 bodies per partition (sans-IO).

The mirror of :mod:`.arrow_records`: nothing here touches a row from Python. Columns become
plain arrays (bytes, offsets, validity); partitions are chosen as the Java client would —
the ``partition`` column if set, else ``toPositive(murmur2(key)) % partitions`` (a compiled
pass over the key column), else a sticky partition per producer batch's worth of keyless
rows (KIP-480) — and rows are grouped by partition with one stable sort, so each partition
keeps the rows' order. One compiled pass per partition (:func:`.produce_kernels.encode_records`)
writes its records, already cut into ``batch.size`` batches.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .produce_kernels import encode_records, encoded_bound, murmur2_partitions

__all__ = ["EncodedBatch", "encode_rows", "topic_rows"]

_EMPTY_BYTES = np.zeros(0, np.uint8)
_EMPTY_OFFSETS = np.zeros(1, np.int64)
_EMPTY_VALID = np.zeros(0, np.bool_)
#: Bytes a record adds around its key and value (varints, attributes, header count): used
#: only to size the sticky partitions' shares of keyless rows.
_RECORD_OVERHEAD = 8


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """``count`` records of one producer batch for ``partition`` (offset deltas from 0)."""

    partition: int
    records: memoryview
    count: int


@dataclass(frozen=True, slots=True)
class _Binary:
    data: np.ndarray     # uint8
    offsets: np.ndarray  # int64, absolute into ``data``; n + 1 entries
    valid: np.ndarray    # bool

    @property
    def lengths(self) -> np.ndarray:
        return np.where(self.valid, np.diff(self.offsets), 0)


def _binary(column: pa.Array) -> _Binary:
    """A string or binary column as zero-copy arrays (one cast to 64-bit offsets)."""
    column = column.cast(pa.large_binary())
    _validity, offsets_buf, data_buf = column.buffers()
    n = len(column)
    offsets = np.frombuffer(offsets_buf, np.int64)[column.offset:column.offset + n + 1] \
        if offsets_buf is not None else np.zeros(n + 1, np.int64)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else _EMPTY_BYTES
    valid = (column.is_valid().to_numpy(zero_copy_only=False) if column.null_count
             else np.ones(n, np.bool_))
    return _Binary(data, offsets, valid)


def _absent() -> _Binary:
    return _Binary(_EMPTY_BYTES, _EMPTY_OFFSETS, _EMPTY_VALID)


class _Headers:
    """The ``headers`` column: per-row header spans over flat key and value columns."""

    def __init__(self, column: pa.Array | None, n: int) -> None:
        self.present = column is not None
        if column is None or not len(column.values):
            self.present = False
            self.start = self.end = np.zeros(n, np.int64)
            self.keys = self.values = _absent()
            self.bytes = self.counts = np.zeros(n, np.int64)
            return
        offsets = column.offsets.to_numpy().astype(np.int64)
        self.start = offsets[:-1].copy()
        self.end = offsets[1:].copy()
        if column.null_count:
            null = ~column.is_valid().to_numpy(zero_copy_only=False)
            self.end[null] = self.start[null]
        keys, values = column.values.flatten()
        if keys.null_count:
            raise ValueError("a header key is null: header keys must be strings")
        self.keys = _binary(keys)
        self.values = _binary(values)
        per_header = np.concatenate(([0], np.cumsum(self.keys.lengths + self.values.lengths)))
        self.bytes = per_header[self.end] - per_header[self.start]
        self.counts = self.end - self.start


def topic_rows(batch: pa.RecordBatch, topic: str | None) -> Iterator[tuple[str, np.ndarray]]:
    """(topic, row indices) for every topic in ``batch``: the ``topic`` option for all rows,
    or each distinct value of the ``topic`` column. A null topic is a ``ValueError``."""
    if topic is not None:
        yield topic, np.arange(batch.num_rows)
        return
    column = batch.column(batch.schema.get_field_index("topic"))
    if column.null_count:
        raise ValueError("null topic in the data: set the 'topic' option or fill the "
                         "'topic' column")
    distinct = pc.unique(column).to_pylist()
    if len(distinct) == 1:
        yield distinct[0], np.arange(batch.num_rows)
        return
    for name in distinct:
        yield name, np.flatnonzero(pc.equal(column, name).to_numpy(zero_copy_only=False))


def _column(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    index = batch.schema.get_field_index(name)
    return None if index < 0 else batch.column(index)


def _sticky(sizes: np.ndarray, batch_size: int, available: Sequence[int]) -> np.ndarray:
    """A partition for each keyless row: one random available partition per ``batch.size``
    of rows, never the same twice in a row when there is a choice (KIP-480's sticky
    partitioner, applied to a known run of rows)."""
    share = np.cumsum(sizes) // max(batch_size, 1)
    chosen = np.empty(int(share[-1]) + 1, np.int32)
    previous = -1
    for i in range(len(chosen)):  # one per producer batch, not per row
        choices = [p for p in available if p != previous] or list(available)
        previous = chosen[i] = random.choice(choices)
    return chosen[share]


def encode_rows(batch: pa.RecordBatch, rows: np.ndarray, all_partitions: Sequence[int],
                available: Sequence[int], batch_size: int, batch_overhead: int
                ) -> Iterator[EncodedBatch]:
    """The records of ``rows`` of ``batch`` (one topic), partitioned and encoded into
    producer batches of at most ``batch_size`` bytes (one record may exceed it alone)."""
    value_col = _column(batch, "value")
    assert value_col is not None
    values = _binary(value_col)
    key_col = _column(batch, "key")
    keys = _binary(key_col) if key_col is not None else _absent()
    headers = _Headers(_column(batch, "headers"), batch.num_rows)
    partition_col = _column(batch, "partition")

    n = len(rows)
    if partition_col is not None:
        chosen = partition_col.take(pa.array(rows))
        unset = ~chosen.is_valid().to_numpy(zero_copy_only=False)
        partition = chosen.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        unset = np.ones(n, np.bool_)
        partition = np.full(n, -1, np.int64)
    if key_col is not None and unset.any():
        keyed = unset & keys.valid[rows]
        if keyed.any():
            hashed = murmur2_partitions(keys.data, keys.offsets, len(all_partitions))
            partition[keyed] = hashed[rows[keyed]]
            unset &= ~keyed
    if unset.any():
        sizes = (values.lengths[rows[unset]] + headers.bytes[rows[unset]]
                 + _RECORD_OVERHEAD)
        partition[unset] = _sticky(sizes, batch_size, available or all_partitions)

    payload = values.lengths + headers.bytes
    if key_col is not None:
        payload = payload + keys.lengths
    order = np.argsort(partition, kind="stable")
    ordered = partition[order]
    cuts = np.flatnonzero(np.diff(ordered)) + 1
    for group in np.split(order, cuts):
        part_rows = rows[group]
        size = encoded_bound(len(part_rows), int(payload[part_rows].sum()),
                             int(headers.counts[part_rows].sum()))
        out = np.empty(size, np.uint8)
        bounds = np.empty(len(part_rows) + 1, np.int64)
        counts = np.empty(len(part_rows), np.int64)
        made = encode_records(
            part_rows, batch_size, batch_overhead,
            key_col is not None, keys.data, keys.offsets, keys.valid,
            values.data, values.offsets, values.valid,
            headers.present, headers.start, headers.end, headers.keys.data,
            headers.keys.offsets, headers.values.data, headers.values.offsets,
            headers.values.valid, out, bounds, counts)
        target = int(partition[group[0]])
        view = out.data
        for b in range(made):
            yield EncodedBatch(target, view[bounds[b]:bounds[b + 1]], int(counts[b]))
