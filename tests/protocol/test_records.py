"""RecordBatch v2 codec: round trips, validation, legacy conversion, codecs."""

from __future__ import annotations

import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol import compression
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.legacy_records import convert_legacy_message_set, encode_legacy_message
from odradek.protocol.record_encoding import append_record, encode_records
from odradek.protocol.records import (
    BATCH_HEADER_SIZE,
    CorruptBatch,
    Record,
    decode_batch,
    decode_batches,
    encode_batch,
    is_legacy_message_set,
    iter_batch_headers,
    parse_batch_header,
    rewrite_offsets,
    validate_batches,
)

records_strategy = st.lists(
    st.builds(
        Record,
        timestamp=st.integers(0, 2**45),
        key=st.none() | st.binary(max_size=50),
        value=st.none() | st.binary(max_size=300),
        headers=st.lists(
            st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3
        ),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(
    records=records_strategy,
    codec=st.sampled_from([0, 1, 2, 3, 4]),
    base_offset=st.integers(0, 2**40),
    producer=st.tuples(st.integers(-1, 2**40), st.integers(-1, 300), st.integers(-1, 2**30)),
)
def test_encode_decode_round_trip_for_every_codec(
    records: list[Record], codec: int, base_offset: int, producer: tuple[int, int, int]
) -> None:
    data = encode_batch(
        records,
        base_offset=base_offset,
        compression=codec,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
    )
    [(position, header)] = validate_batches(data)
    assert position == 0 and header.size == len(data)
    assert header.compression == codec
    assert header.record_count == len(records) and header.last_offset_delta == len(records) - 1
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == producer
    decoded_header, decoded = decode_batch(data)
    assert decoded_header == header
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (base_offset + i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)
    ]


plain_records_strategy = st.lists(
    st.builds(
        Record,
        timestamp=st.integers(0, 2**45) | st.just(-1),
        key=st.none() | st.binary(max_size=50) | st.binary(min_size=16_380, max_size=16_400),
        value=st.none() | st.binary(max_size=300) | st.binary(min_size=16_370, max_size=16_390),
        headers=st.lists(
            st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=2
        ) | st.just([]),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(records=plain_records_strategy, base=st.integers(-1, 2**45))
def test_encode_records_writes_the_bytes_of_the_per_record_encoder(
    records: list[Record], base: int
) -> None:
    """The inline path (key, value, no headers, small fields) and the fallback must both
    write exactly what append_record writes, record after record."""
    expected = bytearray()
    for index, record in enumerate(records):
        append_record(expected, record.timestamp - base, index, record.key, record.value,
                      record.headers)
    body, max_ts = encode_records(records, base)
    assert body == bytes(expected)
    assert max_ts == max((r.timestamp for r in records), default=-1)


def test_encode_records_covers_offset_deltas_past_the_varint_table() -> None:
    records = [Record(timestamp=7, key=b"k", value=b"v") for _ in range(16_400)]
    expected = bytearray()
    for index, record in enumerate(records):
        append_record(expected, 0, index, record.key, record.value, record.headers)
    assert encode_records(records, 7) == (bytes(expected), 7)
    decoded = decode_batch(encode_batch(records))[1]
    assert [r.offset for r in decoded] == list(range(16_400))


def test_header_layout_matches_the_spec() -> None:
    data = encode_batch(
        [Record(timestamp=1000, value=b"x")],
        base_offset=7,
        partition_leader_epoch=3,
        producer_id=11,
        producer_epoch=2,
        base_sequence=5,
        compression=1,
    )
    assert struct.unpack_from(">q", data, 0)[0] == 7
    assert struct.unpack_from(">i", data, 8)[0] == len(data) - 12
    assert struct.unpack_from(">i", data, 12)[0] == 3
    assert data[16] == 2
    assert struct.unpack_from(">h", data, 21)[0] & 7 == 1
    assert struct.unpack_from(">q", data, 43)[0] == 11
    assert struct.unpack_from(">h", data, 51)[0] == 2
    assert struct.unpack_from(">i", data, 53)[0] == 5
    assert struct.unpack_from(">i", data, 57)[0] == 1
    assert BATCH_HEADER_SIZE == 61


def test_rewriting_offset_and_epoch_keeps_the_crc_valid() -> None:
    data = bytearray(encode_batch([Record(value=b"a"), Record(value=b"b")]))
    rewrite_offsets(data, 0, 123456789, 42)
    [(_p, header)] = validate_batches(data)
    assert (header.base_offset, header.partition_leader_epoch) == (123456789, 42)


def test_every_flipped_byte_after_the_crc_is_detected() -> None:
    data = encode_batch([Record(key=b"k", value=b"value" * 10)] * 3)
    for position in range(21, len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 0x01
        with pytest.raises(CorruptRecord):
            validate_batches(damaged)


def test_torn_and_impossible_framing() -> None:
    one = encode_batch([Record(value=b"abc")])
    two = one + one
    assert [p for p, _h in iter_batch_headers(two)] == [0, len(one)]
    with pytest.raises(CorruptBatch) as torn:
        list(iter_batch_headers(two[:-1]))
    assert torn.value.position == len(one)
    with pytest.raises(CorruptBatch):
        list(iter_batch_headers(one[:30]))
    bad_length = bytearray(one)
    struct.pack_into(">i", bad_length, 8, 10)
    with pytest.raises(CorruptBatch):
        list(iter_batch_headers(bad_length))
    with pytest.raises(CorruptBatch):
        parse_batch_header(one, len(one) - 10)


def test_legacy_message_sets_convert_to_one_v2_batch() -> None:
    messages = encode_legacy_message(b"a", b"1", magic=1, timestamp=99)
    messages += encode_legacy_message(None, None, magic=1, timestamp=100)
    assert is_legacy_message_set(messages)
    converted = convert_legacy_message_set(messages)
    assert not is_legacy_message_set(converted)
    [(header, records)] = list(decode_batches(converted))
    assert header.magic == 2
    assert [(r.key, r.value, r.timestamp) for r in records] == [(b"a", b"1", 99), (None, None, 100)]


def test_compressed_legacy_wrapper_is_unwrapped() -> None:
    inner = encode_legacy_message(b"k", b"v1", magic=1, timestamp=5, offset=0)
    inner += encode_legacy_message(b"k", b"v2", magic=1, timestamp=6, offset=1)
    wrapped_value = compression.compress(1, inner)
    body = struct.pack(">bbq", 1, 1, 6) + struct.pack(">i", -1)
    body += struct.pack(">i", len(wrapped_value)) + wrapped_value
    import zlib

    wrapper = struct.pack(">qiI", 1, len(body) + 4, zlib.crc32(body)) + body
    [(header, records)] = list(decode_batches(convert_legacy_message_set(wrapper)))
    assert header.compression == 1
    assert [r.value for r in records] == [b"v1", b"v2"]


def test_legacy_crc_mismatch_is_corrupt() -> None:
    message = bytearray(encode_legacy_message(b"k", b"v"))
    message[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        convert_legacy_message_set(bytes(message))


def test_snappy_accepts_xerial_and_raw_and_writes_xerial() -> None:
    payload = b"hello snappy " * 10000
    framed = compression.compress(2, payload)
    assert framed.startswith(b"\x82SNAPPY\x00")
    assert compression.decompress(2, framed) == payload
    raw = bytes(cramjam.snappy.compress_raw(payload))
    assert compression.decompress(2, raw) == payload


def test_lz4_and_zstd_use_the_standard_frame_formats() -> None:
    assert compression.compress(3, b"x" * 100).startswith(b"\x04\x22\x4d\x18")
    assert compression.compress(4, b"x" * 100).startswith(b"\x28\xb5\x2f\xfd")


def test_garbage_compressed_payload_is_corrupt_record() -> None:
    for codec in (1, 2, 3, 4):
        with pytest.raises(CorruptRecord):
            compression.decompress(codec, b"\x00not compressed at all")


def test_lz4_frames_use_independent_blocks_as_kafkas_java_reader_requires() -> None:
    frame = compression.compress(3, bytes(range(256)) * 2000)
    flags = frame[4]
    assert flags & 0x20, "the FLG byte must set Block Independence (Java rejects linked blocks)"
    assert compression.decompress(3, frame) == bytes(range(256)) * 2000
