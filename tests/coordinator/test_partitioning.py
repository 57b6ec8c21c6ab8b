import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.coordinator.partitioning import (
    java_string_hashcode,
    partition_for_group,
    partition_for_transactional_id,
)

# Values printed by a JVM (String.hashCode and Kafka's Utils.abs(h) % 50).
JAVA_GOLDEN = [
    ("", 0, 0),
    ("hello", 99162322, 22),
    ("my-group", -1906497762, 12),
    ("polygenelubricants", -(2**31), 0),
    ("console-consumer-12345", 158455506, 6),
    ("gr\u00fcppe-\U0001f600", -1039948164, 14),  # non-BMP counts as two UTF-16 units
]


@pytest.mark.parametrize(("text", "hashcode", "partition"), JAVA_GOLDEN)
def test_hashcode_and_partition_match_the_jvm(text: str, hashcode: int, partition: int) -> None:
    assert java_string_hashcode(text) == hashcode
    assert partition_for_group(text, 50) == partition
    assert partition_for_transactional_id(text, 50) == partition


@given(st.text(max_size=40), st.integers(min_value=1, max_value=200))
def test_partition_is_always_in_range(group_id: str, partitions: int) -> None:
    assert 0 <= partition_for_group(group_id, partitions) < partitions
    assert -(2**31) <= java_string_hashcode(group_id) < 2**31


def test_zero_partitions_is_rejected() -> None:
    with pytest.raises(ValueError):
        partition_for_group("g", 0)
