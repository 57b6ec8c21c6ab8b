"""Which ``__consumer_offsets`` partition (and so which broker) coordinates a group.

Kafka places a group on partition ``Utils.abs(groupId.hashCode()) % numPartitions``. To let a
cluster that mixes odradek and Kafka tooling agree on coordinators (and to read a Kafka data
directory's offsets topic), the hash is Java's ``String.hashCode`` bit for bit: it runs over
UTF-16 code units, so characters outside the Basic Multilingual Plane count as two, and
arithmetic wraps at 32 bits. Kafka's ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 rather than
overflowing.
"""

from __future__ import annotations

import functools

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "TRANSACTION_STATE_TOPIC",
    "java_string_hashcode",
    "kafka_abs",
    "partition_for_group",
    "partition_for_transactional_id",
]

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"

_INT_MIN = -(2**31)


def java_string_hashcode(text: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16, as int32."""
    value = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        value = (31 * value + ((encoded[index] << 8) | encoded[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def kafka_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: absolute value, except ``Integer.MIN_VALUE`` becomes 0."""
    return 0 if value == _INT_MIN else abs(value)


@functools.lru_cache(maxsize=16_384)
def partition_for_group(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition whose leader coordinates ``group_id``.

    Memoized: every group request routes through it, and the Java hash is a per-character
    Python loop (a few percent of an OffsetCommit's CPU before the cache)."""
    if num_partitions <= 0:
        raise ValueError(f"offsets topic needs at least one partition, got {num_partitions}")
    return kafka_abs(java_string_hashcode(group_id)) % num_partitions


def partition_for_transactional_id(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition for a transactional id (same rule as groups)."""
    return partition_for_group(transactional_id, num_partitions)
