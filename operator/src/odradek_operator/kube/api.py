"""A small asyncio Kubernetes REST client for the children the operator owns.

Why not a generated client: the operator needs five verbs (get, list, apply, patch, delete)
over a dozen kinds, including optional ones (PodMonitor) that a generated client does not
know. Objects are plain dicts, the same dicts the pure manifest builders return.

Credentials are kopf's :class:`kopf.ConnectionInfo` (from the operator's login handler), so
the operator authenticates once, the same way for kopf's watches and for its own requests.
``apply`` is server-side apply (field manager ``odradek-operator``, conflicts forced: the
operator is the owner of what it writes); a server that cannot apply to a missing object gets
a create instead.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import kopf

from ..manifests.common import API_VERSION

__all__ = ["KIND_PATHS", "KubeApi", "KubeApiError", "ResourcePath", "standalone_login"]

FIELD_MANAGER = "odradek-operator"


@dataclass(frozen=True)
class ResourcePath:
    group_version: str  # "v1" or "apps/v1"
    plural: str
    namespaced: bool = True

    def url(self, namespace: str | None, name: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return base + (f"/{name}" if name else "")


KIND_PATHS: dict[str, ResourcePath] = {
    "ConfigMap": ResourcePath("v1", "configmaps"),
    "Secret": ResourcePath("v1", "secrets"),
    "Service": ResourcePath("v1", "services"),
    "ServiceAccount": ResourcePath("v1", "serviceaccounts"),
    "Pod": ResourcePath("v1", "pods"),
    "PersistentVolumeClaim": ResourcePath("v1", "persistentvolumeclaims"),
    "StorageClass": ResourcePath("storage.k8s.io/v1", "storageclasses", False),
    "StatefulSet": ResourcePath("apps/v1", "statefulsets"),
    "PodDisruptionBudget": ResourcePath("policy/v1", "poddisruptionbudgets"),
    "Ingress": ResourcePath("networking.k8s.io/v1", "ingresses"),
    "PodMonitor": ResourcePath("monitoring.coreos.com/v1", "podmonitors"),
    "ClusterRole": ResourcePath("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ResourcePath("rbac.authorization.k8s.io/v1", "clusterrolebindings",
                                       False),
    "BrokerCluster": ResourcePath(API_VERSION, "brokerclusters"),
    "Topic": ResourcePath(API_VERSION, "topics"),
    "ConsumerGroup": ResourcePath(API_VERSION, "consumergroups"),
    "User": ResourcePath(API_VERSION, "users"),
    "Rebalance": ResourcePath(API_VERSION, "rebalances"),
}


class KubeApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Kubernetes API {status}: {message}")
        self.status = status


class KubeApi:
    """One aiohttp session against one API server; ``credentials`` is re-asked on a 401
    (service-account tokens rotate)."""

    def __init__(self, credentials: Callable[[], kopf.ConnectionInfo]) -> None:
        self._credentials = credentials
        self._info: kopf.ConnectionInfo | None = None
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _connect(self) -> tuple[aiohttp.ClientSession, kopf.ConnectionInfo]:
        if self._session is None or self._info is None:
            info = self._credentials()
            context: ssl.SSLContext | bool = True
            if info.server.startswith("https"):
                if info.insecure:
                    context = False
                else:
                    context = ssl.create_default_context(
                        cafile=str(info.ca_path) if info.ca_path else None,
                        cadata=(info.ca_data.decode() if isinstance(info.ca_data, bytes)
                                else info.ca_data) if info.ca_data else None)
                    if info.certificate_path and info.private_key_path:
                        context.load_cert_chain(str(info.certificate_path),
                                                str(info.private_key_path))
            self._session = aiohttp.ClientSession(
                base_url=info.server.rstrip("/") + "/",
                connector=aiohttp.TCPConnector(ssl=context),
                timeout=aiohttp.ClientTimeout(total=30))
            self._info = info
        return self._session, self._info

    async def request(self, method: str, path: str, *, body: Any = None,
                      params: Mapping[str, str] | None = None,
                      content_type: str = "application/json") -> Any:
        for attempt in range(2):
            session, info = self._connect()
            headers = {"Accept": "application/json", **info.as_http_headers()}
            data = None
            if body is not None:
                headers["Content-Type"] = content_type
                data = json.dumps(body)
            async with session.request(method, path.lstrip("/"), data=data, params=params,
                                       headers=headers) as response:
                text = await response.text()
                if response.status == 401 and attempt == 0:
                    await self.close()
                    self._info = None
                    continue
                if response.status >= 400:
                    raise KubeApiError(response.status, _message(text))
                return json.loads(text) if text else None
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ verbs

    async def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = await self.request(
                "GET", KIND_PATHS[kind].url(namespace, name))
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise
        return result

    async def list(self, kind: str, namespace: str | None,
                   label_selector: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        params = {}
        if label_selector:
            params["labelSelector"] = ",".join(f"{k}={v}" for k, v in
                                               sorted(label_selector.items()))
        try:
            result = await self.request("GET", KIND_PATHS[kind].url(namespace), params=params)
        except KubeApiError as exc:
            if exc.status == 404:  # a kind the server does not serve has no objects
                return []
            raise
        return list(result.get("items") or [])

    async def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply ``obj`` (the whole desired state of the fields we own)."""
        kind, meta = obj["kind"], obj["metadata"]
        path = KIND_PATHS[kind]
        url = path.url(meta.get("namespace"), meta["name"])
        try:
            result: dict[str, Any] = await self.request(
                "PATCH", url, body=obj, content_type="application/apply-patch+yaml",
                params={"fieldManager": FIELD_MANAGER, "force": "true"})
        except KubeApiError as exc:
            if exc.status != 404:
                raise
            result = await self.request("POST", path.url(meta.get("namespace")), body=obj,
                                        params={"fieldManager": FIELD_MANAGER})
        return result

    async def patch(self, kind: str, namespace: str | None, name: str,
                    patch: Mapping[str, Any], *, subresource: str | None = None
                    ) -> dict[str, Any]:
        url = KIND_PATHS[kind].url(namespace, name) + (f"/{subresource}" if subresource else "")
        result: dict[str, Any] = await self.request(
            "PATCH", url, body=patch, content_type="application/merge-patch+json")
        return result

    async def delete(self, kind: str, namespace: str | None, name: str, *,
                     orphan: bool = False) -> bool:
        """Delete; False when it was already gone. ``orphan``: leave its dependents (a
        StatefulSet's pods) running."""
        body = {"propagationPolicy": "Orphan"} if orphan else None
        try:
            await self.request("DELETE", KIND_PATHS[kind].url(namespace, name), body=body)
        except KubeApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def serves(self, group_version: str) -> bool:
        """Whether the API server serves ``group_version`` (discovery needs no RBAC rule):
        how the operator learns that prometheus-operator's CRDs are installed."""
        try:
            await self.request("GET", f"/apis/{group_version}")
        except KubeApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True


def standalone_login() -> kopf.ConnectionInfo:
    """Credentials for a program that runs outside kopf (the chart's hooks): the pod's
    service account, else a kubeconfig."""
    settings = kopf.OperatorSettings()
    info = (kopf.login_with_service_account(settings=settings)
            or kopf.login_with_kubeconfig(settings=settings))
    if info is None:
        raise SystemExit("no Kubernetes credentials: neither a service account nor a kubeconfig")
    return info


def _message(text: str) -> str:
    try:
        return str(json.loads(text).get("message") or text)
    except (ValueError, AttributeError):
        return text[:500]
