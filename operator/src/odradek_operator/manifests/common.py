"""Names, labels and owner references shared by every child object of a BrokerCluster.

One place decides what a child is called, so the handler that applies it, the one that reads
it back and the Topic handler that finds the bootstrap Service all agree.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ClusterNames", "Owner", "config_hash", "container_security_context",
           "pod_security_context", "render_properties"]

API_GROUP = "odradek.dev"
#: The CRDs' storage version, the one the operator watches and writes (v1alpha1 is still
#: served, deprecated, with the same schema: crds/README.md).
CRD_VERSION = "v1beta1"
API_VERSION = f"{API_GROUP}/{CRD_VERSION}"
MANAGED_BY = "odradek-operator"
RESTART_HASH_ANNOTATION = "odradek.dev/restart-hash"


@dataclass(frozen=True)
class Owner:
    """The BrokerCluster that owns a child (garbage collection removes children with it)."""

    name: str
    namespace: str
    uid: str
    kind: str = "BrokerCluster"

    def reference(self) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": self.kind, "name": self.name,
                "uid": self.uid, "controller": True, "blockOwnerDeletion": True}


@dataclass(frozen=True)
class ClusterNames:
    cluster: str
    namespace: str

    @property
    def statefulset(self) -> str:
        return self.cluster

    @property
    def config_map(self) -> str:
        return f"{self.cluster}-config"

    @property
    def headless_service(self) -> str:
        return f"{self.cluster}-headless"

    @property
    def bootstrap_service(self) -> str:
        return f"{self.cluster}-bootstrap"

    @property
    def broker_service_account(self) -> str:
        return f"{self.cluster}-broker"

    @property
    def zookeeper(self) -> str:
        return f"{self.cluster}-zookeeper"

    @property
    def zookeeper_headless(self) -> str:
        return f"{self.cluster}-zookeeper-headless"

    def listener_bootstrap(self, port_name: str) -> str:
        """An outside listener's bootstrap Service and Ingress, over every broker."""
        return f"{self.cluster}-{port_name}-bootstrap"

    def listener_broker(self, port_name: str, broker: int) -> str:
        """One broker's Service (and Ingress) of an outside listener."""
        return f"{self.cluster}-{port_name}-{broker}"

    def pod(self, ordinal: int) -> str:
        return f"{self.cluster}-{ordinal}"

    def bootstrap_servers(self, port: int) -> str:
        return f"{self.bootstrap_service}.{self.namespace}.svc:{port}"

    def labels(self, component: str) -> dict[str, str]:
        return {**self.selector(component), "app.kubernetes.io/managed-by": MANAGED_BY,
                "app.kubernetes.io/part-of": "odradek"}

    def selector(self, component: str) -> dict[str, str]:
        return {"app.kubernetes.io/name": "odradek", "app.kubernetes.io/instance": self.cluster,
                "app.kubernetes.io/component": component}


def metadata(name: str, names: ClusterNames, component: str, owner: Owner | None,
             **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": names.namespace,
                            "labels": names.labels(component), **extra}
    if owner is not None:
        meta["ownerReferences"] = [owner.reference()]
    return meta


def render_properties(config: Mapping[str, str]) -> str:
    """server.properties text, keys sorted so equal configs render to equal bytes."""
    lines = ["# Written by the odradek operator from the BrokerCluster spec."]
    lines += [f"{key}={_escape(value)}" for key, value in sorted(config.items())]
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def config_hash(config: Mapping[str, Any]) -> str:
    """A short stable digest: the pod-template annotation that makes a change restart pods."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def pod_security_context(uid: int) -> dict[str, Any]:
    """The images run as ``uid``; volumes are made writable for it through ``fsGroup``. With
    :func:`container_security_context` this meets the "restricted" Pod Security Standard."""
    return {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": uid, "fsGroup": uid,
            "seccompProfile": {"type": "RuntimeDefault"}}


def container_security_context() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
