"""Replica placement: Kafka's AdminUtils algorithm, checked by example and by property."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.cluster.assignment import (
    assign_new_partitions,
    assign_replicas,
    rack_alternated,
    validate_assignment,
)
from odradek.protocol.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
)


def no_racks(*ids: int) -> dict[int, str | None]:
    return dict.fromkeys(ids)


def test_fixed_start_reproduces_kafka_layout() -> None:
    # Kafka's AdminUtils with brokers 0-4, 10 partitions, RF 3, fixed start index 0.
    got = assign_replicas(no_racks(0, 1, 2, 3, 4), 10, 3, start_index=0, replica_shift=0)
    assert got == {
        0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
        5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2),
    }  # fmt: skip


def test_seed_rule_partition_i_leads_on_broker_i_mod_n() -> None:
    got = assign_replicas(no_racks(10, 20, 30), 6, 1, start_index=0, replica_shift=0)
    assert [got[p][0] for p in range(6)] == [10, 20, 30, 10, 20, 30]


def test_errors() -> None:
    with pytest.raises(InvalidReplicationFactor, match="larger than available brokers: 2"):
        assign_replicas(no_racks(1, 2), 1, 3)
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas(no_racks(1, 2), 1, 0)
    with pytest.raises(InvalidPartitions):
        assign_replicas(no_racks(1, 2), 0, 1)
    with pytest.raises(InvalidReplicaAssignment, match="rack"):
        assign_replicas({1: "a", 2: None}, 1, 1)


brokers_strategy = st.lists(st.integers(0, 50), min_size=1, max_size=9, unique=True)


@given(brokers_strategy, st.integers(1, 40), st.data())
def test_every_partition_gets_rf_distinct_live_replicas(
    brokers: list[int], partitions: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    got = assign_replicas(no_racks(*brokers), partitions, rf, rng=random.Random(0))
    assert sorted(got) == list(range(partitions))
    for replicas in got.values():
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert set(replicas) <= set(brokers)


@given(brokers_strategy, st.integers(1, 5), st.integers(0, 1000))
def test_leaders_and_replicas_spread_evenly(brokers: list[int], rounds: int, seed: int) -> None:
    n = len(brokers)
    rf = min(n, 3)
    got = assign_replicas(no_racks(*brokers), n * rounds, rf, rng=random.Random(seed))
    leaders = Counter(r[0] for r in got.values())
    assert set(leaders.values()) == {rounds}, f"leaders uneven: {leaders}"
    load = Counter(b for r in got.values() for b in r)
    assert set(load.values()) == {rounds * rf}, f"replicas uneven: {load}"


@given(
    st.dictionaries(st.integers(0, 30), st.sampled_from("abcd"), min_size=1, max_size=10),
    st.integers(1, 30),
    st.data(),
)
def test_rack_aware_spans_as_many_racks_as_possible(
    racks: dict[int, str], partitions: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(racks)))
    got = assign_replicas(dict(racks), partitions, rf, rng=random.Random(1))
    wanted_racks = min(rf, len(set(racks.values())))
    for replicas in got.values():
        assert len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == wanted_racks


def test_rack_alternated_interleaves_racks() -> None:
    assert rack_alternated({0: "a", 1: "a", 2: "b", 3: "c", 4: "c", 5: "b"}) == [0, 2, 3, 1, 5, 4]


def test_new_partitions_continue_the_topic_pattern() -> None:
    brokers = no_racks(1, 2, 3)
    existing = assign_replicas(brokers, 3, 2, start_index=1, replica_shift=1)
    added = assign_new_partitions(brokers, existing, 6)
    assert sorted(added) == [3, 4, 5]
    assert Counter(r[0] for r in {**existing, **added}.values()) == {1: 2, 2: 2, 3: 2}
    with pytest.raises(InvalidPartitions):
        assign_new_partitions(brokers, existing, 3)


def test_validate_assignment_rejects_malformed_input() -> None:
    live = {1, 2, 3}
    assert validate_assignment({0: [1, 2], 1: [2, 3]}, live) == {0: (1, 2), 1: (2, 3)}
    malformed: list[dict[int, list[int]]] = [
        {1: [1]},
        {0: [1, 1]},
        {0: [1], 1: [1, 2]},
        {0: [4]},
        {0: []},
    ]
    for bad in malformed:
        with pytest.raises(InvalidReplicaAssignment):
            validate_assignment(bad, live)
