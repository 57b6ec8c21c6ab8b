"""Assignors as pure functions: the range assignor is the paper's Algorithm 1."""

from __future__ import annotations

import itertools

import pytest

from odradek.client.assignors import (
    Subscription,
    assign_cooperative_sticky,
    assign_range,
    assign_roundrobin,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from odradek.client.metadata import TopicPartition as TP


def subs(members: dict[str, list[str]]) -> dict[str, Subscription]:
    return {m: Subscription(t) for m, t in members.items()}


@pytest.mark.parametrize(("partitions", "consumers", "expected"), [
    # Algorithm 1: sorted partitions split in contiguous ranges over sorted consumers.
    (6, 3, {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]}),
    (7, 3, {"c0": [0, 1, 2], "c1": [3, 4], "c2": [5, 6]}),
    (2, 3, {"c0": [0], "c1": [1], "c2": []}),
    (4, 1, {"c0": [0, 1, 2, 3]}),
])
def test_range_is_algorithm_1(partitions: int, consumers: int,
                              expected: dict[str, list[int]]) -> None:
    members = subs({f"c{i}": ["t"] for i in reversed(range(consumers))})
    got = assign_range(members, {"t": partitions})
    assert {m: [tp.partition for tp in tps] for m, tps in got.items()} == expected


def test_range_is_per_topic_and_only_for_subscribers() -> None:
    got = assign_range(subs({"a": ["x", "y"], "b": ["x"]}), {"x": 2, "y": 2})
    assert got == {"a": [TP("x", 0), TP("y", 0), TP("y", 1)], "b": [TP("x", 1)]}


def test_roundrobin_deals_in_turn() -> None:
    got = assign_roundrobin(subs({"b": ["t"], "a": ["t"]}), {"t": 5})
    assert got == {"a": [TP("t", 0), TP("t", 2), TP("t", 4)], "b": [TP("t", 1), TP("t", 3)]}


def _owned_once(assignment: dict[str, list[TP]]) -> set[TP]:
    seen: set[TP] = set()
    for tps in assignment.values():
        assert not seen & set(tps), "a partition is assigned twice"
        seen |= set(tps)
    return seen


def test_cooperative_sticky_balanced_from_scratch() -> None:
    got = assign_cooperative_sticky(subs({"a": ["t"], "b": ["t"], "c": ["t"]}), {"t": 7})
    assert _owned_once(got) == {TP("t", p) for p in range(7)}
    assert sorted(len(v) for v in got.values()) == [2, 2, 3]


def test_cooperative_sticky_keeps_owned_and_withholds_moving_partitions() -> None:
    owned = [TP("t", p) for p in range(6)]
    members = {"a": Subscription(["t"], owned_partitions=owned, generation_id=1),
               "b": Subscription(["t"])}
    first = assign_cooperative_sticky(members, {"t": 6})
    # a keeps 3 of its partitions, gives up 3; b gets nothing yet (they are still a's).
    assert len(first["a"]) == 3 and set(first["a"]) <= set(owned)
    assert first["b"] == []
    # Next round (a revoked): b receives exactly what a gave up.
    members = {"a": Subscription(["t"], owned_partitions=first["a"], generation_id=2),
               "b": Subscription(["t"], owned_partitions=[], generation_id=2)}
    second = assign_cooperative_sticky(members, {"t": 6})
    assert second["a"] == first["a"]
    assert set(second["b"]) == set(owned) - set(first["a"])


@pytest.mark.parametrize("n_members", [1, 2, 3, 5])
def test_every_assignor_assigns_each_partition_exactly_once(n_members: int) -> None:
    members = subs({f"m{i}": ["x", "y"] for i in range(n_members)})
    for assign in (assign_range, assign_roundrobin, assign_cooperative_sticky):
        got = assign(members, {"x": 4, "y": 3})
        assert _owned_once(got) == {TP(t, p) for t, n in (("x", 4), ("y", 3))
                                    for p in range(n)}, assign.__name__


def test_subscription_and_assignment_round_trip() -> None:
    sub = Subscription(["b", "a"], b"ud", [TP("a", 1), TP("b", 0)], 4)
    for version in (0, 1, 2):
        back = decode_subscription(encode_subscription(sub, version))
        assert back.topics == ["a", "b"]
        if version >= 1:
            assert sorted(back.owned_partitions) == [TP("a", 1), TP("b", 0)]
    parts = [TP(t, p) for t, p in itertools.product("ab", range(3))]
    assert sorted(decode_assignment(encode_assignment(parts))) == parts
