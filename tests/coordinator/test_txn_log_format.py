"""``__transaction_state`` keys and values: Kafka's byte layout, round trips, refusals."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.coordinator.txn_log_format import (
    MalformedTransactionRecord,
    TxnLogValue,
    TxnStatus,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)
from odradek.types import TopicPartition

partitions = st.frozensets(
    st.builds(TopicPartition, st.text(min_size=1, max_size=8), st.integers(0, 2**31 - 1)),
    max_size=8,
)
values = st.builds(
    TxnLogValue,
    st.integers(-1, 2**63 - 1),
    st.integers(-1, 2**15 - 1),
    st.integers(0, 2**31 - 1),
    st.sampled_from(TxnStatus),
    partitions,
    st.integers(-1, 2**62),
    st.integers(-1, 2**62),
)


@given(st.text(max_size=40), values)
def test_keys_and_values_round_trip(transactional_id: str, value: TxnLogValue) -> None:
    assert decode_txn_key(encode_txn_key(transactional_id)) == transactional_id
    assert decode_txn_value(encode_txn_value(value)) == value


def test_value_v0_is_kafkas_layout() -> None:
    value = TxnLogValue(producer_id=5, producer_epoch=2, timeout_ms=60000,
                        status=TxnStatus.ONGOING,
                        partitions=frozenset({TopicPartition("b", 1), TopicPartition("a", 3),
                                              TopicPartition("b", 0)}),
                        last_update_ms=9, start_ms=8)
    expected = (
        struct.pack(">hqhib", 0, 5, 2, 60000, 1)
        + struct.pack(">i", 2)
        + struct.pack(">h", 1) + b"a" + struct.pack(">ii", 1, 3)
        + struct.pack(">h", 1) + b"b" + struct.pack(">iii", 2, 0, 1)
        + struct.pack(">qq", 9, 8)
    )
    assert encode_txn_value(value) == expected
    assert encode_txn_key("tx") == b"\x00\x00\x00\x02tx"


def test_flexible_v1_value_with_tagged_fields_is_read() -> None:
    # compact array of 1 topic ("t", ids [4]), unknown tagged field at the end
    data = (
        struct.pack(">hqhib", 1, 7, 0, 1000, 4)
        + bytes([2]) + bytes([2]) + b"t" + bytes([2]) + struct.pack(">i", 4) + bytes([0])
        + struct.pack(">qq", 11, 10)
        + bytes([1, 0, 2, 0xAB, 0xCD])
    )
    value = decode_txn_value(data)
    assert value == TxnLogValue(7, 0, 1000, TxnStatus.COMPLETE_COMMIT,
                                frozenset({TopicPartition("t", 4)}), 11, 10)


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">h", 2) + bytes(40),  # unknown value version
        struct.pack(">hqhib", 0, 1, 0, 1, 9) + bytes(20),  # unknown status
        struct.pack(">hqhib", 0, 1, 0, 1, 0),  # truncated
        struct.pack(">hqhib", 0, 1, 0, 1, 0) + struct.pack(">i", 2**30),  # impossible array
    ],
)
def test_malformed_values_are_refused(data: bytes) -> None:
    with pytest.raises(MalformedTransactionRecord):
        decode_txn_value(data)


def test_unknown_key_version_is_refused() -> None:
    with pytest.raises(MalformedTransactionRecord):
        decode_txn_key(b"\x00\x01\x00\x01x")
