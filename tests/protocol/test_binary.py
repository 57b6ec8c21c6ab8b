"""The hand-laid format reader: truncated or impossible input is the caller's error type."""

from __future__ import annotations

import pytest

from odradek.protocol.binary import BinaryReader, BinaryWriter, TruncatedData
from odradek.protocol.consumer_protocol import (
    MalformedConsumerProtocol,
    Subscription,
    decode_subscription,
    encode_subscription,
    subscribed_topics,
)
from odradek.types import TopicPartition


class Custom(ValueError):
    pass


def test_fields_round_trip_through_writer_and_reader() -> None:
    writer = BinaryWriter()
    writer.int16(-2)
    writer.int32(70000)
    writer.int64(-(2**40))
    writer.string("héllo")
    writer.string(None)
    writer.bytes_(b"\x00\x01")
    writer.bytes_(None)
    reader = BinaryReader(bytes(writer.out))
    assert (reader.int16(), reader.int32(), reader.int64()) == (-2, 70000, -(2**40))
    assert (reader.string(), reader.nullable_string()) == ("héllo", None)
    assert (reader.bytes_(), reader.nullable_bytes()) == (b"\x00\x01", None)
    assert not reader.more


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x05ab", b"\x7f\xff"])
def test_truncated_string_raises_the_callers_error(data: bytes) -> None:
    with pytest.raises(Custom):
        BinaryReader(data, error=Custom).string()


def test_array_count_beyond_the_data_is_refused_before_looping() -> None:
    with pytest.raises(TruncatedData, match="cannot fit"):
        BinaryReader(b"\x7f\xff\xff\xff\x00").array_length()


def test_compact_lengths_and_tagged_fields_in_flexible_mode() -> None:
    # compact string "ab" (len + 1 = 3), then one tagged field (tag 5, 2 bytes), then int16
    reader = BinaryReader(b"\x03ab\x01\x05\x02xy\x00\x07", flexible=True)
    assert reader.string() == "ab"
    reader.skip_tagged_fields()
    assert reader.int16() == 7


def test_over_long_varint_is_refused() -> None:
    with pytest.raises(TruncatedData, match="longer than 5 bytes"):
        BinaryReader(b"\xff\xff\xff\xff\xff\x01", flexible=True).uvarint()


def test_subscription_round_trips_and_hostile_ones_are_malformed() -> None:
    sub = Subscription(["b", "a"], b"u", [TopicPartition("a", 1)], generation_id=4)
    decoded = decode_subscription(encode_subscription(sub, version=2))
    assert decoded == Subscription(["a", "b"], b"u", [TopicPartition("a", 1)], 4)
    hostile = b"\x00\x01\x7f\xff\xff\xff"
    with pytest.raises(MalformedConsumerProtocol):
        decode_subscription(hostile)
    assert subscribed_topics(hostile) is None
    assert subscribed_topics(encode_subscription(sub)) == frozenset({"a", "b"})
