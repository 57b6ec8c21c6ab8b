"""The goal-based rebalance planner (decisions/rebalance.py), without a cluster.

Examples pin what a reviewer sees for small clusters; hypothesis checks the promises for any
cluster: replication factors and distinct brokers kept, rack awareness never broken, moves
only where the mode allows, removed brokers emptied, every goal's measure no worse than
before (the first goal's), and the same input giving the same plan."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from odradek_operator.decisions.rebalance import (
    DEFAULT_GOALS,
    ClusterModel,
    Goal,
    Mode,
    PlanError,
    propose,
)
from odradek_operator.decisions.rebalance_phase import (
    Action,
    Command,
    Phase,
    next_action,
    parse_command,
)
from odradek_operator.errors import InvalidSpec
from odradek_operator.spec import RebalanceSpec


def applied(model: ClusterModel, moves: dict[tuple[str, int], tuple[int, ...]]
            ) -> dict[tuple[str, int], tuple[int, ...]]:
    return {tp: moves.get(tp, replicas) for tp, replicas in model.assignment.items()}


def test_new_brokers_take_an_even_share_and_leaders_spread() -> None:
    assignment = {("t", p): ((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(12)}
    model = ClusterModel(racks={1: None, 2: None, 3: None, 4: None, 5: None},
                         assignment=assignment, sizes={tp: 100 for tp in assignment})
    plan = propose(model, mode=Mode.ADD_BROKERS, brokers=[4, 5])
    after = applied(model, plan.moves)
    counts = Counter(b for replicas in after.values() for b in replicas)
    assert all(4 <= n <= 6 for n in counts.values())  # 24 replicas on 5: 4.8 ± 10%
    assert {4, 5} <= set(counts)
    assert plan.after.replicas == dict(counts)
    assert plan.data_to_move_bytes == 100 * plan.replica_moves
    assert plan.before.replicas == {1: 8, 2: 8, 3: 8, 4: 0, 5: 0}
    leaders = Counter(replicas[0] for replicas in after.values())
    assert all(2 <= n <= 3 for n in leaders.values())  # 12 leaders on 5
    assert plan.unmet == ()


def test_a_partition_in_one_rack_is_spread_over_racks() -> None:
    model = ClusterModel(racks={1: "a", 2: "a", 3: "b", 4: "b"},
                         assignment={("t", 0): (1, 2), ("t", 1): (3, 4)})
    plan = propose(model, goals=[Goal.RACK_AWARE])
    after = applied(model, plan.moves)
    for replicas in after.values():
        assert {model.racks[b] for b in replicas} == {"a", "b"}
    assert plan.before.rack_violations == 2 and plan.after.rack_violations == 0
    assert all(after[tp][0] == model.assignment[tp][0] for tp in after)  # leaders stay


def test_disk_usage_balances_by_swapping_when_counts_are_already_even() -> None:
    assignment = {("big", 0): (1,), ("big", 1): (1,), ("small", 0): (2,), ("small", 1): (2,)}
    sizes = {("big", 0): 1000, ("big", 1): 1000, ("small", 0): 10, ("small", 1): 10}
    model = ClusterModel(racks={1: None, 2: None}, assignment=assignment, sizes=sizes)
    plan = propose(model, threshold=0.0)  # replica counts must stay exactly even
    after = applied(model, plan.moves)
    assert Counter(b for r in after.values() for b in r) == {1: 2, 2: 2}
    assert plan.after.disk_bytes == {1: 1010, 2: 1010}
    assert plan.data_to_move_bytes == 1010
    assert Goal.DISK_USAGE_DISTRIBUTION not in plan.unmet


def test_removing_brokers_empties_them_keeping_racks() -> None:
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    assignment = {("t", p): (p % 6 + 1, (p + 1) % 6 + 1, (p + 2) % 6 + 1) for p in range(18)}
    model = ClusterModel(racks=racks, assignment=assignment)
    plan = propose(model, mode=Mode.REMOVE_BROKERS, brokers=[6])
    after = applied(model, plan.moves)
    assert all(6 not in replicas for replicas in after.values())
    assert plan.after.rack_violations == 0
    assert 6 not in plan.after.replicas


def test_impossible_requests_say_why() -> None:
    model = ClusterModel(racks={1: None, 2: None, 3: None},
                         assignment={("t", 0): (1, 2, 3)})
    with pytest.raises(PlanError, match=r"topics \['t'\] need more replicas"):
        propose(model, mode=Mode.REMOVE_BROKERS, brokers=[3])
    with pytest.raises(PlanError, match="needs the brokers"):
        propose(model, mode=Mode.ADD_BROKERS)
    with pytest.raises(PlanError, match=r"brokers \[9\] are not live"):
        propose(model, mode=Mode.ADD_BROKERS, brokers=[9])


def test_partitions_being_moved_are_left_alone() -> None:
    assignment = {("t", 0): (1, 2, 3), ("t", 1): (1, 2)}  # t-0 lists old and new replicas
    model = ClusterModel(racks={1: None, 2: None, 3: None, 4: None}, assignment=assignment)
    plan = propose(model)
    assert ("t", 0) not in plan.moves


@st.composite
def clusters(draw: st.DrawFn) -> tuple[ClusterModel, Mode, list[int]]:
    broker_count = draw(st.integers(2, 7))
    brokers = list(range(1, broker_count + 1))
    with_racks = draw(st.booleans())
    racks = {b: (draw(st.sampled_from("abc")) if with_racks else None) for b in brokers}
    assignment: dict[tuple[str, int], tuple[int, ...]] = {}
    sizes: dict[tuple[str, int], int] = {}
    for topic in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, min(3, broker_count)))
        for partition in range(draw(st.integers(1, 8))):
            replicas = draw(st.permutations(brokers))[:rf]
            assignment[(f"t{topic}", partition)] = tuple(replicas)
            sizes[(f"t{topic}", partition)] = draw(st.integers(0, 10_000))
    mode = draw(st.sampled_from(Mode))
    named: list[int] = []
    if mode is Mode.ADD_BROKERS:
        named = draw(st.lists(st.sampled_from(brokers), min_size=1, unique=True))
    elif mode is Mode.REMOVE_BROKERS:
        most_rf = max(len(r) for r in assignment.values())
        removable = broker_count - most_rf
        if removable < 1:
            mode = Mode.FULL
        else:
            named = draw(st.lists(st.sampled_from(brokers), min_size=1, max_size=removable,
                                  unique=True))
    return ClusterModel(racks=racks, assignment=assignment, sizes=sizes), mode, named


@settings(max_examples=300, deadline=None)
@given(clusters(), st.permutations(DEFAULT_GOALS))
def test_a_plan_keeps_every_promise(case: tuple[ClusterModel, Mode, list[int]],
                                    goals: list[Goal]) -> None:
    model, mode, named = case
    plan = propose(model, mode=mode, brokers=named, goals=goals)
    after = applied(model, plan.moves)
    racks = model.racks
    all_racked = all(r is not None for r in racks.values())
    usable = len({racks[b] for b in racks if not (mode is Mode.REMOVE_BROKERS and b in named)})
    for tp, replicas in after.items():
        old = model.assignment[tp]
        assert len(replicas) == len(old) == len(set(replicas))  # rf kept: min.insync holds
        assert set(replicas) <= set(racks)
        if all_racked:  # rack awareness never lost, only gained
            assert len({racks[b] for b in replicas}) >= min(
                len({racks[b] for b in old}), usable)
        added = set(replicas) - set(old)
        if mode is Mode.ADD_BROKERS:
            assert added <= set(named)
        if mode is Mode.REMOVE_BROKERS:
            assert not set(replicas) & set(named)
    assert plan.after.rack_violations <= plan.before.rack_violations or (
        mode is Mode.REMOVE_BROKERS)
    # The first goal ends inside its band, or at least no wider than it began (later goals
    # yield to it).
    first = goals[0]
    spread = {Goal.REPLICA_DISTRIBUTION: "replicas", Goal.LEADER_REPLICA_DISTRIBUTION: "leaders",
              Goal.DISK_USAGE_DISTRIBUTION: "disk_bytes"}
    if first in spread and mode is Mode.FULL:
        def width(counts: dict[int, int]) -> int:
            return max(counts.values()) - min(counts.values())
        assert first not in plan.unmet or width(getattr(plan.after, spread[first])) <= width(
            getattr(plan.before, spread[first]))
    if first is Goal.REPLICA_DISTRIBUTION and mode is Mode.FULL and not all_racked:
        assert first not in plan.unmet  # nothing stands in its way
    assert propose(model, mode=mode, brokers=named, goals=goals) == plan  # deterministic


# -- the resource's life (decisions/rebalance_phase.py) and its spec ------------------------

PHASES = [None, *Phase]


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("command", [None, *Command])
@pytest.mark.parametrize("spec_changed", [False, True])
def test_nothing_moves_without_approval_and_a_running_rebalance_only_stops(
        phase: Phase | None, command: Command | None, spec_changed: bool) -> None:
    action = next_action(phase, command, spec_changed)
    assert (action is Action.EXECUTE) == (phase is Phase.PROPOSAL_READY
                                          and command is Command.APPROVE and not spec_changed)
    if phase is Phase.REBALANCING:
        assert action is (Action.STOP if command is Command.STOP else Action.WATCH)
    elif phase is None or spec_changed or command is Command.REFRESH:
        assert action is Action.PROPOSE


def test_the_annotation_and_spec_are_checked() -> None:
    assert parse_command(" Approve ") is Command.APPROVE and parse_command(None) is None
    with pytest.raises(ValueError, match="use one of approve, stop, refresh"):
        parse_command("go")
    ref = {"clusterRef": {"name": "odradek"}}
    spec = RebalanceSpec.parse({**ref, "mode": "add-brokers", "brokers": [4, 3, 4]})
    assert spec.brokers == (3, 4) and spec.goals == tuple(DEFAULT_GOALS)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"mode": "add-brokers"}, "required for modes"),
        ({"brokers": [1]}, "not allowed for full"),
        ({"goals": ["CpuGoal"]}, "unknown goal"),
        ({"mode": "shuffle"}, "spec.mode must be one of")]
    for bad, message in cases:
        with pytest.raises(InvalidSpec, match=message):
            RebalanceSpec.parse({**ref, **bad})
