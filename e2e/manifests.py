"""Plain Kubernetes manifests for end-to-end scenarios that need no operator.

Pure functions: settings in, dicts out (no API calls), so a scenario reads as "apply these"
and later suites (Helm, operator) can compare what they deploy with what is known to work.

The shapes follow what the operator will manage (DESIGN.md §4): a ZooKeeper ensemble as a
StatefulSet of the real ZooKeeper (``zookeeper-image/``), brokers as a StatefulSet of
``broker-image/`` with broker.id = ordinal, a headless Service for stable pod DNS names
(``publishNotReadyAddresses``: peers must resolve before they are Ready) and a bootstrap
Service that only routes to Ready brokers.
"""

from __future__ import annotations

from typing import Any

Manifest = dict[str, Any]

UID = 10001
BROKER_PORT = 9092
ZK_CLIENT_PORT = 2181


def _labels(app: str, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": app, "app.kubernetes.io/component": component,
            "app.kubernetes.io/part-of": "odradek-e2e"}


def _service(name: str, selector: dict[str, str], ports: list[tuple[str, int]], *,
             headless: bool) -> Manifest:
    spec: dict[str, Any] = {
        "selector": selector,
        "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports],
    }
    if headless:
        spec |= {"clusterIP": "None", "publishNotReadyAddresses": True}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "labels": selector}, "spec": spec}


def _pod_security() -> dict[str, Any]:
    return {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "fsGroup": UID}


def _container_security() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def _volume_claim(size: str, storage_class: str | None) -> Manifest:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"metadata": {"name": "data"}, "spec": spec}


def _namespace_env() -> Manifest:
    return {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}


def zookeeper_ensemble(image: str, *, name: str = "zk", replicas: int = 3,
                       storage_class: str | None = None) -> list[Manifest]:
    """Headless + client Services and a StatefulSet of ``replicas`` ZooKeeper servers.

    ``podManagementPolicy: Parallel``: a member is Ready only inside a quorum, so starting
    them one at a time (OrderedReady) would wait forever for the first.
    """
    labels = _labels(name, "zookeeper")
    headless = f"{name}-headless"
    container = {
        "name": "zookeeper",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [{"name": "ZK_REPLICAS", "value": str(replicas)},
                {"name": "ZK_HEADLESS_SERVICE", "value": headless},
                {"name": "JAVA_OPTS", "value": "-Xms32m -Xmx128m -XX:+UseSerialGC"},
                _namespace_env()],
        "ports": [{"name": "client", "containerPort": ZK_CLIENT_PORT},
                  {"name": "quorum", "containerPort": 2888},
                  {"name": "election", "containerPort": 3888}],
        "readinessProbe": {"exec": {"command": ["zookeeper-ready"]},
                           "periodSeconds": 3, "timeoutSeconds": 5, "failureThreshold": 3},
        "resources": {"requests": {"cpu": "50m", "memory": "160Mi"},
                      "limits": {"memory": "384Mi"}},
        "securityContext": _container_security(),
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/zookeeper/data"}],
    }
    statefulset = {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "serviceName": headless, "replicas": replicas, "selector": {"matchLabels": labels},
            "podManagementPolicy": "Parallel",
            "template": {"metadata": {"labels": labels},
                         "spec": {"securityContext": _pod_security(),
                                  "terminationGracePeriodSeconds": 30,
                                  "containers": [container]}},
            "volumeClaimTemplates": [_volume_claim("1Gi", storage_class)],
        },
    }
    return [_service(headless, labels, [("client", ZK_CLIENT_PORT), ("quorum", 2888),
                                        ("election", 3888)], headless=True),
            _service(name, labels, [("client", ZK_CLIENT_PORT)], headless=False),
            statefulset]


def zookeeper_connect(namespace: str, *, name: str = "zk", replicas: int = 3,
                      chroot: str = "/odradek") -> str:
    hosts = ",".join(f"{name}-{i}.{name}-headless.{namespace}.svc.cluster.local:{ZK_CLIENT_PORT}"
                     for i in range(replicas))
    return hosts + chroot


def broker_cluster(image: str, zookeeper: str, *, name: str = "odradek", replicas: int = 3,
                   storage_class: str | None = None,
                   config: dict[str, str] | None = None) -> list[Manifest]:
    """Headless + bootstrap Services and a StatefulSet of ``replicas`` odradek brokers.

    broker.id and the advertised listener come from the image's entrypoint (ordinal, pod DNS
    name); readiness is ``odradek broker-ready`` (registered and in every ISR).
    """
    labels = _labels(name, "broker")
    headless = f"{name}-headless"
    settings = {"zookeeper.connect": zookeeper, "default.replication.factor": "3",
                "min.insync.replicas": "2", "offsets.topic.replication.factor": "3",
                "num.partitions": "3", **(config or {})}
    container = {
        "name": "broker",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [{"name": "ODRADEK_HEADLESS_SERVICE", "value": headless},
                {"name": "ODRADEK_OVERRIDES",
                 "value": " ".join(f"{k}={v}" for k, v in settings.items())},
                _namespace_env()],
        "ports": [{"name": "kafka", "containerPort": BROKER_PORT}],
        "readinessProbe": {"exec": {"command": ["odradek", "broker-ready", "--timeout", "4"]},
                           "initialDelaySeconds": 3, "periodSeconds": 5, "timeoutSeconds": 8,
                           "failureThreshold": 3},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                      "limits": {"memory": "512Mi"}},
        "securityContext": _container_security(),
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/odradek/data"}],
    }
    statefulset = {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "serviceName": headless, "replicas": replicas, "selector": {"matchLabels": labels},
            "podManagementPolicy": "Parallel",
            "template": {"metadata": {"labels": labels},
                         "spec": {"securityContext": _pod_security(),
                                  # Controlled shutdown moves leadership away first.
                                  "terminationGracePeriodSeconds": 60,
                                  "containers": [container]}},
            "volumeClaimTemplates": [_volume_claim("1Gi", storage_class)],
        },
    }
    return [_service(headless, labels, [("kafka", BROKER_PORT)], headless=True),
            _service(f"{name}-bootstrap", labels, [("kafka", BROKER_PORT)], headless=False),
            statefulset]


def client_job(name: str, image: str, command: list[str], *, backoff_limit: int = 0,
               deadline_seconds: int = 300) -> Manifest:
    """A Job running one client command in ``image`` (the broker image carries the CLI)."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": _labels("odradek-client", "client")},
        "spec": {
            "backoffLimit": backoff_limit,
            "activeDeadlineSeconds": deadline_seconds,
            "template": {
                "metadata": {"labels": _labels("odradek-client", "client")},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": _pod_security(),
                    "containers": [{
                        "name": "client", "image": image, "imagePullPolicy": "IfNotPresent",
                        "command": command,
                        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                        "securityContext": _container_security(),
                    }],
                },
            },
        },
    }
