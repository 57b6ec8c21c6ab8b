"""Server-side partition assignors of KIP-848 consumer groups: ``uniform`` and ``range``.

With the consumer group protocol the coordinator, not a group leader, computes the *target
assignment*: which partitions each member should own once the group has converged. An
assignor is a pure function of the members' subscriptions, the partition counts of the
subscribed topics and the previous target (so that it can be sticky). A member names the
assignor it wants with ``group.remote.assignor``; the group uses the one most members ask
for, or the broker's first ``group.consumer.assignors`` entry when nobody asks (as Kafka's
``GroupMetadataManager`` does).

* ``uniform`` (Kafka's ``UniformAssignor``): balances the number of partitions per member
  and keeps each member's previous partitions where that does not unbalance the group.
* ``range`` (Kafka's ``RangeAssignor``): per topic, the subscribed members sorted by id get
  contiguous ranges, the first ``partitions % members`` one partition more. Members with
  the same subscriptions thus get the same partition numbers of co-partitioned topics.

Nothing here checks that a partition is free: that is reconciliation's job
(:mod:`odradek.coordinator.reconciliation`); the assignors only say where partitions go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from odradek.types import TopicPartition

__all__ = ["ASSIGNORS", "AssignmentSpec", "assignor_names", "range_assign", "uniform_assign"]

Assignment = dict[str, frozenset[TopicPartition]]


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    """What an assignor decides from.

    ``subscriptions`` maps each member to the topics it is subscribed to that exist
    (regular expressions already resolved); ``partition_counts`` holds those topics'
    partition counts; ``previous`` is the current target assignment.
    """

    subscriptions: Mapping[str, frozenset[str]]
    partition_counts: Mapping[str, int]
    previous: Mapping[str, frozenset[TopicPartition]]


def range_assign(spec: AssignmentSpec) -> Assignment:
    result: dict[str, set[TopicPartition]] = {m: set() for m in spec.subscriptions}
    for topic in sorted(spec.partition_counts):
        members = sorted(m for m, topics in spec.subscriptions.items() if topic in topics)
        if not members:
            continue
        count = spec.partition_counts[topic]
        base, extra = divmod(count, len(members))
        start = 0
        for index, member in enumerate(members):
            size = base + (1 if index < extra else 0)
            result[member].update(TopicPartition(topic, p) for p in range(start, start + size))
            start += size
    return {m: frozenset(tps) for m, tps in result.items()}


def uniform_assign(spec: AssignmentSpec) -> Assignment:
    """Balanced and sticky. First a greedy pass that places the most constrained partitions
    (fewest subscribed members) on the least loaded member gives each member its quota; then
    members keep what they had, up to their quota, and the rest fills the gaps."""
    members = sorted(spec.subscriptions)
    candidates = {
        TopicPartition(topic, p): [m for m in members if topic in spec.subscriptions[m]]
        for topic, count in spec.partition_counts.items()
        for p in range(count)
    }
    partitions = sorted((tp for tp, who in candidates.items() if who),
                        key=lambda tp: (len(candidates[tp]), tp))
    quota = dict.fromkeys(members, 0)
    for tp in partitions:
        quota[min(candidates[tp], key=lambda m: (quota[m], m))] += 1

    load = dict.fromkeys(members, 0)
    result: dict[str, set[TopicPartition]] = {m: set() for m in members}
    unplaced = []
    previous_owner = {tp: m for m, tps in spec.previous.items() for tp in tps}
    for tp in partitions:
        owner = previous_owner.get(tp)
        if owner in load and owner in candidates[tp] and load[owner] < quota[owner]:
            result[owner].add(tp)
            load[owner] += 1
        else:
            unplaced.append(tp)
    for tp in unplaced:
        under = [m for m in candidates[tp] if load[m] < quota[m]]
        member = min(under or candidates[tp], key=lambda m: (load[m], m))
        result[member].add(tp)
        load[member] += 1
    return {m: frozenset(tps) for m, tps in result.items()}


ASSIGNORS: Final[dict[str, Callable[[AssignmentSpec], Assignment]]] = {
    "uniform": uniform_assign,
    "range": range_assign,
}


_CLASS_PREFIX = "org.apache.kafka.coordinator.group.assignor."
_CLASS_NAMES = {f"{_CLASS_PREFIX}UniformAssignor": "uniform",
                f"{_CLASS_PREFIX}RangeAssignor": "range"}


def assignor_names(configured: Iterable[str]) -> tuple[str, ...]:
    """The assignors of ``group.consumer.assignors`` this coordinator has, by the names
    members ask for: Kafka accepts either those names or its assignor class names; others
    (custom classes) are left out, and with none left ``uniform`` serves, Kafka's default."""
    names = tuple(dict.fromkeys(n for n in (_CLASS_NAMES.get(c, c) for c in configured)
                                if n in ASSIGNORS))
    return names or ("uniform",)
