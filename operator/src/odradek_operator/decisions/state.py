"""Observed Kafka state as plain values: what every decision function takes as input.

The Kafka adapter (:mod:`odradek_operator.kafka`) fills these from the admin protocol; tests
build them by hand. Nothing here performs I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ClusterState", "PartitionState"]


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int = -1

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True)
class ClusterState:
    """Brokers registered, the active controller, every partition's replicas and ISR, and
    each topic's effective ``min.insync.replicas``."""

    brokers: frozenset[int]
    controller: int
    partitions: tuple[PartitionState, ...]
    min_insync_replicas: Mapping[str, int] = field(default_factory=dict)
    default_min_insync_replicas: int = 1
    reassigning: frozenset[tuple[str, int]] = frozenset()

    def min_isr(self, topic: str) -> int:
        return self.min_insync_replicas.get(topic, self.default_min_insync_replicas)

    @property
    def under_replicated_partitions(self) -> int:
        return sum(1 for p in self.partitions if p.under_replicated)

    def assignments(self) -> dict[tuple[str, int], tuple[int, ...]]:
        return {(p.topic, p.partition): p.replicas for p in self.partitions}
