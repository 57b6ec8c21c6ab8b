"""A thin layer over the Kubernetes Python client for end-to-end tests.

Tests build plain manifests (dicts, see :mod:`e2e.manifests`), apply them to their own
namespace and wait for observable states (a StatefulSet with every replica Ready, a Job
that succeeded). Every wait is bounded and, when it runs out, says what it last saw, so a
failure explains itself before the log collection in :mod:`e2e.conftest` even runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client, config, utils
from kubernetes.client.rest import ApiException

T = TypeVar("T")

__all__ = ["Kube", "WaitTimeout", "conditions", "wait_for"]

ODRADEK_GROUP, ODRADEK_VERSION = "odradek.dev", "v1beta1"


def conditions(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """An object's status conditions by type."""
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


class WaitTimeout(AssertionError):
    """A bounded wait ran out; the message holds the last observed state."""


def wait_for(what: str, probe: Callable[[], T | None], timeout: float,
             interval: float = 1.0, describe: Callable[[], str] | None = None) -> T:
    """Call ``probe`` until it returns something other than None/False, at most ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = probe()
            if result is not None and result is not False:
                return result
        except ApiException as exc:  # transient API errors while objects appear
            last_error = exc
        if time.monotonic() >= deadline:
            state = describe() if describe else ""
            error = (f"; last API error: {last_error.status} {last_error.reason}"
                     if last_error else "")
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}{error}"
                              + (f"\n{state}" if state else ""))
        time.sleep(interval)


@dataclass
class Kube:
    """API clients bound to one kubeconfig."""

    api_client: client.ApiClient
    #: The served version odradek resources are read and written at (the storage version,
    #: unless a scenario speaks the deprecated one: ``dataclasses.replace(kube, ...)``).
    odradek_version: str = ODRADEK_VERSION

    @classmethod
    def from_kubeconfig(cls, path: Path) -> Kube:
        return cls(config.new_client_from_config(config_file=str(path)))

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.api_client)

    @property
    def batch(self) -> client.BatchV1Api:
        return client.BatchV1Api(self.api_client)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api_client)

    # ------------------------------------------------------------------ odradek resources

    def resource(self, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
        """An ``odradek.dev`` object (``plural``: topics, brokerclusters, ...)."""
        try:
            obj: dict[str, Any] = self.custom.get_namespaced_custom_object(
                ODRADEK_GROUP, self.odradek_version, namespace, plural, name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return obj

    def patch_resource(self, namespace: str, plural: str, name: str,
                       patch: Mapping[str, Any]) -> None:
        """A merge patch of an odradek resource's spec or metadata."""
        self.custom.patch_namespaced_custom_object(
            ODRADEK_GROUP, self.odradek_version, namespace, plural, name, dict(patch),
            _content_type="application/merge-patch+json")

    def delete_resource(self, namespace: str, plural: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(ODRADEK_GROUP, self.odradek_version,
                                                    namespace, plural, name)

    def wait_resource(self, namespace: str, plural: str, name: str, what: str,
                      check: Callable[[dict[str, Any]], bool], timeout: float,
                      interval: float = 2.0) -> dict[str, Any]:
        """Wait until ``check(object)`` holds; the timeout message shows its status."""
        last: dict[str, Any] = {}

        def probe() -> dict[str, Any] | None:
            nonlocal last
            obj = self.resource(namespace, plural, name)
            last = obj or {}
            return obj if obj is not None and check(obj) else None

        def describe() -> str:
            return (f"  {plural}/{name} status: {last.get('status')}\n"
                    + self.describe_pods(namespace))

        return wait_for(f"{plural}/{name} {what}", probe, timeout, interval=interval,
                        describe=describe)

    def wait_condition(self, namespace: str, plural: str, name: str, condition: str,
                       status: str = "True", timeout: float = 300,
                       reason: str | None = None) -> dict[str, Any]:
        def holds(obj: dict[str, Any]) -> bool:
            found = conditions(obj).get(condition)
            return found is not None and found.get("status") == status and \
                (reason is None or found.get("reason") == reason)

        return self.wait_resource(namespace, plural, name,
                                  f"to have condition {condition}={status}"
                                  + (f" ({reason})" if reason else ""), holds, timeout)

    def wait_gone(self, namespace: str, plural: str, name: str, timeout: float) -> None:
        wait_for(f"{plural}/{name} to be deleted",
                 lambda: self.resource(namespace, plural, name) is None, timeout,
                 describe=lambda: str((self.resource(namespace, plural, name) or {})
                                      .get("metadata")))

    def pod_uids(self, namespace: str, selector: str) -> dict[str, str]:
        return {p.metadata.name: p.metadata.uid for p in
                self.core.list_namespaced_pod(namespace, label_selector=selector).items}

    def claims(self, namespace: str) -> dict[str, str]:
        """PersistentVolumeClaims of ``namespace``: name to phase."""
        return {c.metadata.name: c.status.phase for c in
                self.core.list_namespaced_persistent_volume_claim(namespace).items}

    # ------------------------------------------------------------------ objects

    def apply(self, namespace: str, manifests: Iterable[Mapping[str, Any]]) -> None:
        """Create every manifest in ``namespace`` (tests start from an empty namespace)."""
        for manifest in manifests:
            utils.create_from_dict(self.api_client, dict(manifest), namespace=namespace)

    def create_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        self.core.create_namespace(client.V1Namespace(
            metadata=client.V1ObjectMeta(name=name, labels=dict(labels))))

    def delete_namespace(self, name: str, timeout: float) -> None:
        """Delete ``name`` and wait until it is gone (its PVCs released with it)."""
        try:
            self.core.delete_namespace(name, propagation_policy="Foreground",
                                       grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise

        def gone() -> bool:
            try:
                self.core.read_namespace(name)
            except ApiException as exc:
                if exc.status == 404:
                    return True
                raise
            return False

        wait_for(f"namespace {name} to be deleted", gone, timeout, interval=1.0)

    # ------------------------------------------------------------------ waits

    def wait_statefulset_ready(self, namespace: str, name: str, timeout: float) -> None:
        def ready() -> bool:
            sts = self.apps.read_namespaced_stateful_set(name, namespace)
            want = sts.spec.replicas or 0
            return (sts.status.ready_replicas or 0) == want and \
                (sts.status.updated_replicas or 0) == want

        wait_for(f"statefulset {namespace}/{name} to be Ready", ready, timeout, interval=2.0,
                 describe=lambda: self.describe_pods(namespace))

    def wait_pod_ready(self, namespace: str, name: str, timeout: float,
                       not_uid: str | None = None) -> None:
        """Wait for pod ``name`` to be Ready (and, with ``not_uid``, to be a new pod)."""
        def ready() -> bool:
            pod = self.core.read_namespaced_pod(name, namespace)
            if not_uid is not None and pod.metadata.uid == not_uid:
                return False
            return any(c.type == "Ready" and c.status == "True"
                       for c in pod.status.conditions or [])

        wait_for(f"pod {namespace}/{name} to be Ready", ready, timeout, interval=1.0,
                 describe=lambda: self.describe_pods(namespace))

    def wait_job(self, namespace: str, name: str, timeout: float) -> str:
        """Wait until Job ``name`` succeeds; return its pod's log. A failed Job raises."""
        def finished() -> str | None:
            job = self.batch.read_namespaced_job(name, namespace)
            if job.status.succeeded:
                return "succeeded"
            if job.status.failed and job.status.failed >= (job.spec.backoff_limit or 0) + 1:
                return "failed"
            return None

        outcome = wait_for(f"job {namespace}/{name} to finish", finished, timeout, interval=2.0,
                           describe=lambda: self.describe_pods(namespace))
        logs = self.job_logs(namespace, name)
        if outcome != "succeeded":
            raise AssertionError(f"job {namespace}/{name} failed; its log:\n{logs[-4000:]}")
        return logs

    def job_logs(self, namespace: str, name: str) -> str:
        pods = self.core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items
        pods.sort(key=lambda p: p.metadata.creation_timestamp)
        return "".join(self.core.read_namespaced_pod_log(p.metadata.name, namespace)
                       for p in pods[-1:])

    # ------------------------------------------------------------------ diagnostics

    def describe_pods(self, namespace: str) -> str:
        lines = []
        for pod in self.core.list_namespaced_pod(namespace).items:
            statuses = pod.status.container_statuses or []
            detail = ", ".join(
                f"{c.name}: ready={c.ready} restarts={c.restart_count}"
                + (f" waiting={c.state.waiting.reason}" if c.state and c.state.waiting else "")
                for c in statuses)
            lines.append(f"  pod {pod.metadata.name}: {pod.status.phase} {detail}")
        return "\n".join(lines) or "  (no pods)"

    def collect_diagnostics(self, namespace: str, directory: Path) -> list[Path]:
        """Write the namespace's pods, events and every container's log (and previous log)."""
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        summary = [self.describe_pods(namespace), "", "events:"]
        try:
            events = self.core.list_namespaced_event(namespace).items
        except ApiException:
            events = []
        events.sort(key=lambda e: e.last_timestamp or e.event_time
                    or e.metadata.creation_timestamp)
        summary += [f"  {e.type} {e.reason} {e.involved_object.kind}/{e.involved_object.name}: "
                    f"{e.message}" for e in events]
        path = directory / "summary.txt"
        path.write_text("\n".join(summary) + "\n")
        written.append(path)
        for pod in self.core.list_namespaced_pod(namespace).items:
            for container in pod.spec.containers:
                for previous in (False, True):
                    try:
                        text = self.core.read_namespaced_pod_log(
                            pod.metadata.name, namespace, container=container.name,
                            previous=previous, tail_lines=2000)
                    except ApiException:
                        continue
                    suffix = ".previous" if previous else ""
                    path = directory / f"{pod.metadata.name}.{container.name}{suffix}.log"
                    path.write_text(text)
                    written.append(path)
        return written
