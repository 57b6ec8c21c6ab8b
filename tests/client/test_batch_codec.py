"""The client's batch builder/decoder agree with the protocol package's reference codec."""

from __future__ import annotations

import pytest

from odradek.client.batch_codec import RecordsBuilder, decode_fetched
from odradek.protocol import compression as codecs
from odradek.protocol.records import Record, decode_batches, encode_batch


def _builder(n: int) -> RecordsBuilder:
    builder = RecordsBuilder()
    for i in range(n):
        builder.append(1_000 + i * 70_000, None if i % 3 == 0 else b"k%d" % i,
                       b"v" * (i % 300) if i % 11 else None,
                       [("h", b"x"), ("n", None)] if i % 7 == 0 else None)
    return builder


@pytest.mark.parametrize("codec", range(5))
def test_built_batch_decodes_with_reference_codec(codec: int) -> None:
    raw = _builder(500).build(compression=codec, producer_id=9, producer_epoch=1,
                              base_sequence=77)
    (header, records), = list(decode_batches(raw))
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 1, 77)
    assert header.compression == codec and header.record_count == 500
    out: list = []
    assert decode_fetched(raw, "t", 0, 0, out) == 500
    assert [(r.key, r.value, r.headers, r.timestamp, r.offset) for r in out] == \
        [(r.key, r.value, r.headers, r.timestamp, r.offset) for r in records]


def test_lz4_uses_independent_blocks_that_java_accepts() -> None:
    frame = codecs.compress(codecs.LZ4, b"abc" * 100_000)
    assert frame[:4] == b"\x04\x22\x4d\x18"
    assert frame[4] & 0x20, "FLG block-independence bit must be set for Kafka's reader"
    assert codecs.decompress(codecs.LZ4, frame) == b"abc" * 100_000


def test_decode_skips_records_below_fetch_offset_and_control_batches() -> None:
    data = encode_batch([Record(timestamp=1, value=b"%d" % i) for i in range(10)],
                        base_offset=100)
    control = encode_batch([Record(timestamp=1, key=b"\x00\x00\x00\x00", value=b"")],
                           base_offset=110, is_control=True)
    out: list = []
    next_offset = decode_fetched(data + control + data[:30], "t", 0, 105, out)
    assert [r.offset for r in out] == [105, 106, 107, 108, 109]
    assert next_offset == 111  # past the control batch; the torn tail is ignored


def test_incremental_builder_and_encode_batch_write_identical_bytes() -> None:
    builder = _builder(300)
    records = [Record(timestamp=1_000 + i * 70_000, key=None if i % 3 == 0 else b"k%d" % i,
                      value=b"v" * (i % 300) if i % 11 else None,
                      headers=[("h", b"x"), ("n", None)] if i % 7 == 0 else [])
               for i in range(300)]
    for codec in (0, 4):
        assert builder.build(compression=codec, producer_id=5, producer_epoch=2,
                             base_sequence=10) == encode_batch(
            records, compression=codec, producer_id=5, producer_epoch=2, base_sequence=10)


def test_append_value_fast_path_writes_the_same_bytes_as_append() -> None:
    # Small and large deltas (a clock step back, a gap past the varint table), empty, small
    # and table-sized values: the inline encoder or its fallback, always append's bytes.
    timestamps = [5_000, 5_001, 4_000, 5_000 + 20_000, 5_002, 5_003]
    values = [b"", b"v" * 100, b"w" * 16_370, b"x" * 20_000, b"y", b"z" * 127]
    fast, slow = RecordsBuilder(), RecordsBuilder()
    for timestamp, value in zip(timestamps, values, strict=True):
        before = len(fast.buffer)
        added = fast.append_value(timestamp, value)
        assert added == len(fast.buffer) - before
        slow.append(timestamp, None, value, None)
    assert fast.buffer == slow.buffer
    assert (fast.count, fast.base_timestamp, fast.max_timestamp) == \
        (slow.count, slow.base_timestamp, slow.max_timestamp)
