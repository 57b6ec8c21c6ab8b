"""An odradek platform installed by the Helm chart into one test's namespace: the operator, a
BrokerCluster named ``odradek`` (the name ``examples/*.yaml`` refer to), and the steps the
scenarios share (wait for Ready, run a client Job, produce under acks=all and read back).

The values mirror what a user sets on a small cluster: the project's images, the backend's
StorageClass, modest resource requests so five brokers fit on one node.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from e2e import manifests
from e2e.helm import Helm, image_values
from e2e.kube import Kube, wait_for
from e2e.workloads import parse_acks, producer_command

CLUSTER = "odradek"
BROKER_SELECTOR = (f"app.kubernetes.io/name=odradek,app.kubernetes.io/instance={CLUSTER},"
                   "app.kubernetes.io/component=broker")

__all__ = ["CLUSTER", "Platform", "platform_values", "watch_broker_restarts"]


def platform_values(images: Any, storage_class: str | None, *, replicas: int = 3,
                    zookeeper_replicas: int = 1, delete_claim: bool = False,
                    config: dict[str, Any] | None = None, **cluster: Any) -> dict[str, Any]:
    return {
        "storageClass": storage_class or "",
        "operator": {"image": image_values(images.operator), "logFormat": "plain",
                     "resources": {"requests": {"cpu": "20m", "memory": "96Mi"},
                                   "limits": {"memory": "512Mi"}}},
        "cluster": {
            "enabled": True, "name": CLUSTER, "replicas": replicas,
            "image": image_values(images.broker),
            "storage": {"size": "1Gi", "deleteClaim": delete_claim},
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"},
                          "limits": {"memory": "768Mi"}},
            "config": {"default.replication.factor": 3, "min.insync.replicas": 2,
                       "offsets.topic.replication.factor": 3, "num.partitions": 3,
                       "auto.create.topics.enable": "false", **(config or {})},
            "zookeeper": {"managed": {
                "replicas": zookeeper_replicas,
                "image": image_values(images.zookeeper, pull_policy=False),
                "storage": {"size": "1Gi", "deleteClaim": delete_claim}}},
            **cluster,
        },
    }


@dataclass
class Platform:
    kube: Kube
    helm: Helm
    namespace: str
    images: Any
    release: str = "odradek"
    installed: bool = False

    @property
    def bootstrap(self) -> str:
        return f"{CLUSTER}-bootstrap.{self.namespace}.svc.cluster.local:{manifests.BROKER_PORT}"

    # ------------------------------------------------------------------ lifecycle

    def install(self, values: dict[str, Any], *, ready_timeout: float = 600) -> dict[str, Any]:
        """``helm install --wait`` (the operator Deployment is Ready), then the BrokerCluster
        Ready: every broker Ready and every partition fully replicated."""
        started = time.monotonic()
        self.helm.install(self.release, self.namespace, values)
        self.installed = True
        helm_s = time.monotonic() - started
        cluster = self.wait_cluster_ready(ready_timeout)
        print(f"helm install --wait {helm_s:.0f}s; BrokerCluster Ready after "
              f"{time.monotonic() - started:.0f}s")
        return cluster

    def uninstall(self) -> None:
        if self.installed:
            self.helm.uninstall(self.release, self.namespace)
            self.installed = False

    def clean_up(self) -> None:
        """After a test, whatever it left: its own Topics and ConsumerGroups (the chart's hook
        deletes only the release's) go while the operator still runs, then the release; a
        finalizer nobody can run any more is removed, so the namespace can always go."""
        plurals = ("topics", "consumergroups", "brokerclusters")
        if self.installed:
            for plural in plurals[:2]:
                for obj in self._resources(plural):
                    self.kube.delete_resource(self.namespace, plural, obj["metadata"]["name"])
            try:
                wait_for("the test's Topics and ConsumerGroups to be finalized",
                         lambda: not any(self._resources(p) for p in plurals[:2]), 120)
            finally:
                self.uninstall()
        for plural in plurals:
            for obj in self._resources(plural):
                if obj["metadata"].get("finalizers"):
                    self.kube.patch_resource(self.namespace, plural, obj["metadata"]["name"],
                                             {"metadata": {"finalizers": None}})

    def _resources(self, plural: str) -> list[dict[str, Any]]:
        listed = self.kube.custom.list_namespaced_custom_object(
            "odradek.dev", "v1beta1", self.namespace, plural)
        return list(listed.get("items") or [])

    def wait_cluster_ready(self, timeout: float) -> dict[str, Any]:
        return self.kube.wait_condition(self.namespace, "brokerclusters", CLUSTER, "Ready",
                                        timeout=timeout)

    def cluster(self) -> dict[str, Any]:
        obj = self.kube.resource(self.namespace, "brokerclusters", CLUSTER)
        assert obj is not None, "the BrokerCluster is gone"
        return obj

    # ------------------------------------------------------------------ clients

    def run(self, name: str, script: str, *, timeout: float = 240) -> str:
        """Run ``script`` (sh) in the broker image as a Job; return its log."""
        self.kube.apply(self.namespace, [manifests.client_job(
            name, self.images.broker, ["sh", "-c", script], deadline_seconds=int(timeout))])
        return self.kube.wait_job(self.namespace, name, timeout=timeout + 30)

    def start_acked_load(self, name: str, topic: str, count: int, rate: float) -> None:
        self.kube.apply(self.namespace, [manifests.client_job(
            name, self.images.broker,
            producer_command(self.bootstrap, topic, "rec", count, rate),
            deadline_seconds=int(count / rate) + 600)])

    def acked_so_far(self, job: str, at_least: int, timeout: float = 240) -> int:
        def probe() -> int | None:
            try:
                acked, _ = parse_acks(self.kube.job_logs(self.namespace, job))
            except Exception:  # the pod may not have started yet
                return None
            return len(acked) if len(acked) >= at_least else None

        return wait_for(f"{at_least} acknowledged records from {job}", probe, timeout,
                        interval=2.0)

    def finish_acked_load(self, job: str, count: int, timeout: float
                          ) -> tuple[set[int], dict[int, str]]:
        log = self.kube.wait_job(self.namespace, job, timeout=timeout)
        acked, failed = parse_acks(log)
        assert "DONE" in log, f"producer did not finish; log tail:\n{log[-2000:]}"
        assert len(acked) >= 0.9 * count, (
            f"only {len(acked)}/{count} acknowledged; failures: {dict(list(failed.items())[:5])}")
        return acked, failed

    def read_back(self, name: str, topic: str) -> set[int]:
        """Every ``rec-<n>`` record of ``topic``, read from the beginning."""
        log = self.run(name, f"odradek consume --bootstrap-server {self.bootstrap} {topic} "
                             "--from-beginning --timeout-ms 30000", timeout=300)
        return {int(line.split("-", 1)[1]) for line in log.splitlines()
                if line.startswith("rec-")}

    def topic_exists(self, name: str, topic: str) -> bool:
        log = self.run(name, f"odradek topics --bootstrap-server {self.bootstrap} list")
        return topic in log.split()


def watch_broker_restarts(kube: Kube, namespace: str, stop: threading.Event,
                          order: list[str], rolling: list[dict[str, Any]]) -> None:
    """Record the order in which broker pods get a new uid, and the roll's reported state."""
    seen = kube.pod_uids(namespace, BROKER_SELECTOR)
    while not stop.is_set():
        try:
            now = kube.pod_uids(namespace, BROKER_SELECTOR)
            for name, uid in now.items():
                if name in seen and seen[name] != uid and name not in order:
                    order.append(name)
            seen.update(now)
            status = (kube.resource(namespace, "brokerclusters", CLUSTER) or {}).get("status")
            state = (status or {}).get("rollingRestart")
            if state and state.get("pending") and (not rolling or rolling[-1] != state):
                rolling.append(state)
        except Exception:  # an API hiccup: look again
            pass
        stop.wait(1.0)
