"""Goal-based rebalancing: a proposal a person reviews before anything moves.

The planner behind the Rebalance resource, in the spirit of Cruise Control (which Strimzi's
KafkaRebalance drives): ordered **goals**, each optimized in turn by moves that keep every
earlier goal as it was left, so an earlier goal always wins a conflict.

Goals (Cruise Control's names, so a Strimzi user reads them as before):

- ``RackAwareGoal``: a partition's replicas span ``min(rf, racks)`` racks. Whatever the goal
  order, no move ever lowers the number of racks a partition spans, so a plan never breaks
  rack awareness that holds today.
- ``ReplicaDistributionGoal``: every broker's replica count within ``threshold`` (10%) of
  the mean.
- ``DiskUsageDistributionGoal``: every broker's bytes within ``threshold`` of the mean (or
  within one replica of average size, where replicas are that coarse), sizes taken from the
  brokers' own metrics.
- ``LeaderReplicaDistributionGoal``: every broker's preferred-leader count (first replicas)
  within ``threshold`` of the mean. It reorders replica lists only: no data moves for it.

As Cruise Control's balance thresholds, a goal is met inside its band and the planner moves
nothing further for it: every move costs a copy of the partition, so it stops at "balanced
enough" rather than at perfect.

Modes, as Strimzi's: ``full`` (any broker may give or take replicas), ``add-brokers``
(replicas move only onto the named new brokers) and ``remove-brokers`` (every replica on the
named brokers moves off first; impossible when a topic's replication factor exceeds the
brokers that stay).

A plan keeps each partition's replication factor and distinct brokers, so min.insync.replicas
holds throughout: the executor (AlterPartitionReassignments) adds the new replicas before it
drops the old ones. Partitions in the middle of a move are left alone. Every choice is
deterministic (ties by id, then partition) so a retried reconcile proposes the same plan; every
loop is bounded by the number of replicas.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from .placement import Assignment, TopicPartitionKey, mid_move, replication_factors

__all__ = [
    "DEFAULT_GOALS",
    "Balance",
    "ClusterModel",
    "Goal",
    "Mode",
    "PlanError",
    "Proposal",
    "propose",
]


class Goal(StrEnum):
    RACK_AWARE = "RackAwareGoal"
    REPLICA_DISTRIBUTION = "ReplicaDistributionGoal"
    DISK_USAGE_DISTRIBUTION = "DiskUsageDistributionGoal"
    LEADER_REPLICA_DISTRIBUTION = "LeaderReplicaDistributionGoal"


DEFAULT_GOALS = (Goal.RACK_AWARE, Goal.REPLICA_DISTRIBUTION, Goal.DISK_USAGE_DISTRIBUTION,
                 Goal.LEADER_REPLICA_DISTRIBUTION)


class Mode(StrEnum):
    FULL = "full"
    ADD_BROKERS = "add-brokers"
    REMOVE_BROKERS = "remove-brokers"


class PlanError(ValueError):
    """No plan can satisfy the request (the message says why, for the resource's status)."""


@dataclass(frozen=True)
class ClusterModel:
    """What the planner sees: live brokers and their racks (None: no ``broker.rack``), the
    assignment (first replica = preferred leader) and each partition's size in bytes."""

    racks: Mapping[int, str | None]
    assignment: Assignment
    sizes: Mapping[TopicPartitionKey, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Balance:
    """Per-broker replica, preferred-leader and byte counts, and partitions spanning fewer
    racks than they could: what status shows before and after."""

    replicas: dict[int, int]
    leaders: dict[int, int]
    disk_bytes: dict[int, int]
    rack_violations: int

    def summary(self) -> dict[str, object]:
        def spread(counts: dict[int, int]) -> dict[str, int]:
            values = list(counts.values()) or [0]
            return {"min": min(values), "max": max(values)}
        return {"replicasPerBroker": spread(self.replicas),
                "leadersPerBroker": spread(self.leaders),
                "diskBytesPerBroker": spread(self.disk_bytes),
                "rackViolations": self.rack_violations}


@dataclass(frozen=True)
class Proposal:
    moves: dict[TopicPartitionKey, tuple[int, ...]]  # new replica lists, changed ones only
    replica_moves: int  # replicas placed on a broker that did not hold them
    leader_moves: int  # partitions whose preferred leader changes
    data_to_move_bytes: int
    before: Balance
    after: Balance
    unmet: tuple[Goal, ...]  # goals still not satisfied after the plan (best effort)


def propose(model: ClusterModel, *, mode: Mode = Mode.FULL, brokers: Iterable[int] = (),
            goals: Sequence[Goal] = DEFAULT_GOALS, threshold: float = 0.10) -> Proposal:
    """The moves that best satisfy ``goals`` in order. ``brokers`` names the added or removed
    brokers in those modes. Raises :class:`PlanError` for a request no plan can meet."""
    named = set(brokers)
    live = set(model.racks)
    if mode is not Mode.FULL and not named:
        raise PlanError(f"mode {mode} needs the brokers it adds or removes")
    if named - live:
        raise PlanError(f"brokers {sorted(named - live)} are not live")
    if mode is Mode.FULL and named:
        raise PlanError("mode full takes no brokers")
    if len(set(goals)) != len(goals):
        raise PlanError("a goal is listed twice")
    targets = sorted(named) if mode is Mode.ADD_BROKERS else sorted(live - named)
    if mode is Mode.REMOVE_BROKERS:
        short = {t: rf for t, rf in replication_factors(model.assignment).items()
                 if rf > len(targets)}
        if short:
            raise PlanError(f"topics {sorted(short)} need more replicas than the "
                            f"{len(targets)} brokers that would remain")
    state = _State(model, targets, removing=mode is Mode.REMOVE_BROKERS,
                   threshold=threshold)
    before = state.balance()
    if mode is Mode.REMOVE_BROKERS:
        state.evacuate(sorted(named))
    done: list[Goal] = []
    for goal in goals:
        _OPTIMIZERS[goal](state, tuple(done))
        done.append(goal)
    return state.proposal(before, goals)


class _State:
    """The assignment being edited, with per-broker counters kept in step with it."""

    def __init__(self, model: ClusterModel, targets: list[int], *, removing: bool,
                 threshold: float) -> None:
        busy = mid_move(model.assignment)
        self.original = {tp: tuple(r) for tp, r in model.assignment.items()}
        self.replicas = {tp: list(r) for tp, r in sorted(model.assignment.items())
                         if tp not in busy}
        self.sizes = {tp: max(0, int(model.sizes.get(tp, 0))) for tp in model.assignment}
        self.racks = dict(model.racks)
        self.target_set = set(targets)
        # Brokers that hold replicas once the plan ran: the staying ones when removing.
        self.holders = sorted(self.target_set if removing else self.racks)
        self.threshold = threshold
        self.rack_aware = bool(self.racks) and all(r is not None for r in self.racks.values())
        self.usable_racks = len({self.racks[b] for b in self.holders})
        self.count: Counter[int] = Counter({b: 0 for b in self.racks})
        self.leaders: Counter[int] = Counter({b: 0 for b in self.racks})
        self.disk: Counter[int] = Counter({b: 0 for b in self.racks})
        self.hosted: dict[int, set[TopicPartitionKey]] = {b: set() for b in self.racks}
        for tp, replicas in model.assignment.items():
            for index, broker in enumerate(replicas):
                if broker in self.count:
                    if tp in self.replicas:
                        self.hosted[broker].add(tp)  # a replica on a dead broker counts for nobody
                    self.count[broker] += 1
                    self.disk[broker] += self.sizes[tp]
                    self.leaders[broker] += index == 0

    # -- edits -------------------------------------------------------------------------------

    def move(self, tp: TopicPartitionKey, source: int, target: int) -> None:
        replicas = self.replicas[tp]
        index = replicas.index(source)
        replicas[index] = target
        self.hosted[source].discard(tp)
        self.hosted[target].add(tp)
        size = self.sizes[tp]
        self.count[source] -= 1
        self.count[target] += 1
        self.disk[source] -= size
        self.disk[target] += size
        if index == 0:
            self.leaders[source] -= 1
            self.leaders[target] += 1

    def by_load(self, load: Counter[int], *, reverse: bool = False) -> list[int]:
        """Targets from least to most loaded, or (``reverse``) every broker holding
        replicas from most to least: the order moves are tried in (ties by id)."""
        if reverse:
            return sorted((b for b in self.racks if self.hosted[b]), key=lambda b: (-load[b], b))
        return sorted(self.target_set, key=lambda b: (load[b], b))

    def lead(self, tp: TopicPartitionKey, broker: int) -> None:
        replicas = self.replicas[tp]
        self.leaders[replicas[0]] -= 1
        self.leaders[broker] += 1
        replicas.remove(broker)
        replicas.insert(0, broker)

    # -- rules -------------------------------------------------------------------------------

    def rack_count(self, replicas: Iterable[int]) -> int:
        return len({self.racks.get(b) for b in replicas}) if self.rack_aware else 0

    def rack_violation(self, tp: TopicPartitionKey) -> bool:
        replicas = self.replicas[tp]
        return self.rack_aware and self.rack_count(replicas) < min(len(replicas),
                                                                   self.usable_racks)

    def allowed(self, tp: TopicPartitionKey, source: int, target: int,
                kept: tuple[Goal, ...]) -> bool:
        """May one replica of ``tp`` move from ``source`` to ``target``, keeping every goal
        already optimized (``kept``) and rack awareness as it is?"""
        replicas = self.replicas[tp]
        if target not in self.target_set or target in replicas:
            return False
        after = [target if b == source else b for b in replicas]
        if self.rack_count(after) < self.rack_count(replicas):
            return False
        if Goal.REPLICA_DISTRIBUTION in kept:
            low, high = self.bounds(self.count)
            if self.count[target] + 1 > high or (source in self.target_set
                                                  and self.count[source] - 1 < low):
                return False
        if Goal.DISK_USAGE_DISTRIBUTION in kept:
            size = self.sizes[tp]
            worst = max(self.disk_deviation(source, 0), self.disk_deviation(target, 0))
            limit = max(worst, self.disk_allowance())
            if max(self.disk_deviation(source, -size),
                   self.disk_deviation(target, size)) > limit:
                return False
        return not (Goal.LEADER_REPLICA_DISTRIBUTION in kept and replicas[0] == source)

    def bounds(self, load: Counter[int]) -> tuple[int, int]:
        """The band a broker's count must lie in: the mean ± ``threshold``, widened to whole
        counts (so it always holds the mean's floor and ceiling)."""
        mean = sum(load.values()) / len(self.holders)
        return math.floor(mean * (1 - self.threshold)), math.ceil(mean * (1 + self.threshold))

    def disk_mean(self) -> float:
        return sum(self.disk.values()) / len(self.holders)

    def disk_allowance(self) -> float:
        """How far from the mean a broker may be: the threshold, or one replica of average
        size where replicas are too coarse to do better (24 equal replicas on 5 brokers)."""
        replica = sum(self.disk.values()) / max(1, sum(self.count.values()))
        return max(self.disk_mean() * self.threshold, replica)

    def disk_deviation(self, broker: int, delta: int) -> float:
        return abs(self.disk[broker] + delta - self.disk_mean())

    # -- results -----------------------------------------------------------------------------

    def balance(self) -> Balance:
        brokers = self.holders
        return Balance(
            replicas={b: self.count[b] for b in brokers},
            leaders={b: self.leaders[b] for b in brokers},
            disk_bytes={b: self.disk[b] for b in brokers},
            rack_violations=sum(self.rack_violation(tp) for tp in self.replicas))

    def satisfied(self, goal: Goal) -> bool:
        holders = self.holders
        if goal is Goal.RACK_AWARE:
            return not any(self.rack_violation(tp) for tp in self.replicas)
        if goal is Goal.REPLICA_DISTRIBUTION or goal is Goal.LEADER_REPLICA_DISTRIBUTION:
            load = self.count if goal is Goal.REPLICA_DISTRIBUTION else self.leaders
            low, high = self.bounds(load)
            return all(low <= load[b] <= high for b in holders)
        allowance = self.disk_allowance()
        return all(self.disk_deviation(b, 0) <= allowance for b in holders)

    def proposal(self, before: Balance, goals: Sequence[Goal]) -> Proposal:
        moves = {tp: tuple(r) for tp, r in self.replicas.items() if tuple(r) != self.original[tp]}
        added = {tp: set(new) - set(self.original[tp]) for tp, new in moves.items()}
        return Proposal(
            moves=moves,
            replica_moves=sum(len(a) for a in added.values()),
            leader_moves=sum(new[0] != self.original[tp][0] for tp, new in moves.items()),
            data_to_move_bytes=sum(self.sizes[tp] * len(a) for tp, a in added.items()),
            before=before, after=self.balance(),
            unmet=tuple(g for g in goals if not self.satisfied(g)))

    def evacuate(self, leaving: list[int]) -> None:
        """Every replica on a removed broker moves to the least-loaded staying broker that
        keeps the partition's racks (a rack it lacks first)."""
        for tp, replicas in self.replicas.items():
            for source in [b for b in replicas if b in leaving]:
                held = {self.racks.get(b) for b in replicas if b != source}
                options = sorted((self.racks[b] in held, self.count[b], b)
                                 for b in self.holders if b not in replicas)
                if not options:
                    raise PlanError(f"partition {tp[0]}-{tp[1]} has no broker left to move to")
                self.move(tp, source, options[0][2])


# -- one optimizer per goal: each edits the state with moves ``allowed`` under ``kept`` -------


def _rack_aware(state: _State, kept: tuple[Goal, ...]) -> None:
    """Move a replica that shares its rack (the last such, so the leader stays) to the
    least-loaded broker of a rack the partition lacks."""
    if not state.rack_aware:
        return
    for tp, replicas in state.replicas.items():
        while state.rack_violation(tp):
            racks = [state.racks.get(b) for b in replicas]
            move = next(((source, target)
                         for source in reversed(replicas)
                         if racks.count(state.racks.get(source)) > 1
                         for target in state.by_load(state.count)
                         if state.racks[target] not in racks
                         and state.allowed(tp, source, target, kept)), None)
            if move is None:
                break
            state.move(tp, *move)


def _replica_distribution(state: _State, kept: tuple[Goal, ...]) -> None:
    """Out of brokers above the band and into brokers below it, most- to least-loaded:
    followers before preferred leaders, small partitions first (less to copy)."""
    for _ in range(sum(state.count.values()) + 1):
        low, high = state.bounds(state.count)
        move = next(((tp, source, target)
                     for source in state.by_load(state.count, reverse=True)
                     for tp in sorted(state.hosted[source], key=lambda tp: (
                         state.replicas[tp][0] == source, state.sizes[tp], tp))
                     for target in state.by_load(state.count)
                     if _needed(state.count, source, target, low, high)
                     and state.allowed(tp, source, target, kept)), None)
        if move is None:
            return
        state.move(*move)


def _needed(load: Counter[int], source: int, target: int, low: int, high: int) -> bool:
    """Does a unit from ``source`` to ``target`` bring one of them into the band without
    pushing the other out of it?"""
    return ((load[source] > high or load[target] < low) and load[source] - load[target] >= 2
            and load[target] + 1 <= high and load[source] - 1 >= low)


def _disk_usage(state: _State, kept: tuple[Goal, ...]) -> None:
    """From the fullest broker to the emptiest: one replica whose size narrows the gap, or,
    when a move would upset a goal already met (replica counts), a swap of a larger replica
    for a smaller one."""
    for _ in range(sum(state.count.values()) + 1):
        if state.satisfied(Goal.DISK_USAGE_DISTRIBUTION):
            return
        if not (_disk_move(state, kept) or _disk_swap(state, kept)):
            return


def _disk_pairs(state: _State) -> list[tuple[int, int, int]]:
    return [(source, target, state.disk[source] - state.disk[target])
            for source in state.by_load(state.disk, reverse=True)
            for target in state.by_load(state.disk)
            if state.disk[source] > state.disk[target]]


def _disk_move(state: _State, kept: tuple[Goal, ...]) -> bool:
    for source, target, gap in _disk_pairs(state):
        fits = sorted((abs(2 * state.sizes[tp] - gap), tp) for tp in state.hosted[source]
                      if 0 < state.sizes[tp] < gap)
        for _, tp in fits:
            if state.allowed(tp, source, target, kept):
                state.move(tp, source, target)
                return True
    return False


_SWAP_WIDTH = 32  # replicas of each side considered for a swap (bounds the search)


def _disk_swap(state: _State, kept: tuple[Goal, ...]) -> bool:
    counts_kept = tuple(g for g in kept if g is not Goal.REPLICA_DISTRIBUTION)
    for source, target, gap in _disk_pairs(state):
        if target not in state.target_set or source not in state.target_set:
            continue
        larger = sorted(state.hosted[source] - state.hosted[target],
                        key=lambda tp: (-state.sizes[tp], tp))[:_SWAP_WIDTH]
        smaller = sorted(state.hosted[target] - state.hosted[source],
                         key=lambda tp: (state.sizes[tp], tp))[:_SWAP_WIDTH]
        options = sorted((abs(2 * (state.sizes[a] - state.sizes[b]) - gap), a, b)
                         for a in larger for b in smaller
                         if 0 < state.sizes[a] - state.sizes[b] < gap)
        for _, a, b in options:
            # Replica counts stay as they are across the pair, so only the other goals and
            # the racks decide; the second move is checked on the state after the first.
            if state.allowed(a, source, target, counts_kept):
                state.move(a, source, target)
                if state.allowed(b, target, source, counts_kept):
                    state.move(b, target, source)
                    return True
                state.move(a, target, source)
    return False


def _leader_distribution(state: _State, kept: tuple[Goal, ...]) -> None:
    """Make another replica of a partition its preferred leader, out of brokers leading more
    than the band allows and into brokers leading fewer. Replica sets do not change."""
    del kept  # reordering replicas moves no data and changes no other goal's measure
    for _ in range(len(state.replicas) + 1):
        low, high = state.bounds(state.leaders)
        move = next(((tp, other)
                     for source in state.by_load(state.leaders, reverse=True)
                     for tp in sorted(state.hosted[source])
                     if state.replicas[tp][0] == source
                     for other in sorted(state.replicas[tp][1:], key=state.leaders.__getitem__)
                     if _needed(state.leaders, source, other, low, high)), None)
        if move is None:
            return
        state.lead(*move)


_OPTIMIZERS = {
    Goal.RACK_AWARE: _rack_aware,
    Goal.REPLICA_DISTRIBUTION: _replica_distribution,
    Goal.DISK_USAGE_DISTRIBUTION: _disk_usage,
    Goal.LEADER_REPLICA_DISTRIBUTION: _leader_distribution,
}
