"""Choosing a partition: Java-compatible murmur2 for keys, sticky for keyless records.

Keyed records go to ``toPositive(murmur2(key)) % numPartitions`` over *all* partitions (not
only available ones), exactly like the Java client's ``BuiltInPartitioner`` and librdkafka's
``murmur2_random``, so the same key lands in the same partition whichever client wrote it.

Keyless records stick to one partition until its batch is sent, then move to another random
available partition (KIP-480): batches fill up instead of one tiny batch per partition.

A custom partitioner is any callable ``(topic, key, all_partitions, available_partitions) ->
int``.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence

from .metadata import TopicPartition

__all__ = ["DefaultPartitioner", "PartitionerFn", "murmur2", "partition_for_key"]

PartitionerFn = Callable[[str, bytes | None, Sequence[int], Sequence[int]], int]

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """The Java client's ``Utils.murmur2`` (MurmurHash2, seed 0x9747b28c) as a signed int32."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length & ~3
    if whole:
        for k in struct.unpack_from(f"<{whole // 4}I", data):
            k = (k * _M) & _MASK
            k ^= k >> 24
            k = (k * _M) & _MASK
            h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """``toPositive(murmur2(key)) % num_partitions`` (Java's ``Utils.toPositive`` masks the
    sign bit; it is not ``abs``)."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class DefaultPartitioner:
    """murmur2 for keys, sticky-random for keyless records, or a user callable."""

    def __init__(self, custom: PartitionerFn | None = None) -> None:
        self._custom = custom
        self._sticky: dict[str, int] = {}
        #: The sticky partition of each topic as a ready-made TopicPartition (the producer's
        #: keyless fast path reads it instead of building one per record).
        self.sticky_tp: dict[str, TopicPartition] = {}

    def partition(self, topic: str, key: bytes | None, all_partitions: Sequence[int],
                  available: Sequence[int]) -> int:
        if self._custom is not None:
            return self._custom(topic, key, all_partitions, available)
        if key is not None:
            return partition_for_key(key, len(all_partitions))
        sticky = self._sticky.get(topic)
        if sticky is None:
            sticky = self._choose(topic, available or all_partitions, None)
        return sticky

    def on_new_batch(self, topic: str, previous: int, available: Sequence[int]) -> None:
        """The sticky partition's batch was closed: move keyless records elsewhere."""
        if self._sticky.get(topic) == previous:
            self._choose(topic, available, previous)

    def _choose(self, topic: str, candidates: Sequence[int], avoid: int | None) -> int:
        choices = [p for p in candidates if p != avoid] or list(candidates)
        chosen = random.choice(choices)
        self._sticky[topic] = chosen
        self.sticky_tp[topic] = TopicPartition(topic, chosen)
        return chosen
