"""The brokers' readiness, followed as it changes: a watch on the broker StatefulSets.

The BrokerCluster's reconcile runs on changes and every 30 s; a broker pod that is deleted or
stops being Ready changes nothing the reconcile is triggered by, so ``status.readyReplicas``
would lag by up to that long. The StatefulSet controller recounts its ready pods at once, and
this handler copies the count onto the owning BrokerCluster
(:mod:`..decisions.readiness` decides what to write).

An event handler: kopf neither retries it nor stores anything on the StatefulSet. The status
patch carries the BrokerCluster's resourceVersion, so it never overwrites a reconcile's newer
status; a conflict is simply dropped (the reconcile writes the same count anyway).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from ..decisions.readiness import readiness_refresh, readiness_status
from ..kube.api import KubeApiError
from ..manifests.brokers import BROKER
from ..manifests.common import MANAGED_BY
from ..runtime import kube

__all__ = ["follow_broker_readiness"]


@kopf.on.event("apps", "v1", "statefulsets",
               labels={"app.kubernetes.io/component": BROKER,
                       "app.kubernetes.io/managed-by": MANAGED_BY})
async def follow_broker_readiness(*, event: Mapping[str, Any], body: kopf.Body, logger: Any,
                                  **_: Any) -> None:
    refresh = readiness_refresh(event.get("type"), body)
    if refresh is None:
        return
    api = kube()
    cluster = await api.get("BrokerCluster", refresh.namespace, refresh.cluster)
    update = readiness_status(refresh, cluster) if cluster is not None else None
    if cluster is None or update is None:
        return
    patch: dict[str, Any] = {"status": update}
    version = (cluster.get("metadata") or {}).get("resourceVersion")
    if version:  # a precondition: the API server answers 409 if the object changed since
        patch["metadata"] = {"resourceVersion": version}
    try:
        await api.patch("BrokerCluster", refresh.namespace, refresh.cluster, patch,
                        subresource="status")
    except KubeApiError as exc:
        if exc.status not in (404, 409):  # gone, or changed since read: nothing to fix
            raise
        return
    logger.info(f"BrokerCluster {refresh.cluster}: {refresh.ready_replicas} broker(s) ready")
