"""Golden bytes derived by hand from Kafka's group coordinator record schemas."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.coordinator.offsets_topic_format import (
    GroupMetadataKey,
    GroupMetadataValue,
    MalformedOffsetsRecord,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_offset_commit_key_bytes() -> None:
    key = OffsetCommitKey("grp", "topic", 7)
    expected = b"\x00\x01" + b"\x00\x03grp" + b"\x00\x05topic" + b"\x00\x00\x00\x07"
    assert encode_offset_commit_key(key) == expected
    assert decode_key(expected) == key


def test_group_metadata_key_bytes() -> None:
    expected = b"\x00\x02\x00\x03grp"
    assert encode_group_metadata_key(GroupMetadataKey("grp")) == expected
    assert decode_key(expected) == GroupMetadataKey("grp")


def test_offset_commit_value_v3_bytes() -> None:
    value = OffsetCommitValue(offset=42, metadata="md", commit_timestamp=1_700_000_000_000,
                              leader_epoch=5)
    expected = (
        b"\x00\x03"
        + struct.pack(">q", 42)
        + struct.pack(">i", 5)
        + b"\x00\x02md"
        + struct.pack(">q", 1_700_000_000_000)
    )
    assert encode_offset_commit_value(value) == expected
    assert decode_offset_commit_value(expected) == value


def test_offset_commit_value_with_expiry_is_version_1() -> None:
    value = OffsetCommitValue(offset=1, metadata="", commit_timestamp=10, expire_timestamp=99)
    expected = (b"\x00\x01" + struct.pack(">q", 1) + b"\x00\x00" + struct.pack(">q", 10)
                + struct.pack(">q", 99))
    assert encode_offset_commit_value(value) == expected
    assert decode_offset_commit_value(expected) == value


def test_old_offset_value_versions_decode() -> None:
    v0 = b"\x00\x00" + struct.pack(">q", 3) + b"\x00\x01x" + struct.pack(">q", 4)
    assert decode_offset_commit_value(v0) == OffsetCommitValue(3, "x", 4)
    # Version 4 (flexible): compact string (length + 1), then an empty tagged-field section.
    v4 = (b"\x00\x04" + struct.pack(">q", 3) + struct.pack(">i", 2) + b"\x02x"
          + struct.pack(">q", 4) + b"\x00")
    assert decode_offset_commit_value(v4) == OffsetCommitValue(3, "x", 4, leader_epoch=2)


def test_group_metadata_value_v3_bytes() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=3,
        protocol="range",
        leader="m1",
        current_state_timestamp=1234,
        members=(
            MemberMetadata(member_id="m1", group_instance_id=None, client_id="c",
                           client_host="/h", rebalance_timeout=300, session_timeout=100,
                           subscription=b"\x01\x02", assignment=b"\x03"),
        ),
    )
    expected = (
        b"\x00\x03" + s16("consumer") + struct.pack(">i", 3) + s16("range") + s16("m1")
        + struct.pack(">q", 1234) + struct.pack(">i", 1)
        + s16("m1") + b"\xff\xff" + s16("c") + s16("/h")
        + struct.pack(">i", 300) + struct.pack(">i", 100)
        + struct.pack(">i", 2) + b"\x01\x02" + struct.pack(">i", 1) + b"\x03"
    )
    assert encode_group_metadata_value(value) == expected
    assert decode_group_metadata_value(expected) == value


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    value = GroupMetadataValue("consumer", 4, None, None, ())
    encoded = encode_group_metadata_value(value)
    assert encoded == (b"\x00\x03" + s16("consumer") + struct.pack(">i", 4) + b"\xff\xff"
                       + b"\xff\xff" + struct.pack(">q", -1) + struct.pack(">i", 0))
    assert decode_group_metadata_value(encoded) == value


def test_group_metadata_v0_decodes_without_newer_fields() -> None:
    v0 = (b"\x00\x00" + s16("consumer") + struct.pack(">i", 1) + s16("range") + s16("m")
          + struct.pack(">i", 1) + s16("m") + s16("c") + s16("h") + struct.pack(">i", 100)
          + struct.pack(">i", 0) + struct.pack(">i", 0))
    decoded = decode_group_metadata_value(v0)
    assert decoded.current_state_timestamp == -1
    assert decoded.members[0].rebalance_timeout == -1
    assert decoded.members[0].session_timeout == 100


def test_unknown_key_versions_are_skippable_and_truncation_is_an_error() -> None:
    assert decode_key(b"\x00\x05\x00\x00") == UnknownKey(5)
    with pytest.raises(MalformedOffsetsRecord):
        decode_key(b"\x00\x01\x00\x09gr")
    with pytest.raises(MalformedOffsetsRecord):
        decode_offset_commit_value(b"\x00\x09")


names = st.text(max_size=20)
member_st = st.builds(
    MemberMetadata,
    member_id=names, client_id=names, client_host=names,
    session_timeout=st.integers(0, 2**31 - 1), subscription=st.binary(max_size=30),
    assignment=st.binary(max_size=30), rebalance_timeout=st.integers(0, 2**31 - 1),
    group_instance_id=st.none() | names,
)


@given(st.builds(GroupMetadataValue, protocol_type=names, generation=st.integers(0, 2**31 - 1),
                 protocol=st.none() | names, leader=st.none() | names,
                 members=st.lists(member_st, max_size=4).map(tuple),
                 current_state_timestamp=st.integers(-1, 2**62)))
def test_group_metadata_round_trip(value: GroupMetadataValue) -> None:
    assert decode_group_metadata_value(encode_group_metadata_value(value)) == value


@given(names, names, st.integers(0, 2**31 - 1), st.integers(-1, 2**62), st.integers(-1, 2**31 - 1))
def test_offset_round_trip(group: str, topic: str, partition: int, offset: int, epoch: int) -> None:
    key = OffsetCommitKey(group, topic, partition)
    assert decode_key(encode_offset_commit_key(key)) == key
    value = OffsetCommitValue(offset, topic, 5, epoch)
    assert decode_offset_commit_value(encode_offset_commit_value(value)) == value
