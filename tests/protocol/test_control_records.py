"""Transaction marker batches: Kafka's control record layout, and refusal of anything else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.protocol.control_records import (
    ControlType,
    TxnMarker,
    encode_marker_batch,
    read_marker,
)
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.records import Record, decode_batch, encode_batch, validate_batches


@given(
    producer_id=st.integers(0, 2**63 - 1),
    epoch=st.integers(0, 2**15 - 1),
    commit=st.booleans(),
    coordinator_epoch=st.integers(-1, 2**31 - 1),
)
def test_marker_round_trips(producer_id: int, epoch: int, commit: bool,
                            coordinator_epoch: int) -> None:
    marker = TxnMarker(producer_id, epoch, ControlType(int(commit)), coordinator_epoch)
    data = encode_marker_batch(marker, 1_700_000_000_000)
    assert read_marker(data) == marker


def test_marker_batch_has_kafka_layout() -> None:
    data = encode_marker_batch(TxnMarker(7, 3, ControlType.COMMIT, 11), 5)
    [(_pos, header)] = validate_batches(data)  # CRC valid
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 3, -1)
    assert header.record_count == 1
    _header, [record] = decode_batch(data)
    assert record.key == b"\x00\x00\x00\x01"  # version 0, type COMMIT
    assert record.value == b"\x00\x00\x00\x00\x00\x0b"  # version 0, coordinator epoch 11
    abort = encode_marker_batch(TxnMarker(7, 3, ControlType.ABORT, 11), 5)
    assert decode_batch(abort)[1][0].key == b"\x00\x00\x00\x00"


def _control_batch(key: bytes | None, value: bytes | None) -> bytes:
    return encode_batch([Record(timestamp=0, key=key, value=value)], producer_id=1,
                        producer_epoch=0, is_transactional=True, is_control=True)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"\x00\x00\x00\x05", b"\x00\x00\x00\x00\x00\x00"),  # unknown control type
        (b"\x00\x00", b"\x00\x00\x00\x00\x00\x00"),  # key too short
        (b"\x00\x00\x00\x01", b"\x00\x00"),  # value too short
        (None, None),
    ],
)
def test_malformed_control_records_are_refused(key: bytes | None, value: bytes | None) -> None:
    with pytest.raises(CorruptRecord):
        read_marker(_control_batch(key, value))


def test_longer_key_and_value_of_a_later_version_are_read() -> None:
    data = _control_batch(b"\x00\x01\x00\x00\xff", b"\x00\x01\x00\x00\x00\x02\xff\xff")
    assert read_marker(data) == TxnMarker(1, 0, ControlType.ABORT, 2)


def test_data_batch_is_not_a_marker() -> None:
    data = encode_batch([Record(timestamp=0, key=b"k", value=b"v")])
    with pytest.raises(CorruptRecord):
        read_marker(data)
