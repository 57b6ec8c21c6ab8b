"""murmur2 and the default partitioner match the Java client (and so librdkafka's
``murmur2_random``) byte for byte."""

from __future__ import annotations

import random

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from odradek.client.partitioner import DefaultPartitioner, murmur2, partition_for_key

# Values from the Java client's UtilsTest (Utils.murmur2 on UTF-8 bytes).
JAVA_VECTORS = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string":
                -985981536, b"a-little-bit-longer-string": -1486304829,
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
                b"abc": 479470107}


@pytest.mark.parametrize("key", sorted(JAVA_VECTORS))
def test_murmur2_matches_java_vectors(key: bytes) -> None:
    assert murmur2(key) == JAVA_VECTORS[key]


def test_murmur2_matches_kafka_python_for_10k_random_keys() -> None:
    rng = random.Random(7)
    for _ in range(10_000):
        key = rng.randbytes(rng.randrange(0, 64))
        ours = murmur2(key) & 0x7FFFFFFF
        theirs = kafka_python_murmur2(bytearray(key)) & 0x7FFFFFFF
        assert ours == theirs, f"murmur2({key!r}): ours {ours}, kafka-python {theirs}"


def test_to_positive_masks_sign_bit_not_abs() -> None:
    key = b"foobar"  # murmur2 is negative
    assert partition_for_key(key, 7) == (murmur2(key) & 0x7FFFFFFF) % 7
    assert partition_for_key(key, 7) == 0
    assert abs(murmur2(key)) % 7 == 2  # what a naive abs() would pick instead


def test_keyless_records_stick_until_batch_rolls() -> None:
    partitioner = DefaultPartitioner()
    first = partitioner.partition("t", None, [0, 1, 2], [0, 1, 2])
    assert all(partitioner.partition("t", None, [0, 1, 2], [0, 1, 2]) == first
               for _ in range(100))
    partitioner.on_new_batch("t", first, [0, 1, 2])
    assert partitioner.partition("t", None, [0, 1, 2], [0, 1, 2]) != first


def test_custom_partitioner_is_called() -> None:
    partitioner = DefaultPartitioner(lambda topic, key, all_, avail: len(key or b"") % 2)
    assert partitioner.partition("t", b"abc", [0, 1], [0, 1]) == 1
