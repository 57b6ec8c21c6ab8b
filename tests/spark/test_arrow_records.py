"""The columnar decoder against the client's record decoder, on every codec and shape."""

from __future__ import annotations

import random

import pytest

from odradek.client.batch_codec import RecordsBuilder, decode_fetched
from odradek.protocol.compression import CODEC_BY_NAME
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.records import CONTROL_MASK, rewrite_offsets
from odradek.spark.arrow_records import decode_chunk
from odradek.spark.schema import arrow_schema


def _batches(codec: int, sizes: list[int], seed: int, *, base: int = 0,
             headers: bool = True) -> bytes:
    rnd = random.Random(seed)
    out = bytearray()
    offset = base
    for count in sizes:
        builder = RecordsBuilder()
        for _ in range(count):
            key = None if rnd.random() < 0.2 else rnd.randbytes(rnd.randrange(0, 30))
            value = None if rnd.random() < 0.05 else rnd.randbytes(
                rnd.choice((0, 1, 11, 12, 13, 63, 64, 200, 9000)))
            hdrs = [(f"h{j}-é", None if rnd.random() < 0.3 else rnd.randbytes(j))
                    for j in range(rnd.choice((0, 0, 1, 4)))] if headers else None
            builder.append(1_700_000_000_000 + rnd.randrange(-5000, 100_000), key, value, hdrs)
        batch = bytearray(builder.build(compression=codec))
        rewrite_offsets(batch, 0, offset, 0)
        offset += count
        out += batch
    return bytes(out)


def _expected(raw: bytes, start: int, until: int) -> list[dict]:
    records: list = []
    decode_fetched(raw, "t", 2, start, records)
    return [{"key": r.key, "value": r.value, "topic": "t", "partition": 2,
             "offset": r.offset, "timestamp": r.timestamp, "timestampType": r.timestamp_type,
             # Spark's Kafka source: null, not [], for a record without headers
             "headers": [{"key": k, "value": v} for k, v in r.headers] or None}
            for r in records if r.offset < until]


def _actual(raw: bytes, start: int, until: int, headers: bool = True) -> list[dict]:
    batch = decode_chunk(raw, topic="t", partition=2, start=start, until=until,
                         include_headers=headers)
    if batch is None:
        return []
    assert batch.schema == arrow_schema(headers)
    rows = batch.to_pylist()
    for row in rows:
        row["timestamp"] = int(row["timestamp"].timestamp() * 1000)
    return rows


@pytest.mark.parametrize("codec", sorted(CODEC_BY_NAME))
def test_matches_record_decoder(codec: str) -> None:
    raw = _batches(CODEC_BY_NAME[codec], [1, 70, 300, 5], seed=len(codec))
    for start, until in ((0, 1 << 62), (1, 376), (40, 41), (371, 1 << 62), (500, 600)):
        assert _actual(raw, start, until) == _expected(raw, start, until)


def test_without_headers_column() -> None:
    raw = _batches(0, [50], seed=3)
    rows = _actual(raw, 0, 1 << 62, headers=False)
    assert [{k: v for k, v in r.items() if k != "headers"} for r in
            _expected(raw, 0, 1 << 62)] == rows


def test_offsets_past_the_first_batch_and_a_torn_tail() -> None:
    raw = _batches(4, [10, 10, 10], seed=5, base=1000)
    torn = raw[:-7]  # the broker cut the last batch at max_bytes
    assert [r["offset"] for r in _actual(torn, 1005, 1 << 62)] == list(range(1005, 1020))


def test_control_batches_are_skipped() -> None:
    data = bytearray(_batches(0, [3], seed=1) + _batches(0, [2], seed=2, base=3))
    # Mark the second batch as a control batch (transaction marker); attributes at byte 21,
    # and the CRC covers them, so the CRC check is off for this hand-made case.
    second = len(_batches(0, [3], seed=1))
    data[second + 22] |= CONTROL_MASK
    batch = decode_chunk(bytes(data), topic="t", partition=0, start=0, until=100,
                         check_crcs=False)
    assert batch is not None and batch.column("offset").to_pylist() == [0, 1, 2]


def test_corruption_is_detected() -> None:
    raw = bytearray(_batches(0, [20], seed=9))
    raw[200] ^= 0xFF
    with pytest.raises(CorruptRecord, match="CRC"):
        decode_chunk(bytes(raw), topic="t", partition=0, start=0, until=100)
    raw = bytearray(_batches(0, [20], seed=9))
    raw[61] ^= 0x06  # the first record's length: the records no longer match the batch
    with pytest.raises(CorruptRecord, match="batch"):
        decode_chunk(bytes(raw), topic="t", partition=0, start=0, until=100,
                     check_crcs=False)
