"""A BrokerCluster's volumes grown to ``spec.storage.size``: the claims patched, then the
StatefulSet re-created around its running pods (the rules: :mod:`..decisions.volumes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..decisions.volumes import ClaimState, VolumePlan, parse_quantity, plan_volumes
from ..kube.api import KubeApi
from ..manifests.common import ClusterNames
from ..spec import BrokerClusterSpec

__all__ = ["grow_volumes", "template_size"]


def template_size(statefulset: Mapping[str, Any] | None) -> str | None:
    """The storage size of the StatefulSet's ``data`` claim template (None: none yet)."""
    if statefulset is None:
        return None
    for claim in statefulset["spec"].get("volumeClaimTemplates") or ():
        if claim["metadata"]["name"] == "data":
            return str(claim["spec"]["resources"]["requests"]["storage"])
    return None


async def grow_volumes(api: KubeApi, namespace: str, names: ClusterNames,
                       spec: BrokerClusterSpec, statefulset: Mapping[str, Any] | None,
                       status: Mapping[str, Any] | None) -> VolumePlan:
    """One step toward the spec's size; claims are read only while a size differs or an
    expansion is still under way (``status``: the last ``status.storage``)."""
    template = template_size(statefulset)
    expanding = tuple((status or {}).get("expanding") or ())
    if template is None:  # a new cluster, or the StatefulSet just re-created: keep the count
        return VolumePlan(spec.storage_size, expanding=expanding)
    if parse_quantity(template) == parse_quantity(spec.storage_size) and not expanding:
        return VolumePlan(template)  # the API server may have respelled it (1.5Gi: 1536Mi)
    claims = [claim for claim in await api.list("PersistentVolumeClaim", namespace,
                                                 names.selector("broker"))
              if claim["metadata"]["name"].startswith(f"data-{names.statefulset}-")]
    states = [ClaimState(c["metadata"]["name"],
                         str(c["spec"]["resources"]["requests"]["storage"]),
                         (c.get("status") or {}).get("capacity", {}).get("storage"))
              for c in claims]
    class_name = spec.storage_class or next(
        (c["spec"].get("storageClassName") for c in claims
         if c["spec"].get("storageClassName")), None)
    expandable = None
    if class_name:
        storage_class = await api.get("StorageClass", None, class_name)
        expandable = bool((storage_class or {}).get("allowVolumeExpansion"))
    plan = plan_volumes(spec.storage_size, template, states, expandable, class_name)
    for claim in plan.expand:
        await api.patch("PersistentVolumeClaim", namespace, claim,
                        {"spec": {"resources": {"requests": {"storage": spec.storage_size}}}})
    if plan.recreate:
        await api.delete("StatefulSet", namespace, names.statefulset, orphan=True)
    return plan
