"""The Produce ``acks`` values: the three Kafka knows, and INVALID_REQUIRED_ACKS for others."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from odradek.protocol.errors import InvalidRequiredAcks
from odradek.replication import Acks


@pytest.mark.parametrize(("wire", "acks"), [(-1, Acks.ALL), (0, Acks.NONE), (1, Acks.LEADER)])
def test_the_three_wire_values_are_the_three_acks(wire: int, acks: Acks) -> None:
    assert Acks.from_wire(wire) is acks


@pytest.mark.parametrize("wire", [2, -2, 32767, -32768])
def test_any_other_value_is_invalid_required_acks(wire: int) -> None:
    with pytest.raises(InvalidRequiredAcks) as raised:
        Acks.from_wire(wire)
    assert raised.value.code == ErrorCode.invalid_required_acks
    assert str(raised.value) == f"acks={wire}"
