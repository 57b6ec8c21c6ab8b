"""Automatic leader rebalance: which partitions go back to their preferred leader.

Replica placement spreads *preferred* leaders (first replicas) evenly; failures and
restarts pile leadership onto the survivors, and nothing moves it back by itself. With
``auto.leader.rebalance.enable`` the controller checks every
``leader.imbalance.check.interval.seconds``, per broker B::

    imbalance(B) = |partitions preferring B but led by another| / |partitions preferring B|

and, when it exceeds ``leader.imbalance.per.broker.percentage`` / 100, runs a preferred
election for those partitions whose preferred replica can lead (live, in the ISR, not
shutting down). Like Kafka, a cluster with a reassignment in flight is left alone — the
reassignment decides leadership for the partitions it moves.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from odradek.cluster.model import PartitionRegistration, TopicPartition


def imbalance_by_broker(states: Mapping[TopicPartition, PartitionRegistration]) -> dict[int, float]:
    """``{preferred broker: fraction of its preferred partitions it does not lead}``."""
    preferred: dict[int, int] = {}
    misplaced: dict[int, int] = {}
    for state in states.values():
        if not state.replicas:
            continue
        broker = state.replicas[0]
        preferred[broker] = preferred.get(broker, 0) + 1
        if state.leader != broker:
            misplaced[broker] = misplaced.get(broker, 0) + 1
    return {b: misplaced.get(b, 0) / count for b, count in preferred.items()}


def partitions_to_rebalance(
    states: Mapping[TopicPartition, PartitionRegistration],
    live: Set[int],
    imbalance_percentage: int,
    shutting_down: Set[int] = frozenset(),
) -> list[TopicPartition]:
    """Partitions whose leadership should move back to the preferred replica now."""
    ratios = imbalance_by_broker(states)
    threshold = imbalance_percentage / 100
    chosen: list[TopicPartition] = []
    for tp, state in sorted(states.items(), key=lambda item: (item[0].topic, item[0].partition)):
        if not state.replicas:
            continue
        broker = state.replicas[0]
        if state.leader == broker or ratios.get(broker, 0.0) <= threshold:
            continue
        if broker in live and broker not in shutting_down and broker in state.isr:
            chosen.append(tp)
    return chosen
