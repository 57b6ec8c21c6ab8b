"""Where replicas go: scale-down drains, scale-up rebalances, replication-factor changes.

Every function takes the current assignment (``{(topic, partition): (broker, ...)}``, first
replica = preferred leader) and returns only the partitions whose replica list changes — the
body of one AlterPartitionReassignments request. Choices are deterministic (least-loaded
broker first, ties by id) so a retried reconcile proposes the same moves.

A replacement keeps the position of the replica it replaces, so the preferred leader stays
put unless it is the one leaving.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "Assignment",
    "DrainPlan",
    "broker_load",
    "mid_move",
    "plan_drain",
    "plan_rebalance",
    "plan_replication_factor",
]

TopicPartitionKey = tuple[str, int]
Assignment = Mapping[TopicPartitionKey, tuple[int, ...]]


def broker_load(assignment: Assignment, brokers: Iterable[int]) -> Counter[int]:
    load: Counter[int] = Counter({b: 0 for b in brokers})
    for replicas in assignment.values():
        load.update(r for r in replicas if r in load)
    return load


def replication_factors(assignment: Assignment) -> dict[str, int]:
    """Each topic's replication factor: its smallest replica list. A partition being moved
    lists old and new replicas together for a while (and metadata can show that union a
    moment after the reassignment itself is listed as done), so the largest would be wrong."""
    factors: dict[str, int] = {}
    for (topic, _), replicas in assignment.items():
        factors[topic] = min(factors.get(topic, len(replicas)), len(replicas))
    return factors


def mid_move(assignment: Assignment) -> set[TopicPartitionKey]:
    """Partitions listing more replicas than their topic's replication factor: a move whose
    old replicas are still being removed."""
    factors = replication_factors(assignment)
    return {tp for tp, replicas in assignment.items() if len(replicas) > factors[tp[0]]}


def _least_loaded(load: Counter[int], candidates: Iterable[int], exclude: Iterable[int]
                  ) -> int | None:
    excluded = set(exclude)
    options = sorted((load[b], b) for b in candidates if b not in excluded)
    return options[0][1] if options else None


@dataclass(frozen=True)
class DrainPlan:
    """Moves that empty ``leaving`` brokers, or why that is impossible."""

    moves: dict[TopicPartitionKey, tuple[int, ...]]
    impossible: dict[str, int]  # topic -> its replication factor, when > remaining brokers

    @property
    def possible(self) -> bool:
        return not self.impossible


def plan_drain(assignment: Assignment, leaving: Iterable[int], remaining: Iterable[int]
               ) -> DrainPlan:
    """Replace every replica on a ``leaving`` broker by the least-loaded remaining broker
    not already holding that partition. Refused (``impossible``) for any topic whose
    replication factor exceeds the number of remaining brokers."""
    leaving_set, remaining_list = set(leaving), sorted(set(remaining) - set(leaving))
    impossible = {topic: rf for topic, rf in replication_factors(assignment).items()
                  if rf > len(remaining_list)}
    if impossible:
        return DrainPlan({}, dict(sorted(impossible.items())))
    load = broker_load(assignment, remaining_list)
    moves: dict[TopicPartitionKey, tuple[int, ...]] = {}
    for tp in sorted(assignment):
        replicas = list(assignment[tp])
        if not leaving_set & set(replicas):
            continue
        for index, broker in enumerate(replicas):
            if broker in leaving_set:
                target = _least_loaded(load, remaining_list, replicas)
                assert target is not None  # guaranteed by the replication-factor check
                replicas[index] = target
                load[target] += 1
        moves[tp] = tuple(replicas)
    return DrainPlan(moves, {})


def plan_rebalance(assignment: Assignment, brokers: Iterable[int]
                   ) -> dict[TopicPartitionKey, tuple[int, ...]]:
    """Even out replica counts (after new brokers joined): repeatedly move one replica from
    the most- to the least-loaded broker until they differ by at most one. Follower replicas
    move before preferred leaders, so leadership moves as little as possible."""
    broker_list = sorted(set(brokers))
    if not broker_list:
        return {}
    load = broker_load(assignment, broker_list)
    current = {tp: list(r) for tp, r in assignment.items()}
    changed: set[TopicPartitionKey] = set()
    while True:
        heaviest = max(broker_list, key=lambda b: (load[b], -b))
        lightest = min(broker_list, key=lambda b: (load[b], b))
        if load[heaviest] - load[lightest] <= 1:
            break
        candidates = [(replicas.index(heaviest) == 0, tp) for tp, replicas in current.items()
                      if heaviest in replicas and lightest not in replicas]
        if not candidates:
            break
        _, tp = min(candidates)
        replicas = current[tp]
        replicas[replicas.index(heaviest)] = lightest
        load[heaviest] -= 1
        load[lightest] += 1
        changed.add(tp)
    return {tp: tuple(current[tp]) for tp in sorted(changed)
            if tuple(current[tp]) != tuple(assignment[tp])}


def plan_replication_factor(assignment: Assignment, topic: str, replication_factor: int,
                            brokers: Iterable[int]) -> dict[TopicPartitionKey, tuple[int, ...]]:
    """New replica lists for ``topic`` at ``replication_factor``: growing appends the
    least-loaded brokers, shrinking drops replicas from the end (the preferred leader stays).
    Raises ValueError when there are fewer brokers than the factor asks for."""
    broker_list = sorted(set(brokers))
    if replication_factor > len(broker_list):
        raise ValueError(f"replication factor {replication_factor} needs at least that many "
                         f"brokers; the cluster has {len(broker_list)}")
    load = broker_load(assignment, broker_list)
    moves: dict[TopicPartitionKey, tuple[int, ...]] = {}
    for tp in sorted(k for k in assignment if k[0] == topic):
        replicas = list(assignment[tp])
        if len(replicas) == replication_factor:
            continue
        while len(replicas) > replication_factor:
            load[replicas.pop()] -= 1
        while len(replicas) < replication_factor:
            target = _least_loaded(load, broker_list, replicas)
            assert target is not None
            replicas.append(target)
            load[target] += 1
        moves[tp] = tuple(replicas)
    return moves
