"""Apply the outside listeners' Services and Ingresses, and read back what Kubernetes chose.

They are applied before the brokers' ConfigMap and StatefulSet because what the brokers
advertise depends on them: a node port Kubernetes allocated, a load balancer's address
(:mod:`..decisions.listeners`). Objects of a listener (or a broker) the spec no longer has are
deleted; they are labelled component ``listener``, so nothing else is touched.
"""

from __future__ import annotations

from typing import Any

from ..kube.api import KubeApi
from ..manifests.common import ClusterNames, Owner
from ..manifests.listeners import COMPONENT, listener_objects
from ..spec import BrokerClusterSpec

__all__ = ["apply_listeners"]

KINDS = ("Service", "Ingress")


async def apply_listeners(api: KubeApi, names: ClusterNames, owner: Owner,
                          spec: BrokerClusterSpec, replicas: int) -> dict[str, dict[str, Any]]:
    """The listener Services as the API server holds them after the apply, by name."""
    desired = listener_objects(names, owner, spec, replicas)
    applied: dict[str, dict[str, Any]] = {}
    for obj in desired:
        result = await api.apply(obj)
        if obj["kind"] == "Service":
            applied[obj["metadata"]["name"]] = result
    wanted = {(obj["kind"], obj["metadata"]["name"]) for obj in desired}
    for kind in KINDS:
        for existing in await api.list(kind, names.namespace, names.selector(COMPONENT)):
            name = existing["metadata"]["name"]
            if (kind, name) not in wanted:
                await api.delete(kind, names.namespace, name)
    return applied
