"""Which BrokerCluster a change of its brokers' readiness concerns, and what its status
becomes: ``status.readyReplicas`` follows the broker StatefulSet's own count as soon as the
StatefulSet controller updates it (a pod deleted, crashed or Ready again), not on the next
periodic reconcile.

Only readiness is written here. A drop below ``spec.replicas`` also turns the Ready condition
False at once (what ``kubectl wait`` and alerts watch); the way back to Ready stays the
reconcile's call, since it also needs Kafka's view (every partition fully replicated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..conditions import READY, Condition, merge_conditions
from ..manifests.brokers import BROKER
from ..manifests.common import API_GROUP

__all__ = ["ReadinessRefresh", "readiness_refresh", "readiness_status"]


@dataclass(frozen=True)
class ReadinessRefresh:
    namespace: str
    cluster: str  # the owning BrokerCluster
    ready_replicas: int


def readiness_refresh(event_type: str | None, statefulset: Mapping[str, Any]
                      ) -> ReadinessRefresh | None:
    """The refresh a watch event of a StatefulSet asks for: None unless it is the brokers'
    StatefulSet of a BrokerCluster (its controller owner) and still exists (a deleted one
    goes with its cluster)."""
    if event_type == "DELETED":
        return None
    meta = statefulset.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get("app.kubernetes.io/component") != BROKER:
        return None
    # Any served version of the group: a StatefulSet written before an upgrade names the
    # version its operator watched until the next reconcile re-applies it.
    owner = next((ref for ref in meta.get("ownerReferences") or ()
                  if ref.get("controller") and ref.get("kind") == "BrokerCluster"
                  and str(ref.get("apiVersion", "")).split("/")[0] == API_GROUP), None)
    if owner is None or not meta.get("namespace"):
        return None
    ready = (statefulset.get("status") or {}).get("readyReplicas") or 0
    return ReadinessRefresh(str(meta["namespace"]), str(owner["name"]), int(ready))


def readiness_status(refresh: ReadinessRefresh, cluster: Mapping[str, Any]
                     ) -> dict[str, Any] | None:
    """The status fields to write on the BrokerCluster ``cluster``; None when its status
    already says so (or it is being deleted)."""
    meta = cluster.get("metadata") or {}
    status = cluster.get("status") or {}
    if meta.get("deletionTimestamp") or status.get("readyReplicas") == refresh.ready_replicas:
        return None
    update: dict[str, Any] = {"readyReplicas": refresh.ready_replicas}
    replicas = (cluster.get("spec") or {}).get("replicas", 3)
    desired = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 3
    if refresh.ready_replicas < desired:
        update["conditions"] = merge_conditions(status.get("conditions"), [Condition(
            READY, False, "BrokersNotReady",
            f"{refresh.ready_replicas}/{desired} brokers ready")], meta.get("generation"))
    return update
