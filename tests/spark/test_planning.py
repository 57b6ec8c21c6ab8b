"""Offset planning without a cluster: range splitting, Spark's rate limit, offset JSON."""

from __future__ import annotations

from itertools import pairwise

from odradek.client import TopicPartition
from odradek.spark.planning import OffsetRange, from_json, rate_limit, split_ranges, to_json

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_split_by_max_records_and_min_partitions() -> None:
    ranges = [OffsetRange("a", 0, 0, 100), OffsetRange("a", 1, 5, 5),
              OffsetRange("b", 0, 10, 15)]
    assert split_ranges(ranges) == [OffsetRange("a", 0, 0, 100), OffsetRange("b", 0, 10, 15)]
    pieces = split_ranges(ranges, max_records=30)
    assert [(r.start, r.end) for r in pieces] == [(0, 25), (25, 50), (50, 75), (75, 100),
                                                  (10, 15)]
    pieces = split_ranges(ranges, min_partitions=8)
    assert len(pieces) >= 8 and sum(r.size for r in pieces) == 105
    assert all(a.end == b.start for a, b in pairwise(pieces)
               if a.partition == b.partition and a.topic == b.topic)


def test_rate_limit_is_sparks_proportional_split() -> None:
    starts = {A0: 0, A1: 0, B0: 100}
    latest = {A0: 1000, A1: 10, B0: 101}
    assert rate_limit(starts, latest, 5000) == latest
    limited = rate_limit(starts, latest, 100)
    # backlog 1000 / 10 / 1 of 1011: floor(98.9), floor(0.99) -> ceil (no starving), ceil(0.1)
    assert limited == {A0: 98, A1: 1, B0: 101}
    assert rate_limit({A0: 7}, {A0: 5}, 10) == {A0: 5}  # offsets went back: left to report


def test_offset_json_round_trip() -> None:
    offsets = {A1: 5, A0: 3, B0: 9}
    assert to_json(offsets) == {"a": {"0": 3, "1": 5}, "b": {"0": 9}}
    assert from_json(to_json(offsets)) == offsets
    assert from_json('{"a": {"1": 2}}') == {A1: 2}
