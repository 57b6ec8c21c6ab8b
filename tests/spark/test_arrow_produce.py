"""The sink's compiled encoder and partitioner against the client's per-record path (the
reference): same partition for every key, same record bytes for every row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.client.batch_codec import RecordsBuilder
from odradek.client.partitioner import murmur2, partition_for_key
from odradek.protocol.records import BATCH_HEADER_SIZE
from odradek.spark.arrow_produce import encode_rows, topic_rows
from odradek.spark.produce_kernels import murmur2_hashes, murmur2_partitions

TS = 1_700_000_000_123
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

keys = st.binary(max_size=40)
maybe = st.none() | st.binary(max_size=300)
headers = st.none() | st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=20)),
                               max_size=3)


def _offsets(data: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(data) + 1, np.int64)
    offsets[1:] = np.cumsum([len(d) for d in data])
    return np.frombuffer(b"".join(data), np.uint8).copy(), offsets


@given(st.lists(keys, max_size=50), st.integers(1, 1000))
@settings(max_examples=300, deadline=None)
def test_murmur2_kernel_equals_the_reference(data: list[bytes], partitions: int) -> None:
    buf, offsets = _offsets(data)
    assert murmur2_hashes(buf, offsets).tolist() == [murmur2(d) for d in data]
    assert murmur2_partitions(buf, offsets, partitions).tolist() == \
        [partition_for_key(d, partitions) for d in data]


def test_murmur2_known_values() -> None:
    # The Java client's Utils.murmur2 on these inputs (its unit test's vectors).
    buf, offsets = _offsets([b"21", b"foobar", b"a-little-bit-long-string",
                             b"a-little-bit-longer-string",
                             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"])
    assert murmur2_hashes(buf, offsets).tolist() == [
        -973932308, -790332482, -985981536, -1486304829, -58897971]


def _frame(rows: list[tuple[Any, Any, Any, Any]], *, string_keys: bool = False
           ) -> pa.RecordBatch:
    key_list, value_list, partition_list, header_list = (list(c) for c in zip(*rows, strict=True))
    key_type = pa.string() if string_keys else pa.binary()
    return pa.RecordBatch.from_arrays(
        [pa.array(key_list, key_type), pa.array(value_list, pa.binary()),
         pa.array(partition_list, pa.int32()),
         pa.array([None if h is None else [{"key": k, "value": v} for k, v in h]
                   for h in header_list], HEADER_TYPE)],
        names=["key", "value", "partition", "headers"])


def _expected_partition(key: bytes | None, partition: int | None, count: int) -> int:
    if partition is not None:
        return partition
    assert key is not None
    return partition_for_key(key, count)


def _check(batch: pa.RecordBatch, rows: list[tuple[Any, Any, Any, Any]], batch_size: int,
           partitions: int = 4, subset: np.ndarray | None = None) -> None:
    """Every encoded batch holds the next rows (of ``subset``) of its partition, byte for
    byte as ``RecordsBuilder.append`` writes them, and stays within ``batch_size``."""
    chosen = np.arange(batch.num_rows) if subset is None else subset
    pending: dict[int, list[int]] = {}
    for i in chosen.tolist():
        key, _value, partition, _headers = rows[i]
        key = key.encode() if isinstance(key, str) else key
        pending.setdefault(_expected_partition(key, partition, partitions), []).append(i)
    got = list(encode_rows(batch, chosen, list(range(partitions)),
                           list(range(partitions)), batch_size, BATCH_HEADER_SIZE))
    for encoded in got:
        take, pending[encoded.partition] = (pending[encoded.partition][:encoded.count],
                                            pending[encoded.partition][encoded.count:])
        assert len(take) == encoded.count
        builder = RecordsBuilder()
        for i in take:
            key, value, _partition, hdrs = rows[i]
            key = key.encode() if isinstance(key, str) else key
            builder.append(TS, key, value, hdrs)
        assert bytes(encoded.records) == bytes(builder.buffer)
        assert encoded.count == 1 or len(encoded.records) + BATCH_HEADER_SIZE <= batch_size
    assert not any(pending.values())


row = st.tuples(st.none() | keys, maybe, st.none() | st.integers(0, 3), headers).map(
    lambda r: r if r[0] is not None or r[2] is not None else (r[0], r[1], 0, r[3]))


@given(st.lists(row, min_size=1, max_size=60), st.sampled_from([80, 300, 1000, 16_384]))
@settings(max_examples=200, deadline=None)
def test_encoded_records_equal_the_per_record_encoder(rows: list[Any], batch_size: int) -> None:
    _check(_frame(rows), rows, batch_size)


def test_string_keys_sliced_batches_and_long_varints() -> None:
    rows = [(f"user-{i}", bytes(20_000) if i == 3 else f"v{i}".encode() * (i % 9),
             None, [("h", b"x" * 200)] * (i % 3)) for i in range(300)]
    frame = _frame(rows, string_keys=True)
    _check(frame, rows, 16_384)
    _check(frame.slice(7, 100), rows[7:107], 4_000)
    _check(frame, rows, 2_000, subset=np.arange(1, 300, 3))  # one topic's rows of several


def test_keyless_rows_stick_to_a_partition_per_batch() -> None:
    n = 2_000
    frame = pa.RecordBatch.from_arrays([pa.array([b"v" * 100] * n)], names=["value"])
    got = list(encode_rows(frame, np.arange(n), [0, 1, 2], [0, 2], 1_000, BATCH_HEADER_SIZE))
    assert sum(e.count for e in got) == n
    assert {e.partition for e in got} == {0, 2}  # only available partitions
    assert all(len(e.records) + BATCH_HEADER_SIZE <= 1_000 for e in got)


def test_topics_and_bad_input() -> None:
    frame = pa.RecordBatch.from_arrays(
        [pa.array([b"a", b"b", b"c"]), pa.array(["t1", "t2", "t1"])], names=["value", "topic"])
    assert {t: r.tolist() for t, r in topic_rows(frame, None)} == {"t1": [0, 2], "t2": [1]}
    assert [(t, r.tolist()) for t, r in topic_rows(frame, "x")] == [("x", [0, 1, 2])]
    nulls = pa.RecordBatch.from_arrays([pa.array([b"a"]), pa.array([None], pa.string())],
                                       names=["value", "topic"])
    with pytest.raises(ValueError, match="null topic"):
        list(topic_rows(nulls, None))
    bad = pa.RecordBatch.from_arrays(
        [pa.array([b"a"]), pa.array([[{"key": None, "value": b"x"}]], HEADER_TYPE)],
        names=["value", "headers"])
    with pytest.raises(ValueError, match="header key is null"):
        list(encode_rows(bad, np.arange(1), [0], [0], 16_384, BATCH_HEADER_SIZE))
