"""The BrokerCluster's next step, decided from observed pods and Kafka state.

One step per reconcile: the handler applies it and comes back (timer or retry) to observe the
result. That makes every long operation — a rolling restart, a drain before a scale-down —
resumable after an operator restart, with its progress visible in status.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .placement import mid_move, plan_drain, plan_rebalance
from .restart import restart_order, restart_verdict
from .state import ClusterState

__all__ = [
    "PodState",
    "ReplicaDecision",
    "RestartDecision",
    "decide_rebalance",
    "decide_replicas",
    "decide_restart",
]


@dataclass(frozen=True)
class PodState:
    ordinal: int
    revision: str | None  # the pod's controller-revision-hash label
    ready: bool
    terminating: bool = False


@dataclass(frozen=True)
class ReplicaDecision:
    """How many pods the StatefulSet should have now, and what to do about the difference."""

    statefulset_replicas: int
    moves: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    phase: str = "Stable"  # Stable | ScalingUp | Draining | ScaleDownBlocked | WaitingForKafka
    message: str = ""


def decide_replicas(desired: int, current: int, kafka: ClusterState | None) -> ReplicaDecision:
    """Scale up at once; scale down only after the leaving brokers (the highest ordinals,
    which the StatefulSet removes) hold no replica."""
    if desired >= current:
        phase = "ScalingUp" if desired > current else "Stable"
        return ReplicaDecision(desired, phase=phase)
    leaving = list(range(desired, current))
    if kafka is None:
        return ReplicaDecision(current, phase="WaitingForKafka",
                               message="scale-down waits until the cluster is reachable")
    on_leaving = {tp for tp, replicas in kafka.assignments().items()
                  if set(replicas) & set(leaving)}
    moving = kafka.reassigning or mid_move(kafka.assignments())
    if moving:
        return ReplicaDecision(current, phase="Draining",
                               message=f"waiting for {len(moving)} partition "
                                       f"reassignment(s) to finish")
    if not on_leaving:
        return ReplicaDecision(desired, phase="Stable",
                               message=f"brokers {leaving} hold no replicas; removing them")
    plan = plan_drain(kafka.assignments(), leaving, range(desired))
    if not plan.possible:
        topics = ", ".join(f"{t} (RF {rf})" for t, rf in plan.impossible.items())
        return ReplicaDecision(current, phase="ScaleDownBlocked",
                               message=f"cannot scale down to {desired} brokers: topics "
                                       f"{topics} need more brokers than would remain; "
                                       f"lower their replication factor first")
    return ReplicaDecision(current, plan.moves, phase="Draining",
                           message=f"moving {len(plan.moves)} partition(s) off brokers "
                                   f"{leaving} before removing them")


@dataclass(frozen=True)
class RestartDecision:
    restart: int | None  # the ordinal to delete now, if any
    pending: tuple[int, ...]  # outdated ordinals, in roll order
    waiting_for: str = ""


def decide_restart(pods: Iterable[PodState], update_revision: str | None,
                   kafka: ClusterState | None) -> RestartDecision:
    """Which outdated pod (if any) to restart now.

    * An outdated pod that is not Ready goes first and at once: it serves nothing, and a
      crash-looping pod may be exactly what the new configuration fixes.
    * Otherwise every pod must be Ready and Kafka reachable, and the candidate (controller
      last) must not drop any partition below min.insync.replicas.
    """
    pod_list = sorted(pods, key=lambda p: p.ordinal)
    if update_revision is None:
        return RestartDecision(None, ())
    outdated = [p for p in pod_list if p.revision != update_revision and not p.terminating]
    controller = kafka.controller if kafka is not None else -1
    order = tuple(restart_order((p.ordinal for p in outdated), controller))
    if not outdated:
        return RestartDecision(None, ())
    terminating = [p.ordinal for p in pod_list if p.terminating]
    if terminating:
        return RestartDecision(None, order, f"pod {terminating[0]} is terminating")
    broken = [p.ordinal for p in outdated if not p.ready]
    if broken:
        return RestartDecision(broken[0], order)
    not_ready = [p.ordinal for p in pod_list if not p.ready]
    if not_ready:
        return RestartDecision(None, order, f"waiting for pod {not_ready[0]} to be Ready")
    if kafka is None:
        return RestartDecision(None, order, "waiting for the cluster to be reachable")
    verdict = restart_verdict(kafka, order[0])
    if not verdict.allowed:
        return RestartDecision(None, order, verdict.reason())
    return RestartDecision(order[0], order)


def decide_rebalance(desired: int, kafka: ClusterState | None, rebalanced_for: int | None
                     ) -> dict[tuple[str, int], tuple[int, ...]] | None:
    """Moves that spread replicas onto brokers added by a scale-up, once per replica count;
    None while not applicable yet (brokers still joining, reassignments running)."""
    if kafka is None or rebalanced_for == desired or kafka.reassigning:
        return None
    if not set(range(desired)) <= kafka.brokers:
        return None
    return plan_rebalance(kafka.assignments(), range(desired))
