"""The broker side of a BrokerCluster as Kubernetes objects: pure functions, spec in, dict out.

Contract with ``broker-image/`` (its entrypoint): broker.id is the pod ordinal; every listener
of ``ODRADEK_LISTENERS`` (``NAME:PORT ...``; else one PLAINTEXT listener on ``ODRADEK_PORT``)
is advertised as ``<pod>.<headless service>.<namespace>.svc.cluster.local:<port>``, unless
the ConfigMap's ``broker-<id>.advertised`` names its outside address (``NAME://host:port`` lines,
``${ODRADEK_NODE_ADDRESS}`` replaced by that env: :mod:`.listeners`); with
``ODRADEK_TLS_DIR`` (the TLS Secret, read-only) it builds the broker's PEM key store in
``ODRADEK_RUN_DIR``; with ``ODRADEK_SASL_USERNAME``/``_PASSWORD`` (from the operator's
credentials Secret) it sets ``sasl.jaas.config``, and writes the readiness probe's client
properties (``ODRADEK_PROBE_CONFIG``) for a secured inter-broker listener. The rest comes from
``/etc/odradek/server.properties`` (the ConfigMap) and ``ODRADEK_OVERRIDES``.

The StatefulSet uses ``updateStrategy: OnDelete``: a template change never restarts pods by
itself; the operator deletes one pod at a time when no partition would drop below
min.insync.replicas (see :mod:`..decisions.restart`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..listener_spec import NODEPORT
from ..security_spec import uses_sasl, uses_tls
from ..spec import BrokerClusterSpec
from .common import (
    RESTART_HASH_ANNOTATION,
    ClusterNames,
    Owner,
    container_security_context,
    metadata,
    pod_security_context,
    render_properties,
)

__all__ = [
    "BROKER",
    "DATA_DIR",
    "bootstrap_service",
    "broker_config",
    "config_map",
    "headless_service",
    "pod_disruption_budget",
    "pod_monitor",
    "rack_rbac",
    "statefulset",
    "stop_brokers_patch",
]

BROKER = "broker"
DATA_DIR = "/var/lib/odradek/data"
CONFIG_DIR = "/etc/odradek"
RACK_DIR = "/etc/odradek-rack"
TLS_DIR = "/etc/odradek-tls"
RUN_DIR = "/var/run/odradek"  # derived key store, probe properties: memory, pod-private
PROBE_CONFIG = f"{RUN_DIR}/probe.properties"
BROKER_UID = 10001  # the broker image's user
TERMINATION_GRACE_SECONDS = 180  # controlled shutdown moves leadership away first


def broker_config(spec: BrokerClusterSpec, zookeeper_connect: str) -> dict[str, str]:
    """The cluster-wide server.properties: the user's config plus what the operator owns.
    Per-pod keys (broker.id, listeners, log.dirs) are the entrypoint's."""
    config = dict(spec.config)
    config["zookeeper.connect"] = zookeeper_connect
    config["metrics.port"] = str(spec.metrics_port if spec.metrics_enabled else 0)
    config.update(security_config(spec))
    return config


def security_config(spec: BrokerClusterSpec) -> dict[str, str]:
    """The cluster-wide listener and security keys (none for the single-port form, so a
    cluster created before named listeners keeps its ConfigMap). Key store paths and the
    inter-broker password are the entrypoint's: they come from mounted Secrets."""
    if spec.legacy_listeners:
        return {}
    protocols = {listener.protocol for listener in spec.listeners}
    config = {
        "listener.security.protocol.map": ",".join(
            f"{listener.name}:{listener.protocol}" for listener in spec.listeners),
        "inter.broker.listener.name": spec.inter_broker_listener,
    }
    if spec.tls is not None and any(uses_tls(p) for p in protocols):
        config["ssl.client.auth"] = spec.tls.client_auth
    if any(uses_sasl(p) for p in protocols):
        config["sasl.enabled.mechanisms"] = ",".join(spec.authentication.mechanisms)
        if spec.operator_uses_sasl:
            config["sasl.mechanism.inter.broker.protocol"] = \
                spec.authentication.operator_mechanism
    return config


def config_map(names: ClusterNames, owner: Owner | None, config: Mapping[str, str],
               per_broker: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``per_broker``: the brokers' own keys beside server.properties (their outside
    addresses, ``broker-<id>.advertised``: :mod:`.listeners`)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": metadata(names.config_map, names, BROKER, owner),
            "data": {"server.properties": render_properties(config), **(per_broker or {})}}


def _ports(spec: BrokerClusterSpec) -> list[dict[str, Any]]:
    ports = [{"name": listener.port_name, "port": listener.port,
              "targetPort": listener.port_name, "protocol": "TCP"}
             for listener in spec.listeners]
    if spec.metrics_enabled:
        ports.append({"name": "metrics", "port": spec.metrics_port, "targetPort": "metrics",
                      "protocol": "TCP"})
    return ports


def headless_service(names: ClusterNames, owner: Owner | None, spec: BrokerClusterSpec
                     ) -> dict[str, Any]:
    """Gives every broker its stable DNS name. Not-ready addresses are published so brokers
    resolve each other while they start (replication needs that before readiness)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": metadata(names.headless_service, names, BROKER, owner),
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                     "selector": names.selector(BROKER), "ports": _ports(spec)}}


def bootstrap_service(names: ClusterNames, owner: Owner | None, spec: BrokerClusterSpec
                      ) -> dict[str, Any]:
    """The one address clients (and the operator) bootstrap from; ready brokers only."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": metadata(names.bootstrap_service, names, BROKER, owner),
            "spec": {"type": "ClusterIP", "selector": names.selector(BROKER),
                     "ports": [p for p in _ports(spec) if p["name"] != "metrics"]}}


def pod_disruption_budget(names: ClusterNames, owner: Owner | None) -> dict[str, Any]:
    """At most one broker voluntarily down (drains, node upgrades): the ISR-aware roll is the
    operator's; the PDB keeps a node drain from taking two brokers at once."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": metadata(names.statefulset, names, BROKER, owner),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": names.selector(BROKER)}}}


# The target labels every broker dashboard and alert selects on (docs/observability.md):
# prometheus-operator adds ``namespace``; ``cluster`` is the BrokerCluster's name (the pods'
# instance label) and ``broker`` the broker id (the StatefulSet ordinal at the end of the
# pod name, which the entrypoint makes the broker.id).
BROKER_TARGET_RELABELINGS = (
    {"sourceLabels": ["__meta_kubernetes_pod_label_app_kubernetes_io_instance"],
     "targetLabel": "cluster"},
    {"sourceLabels": ["__meta_kubernetes_pod_name"], "regex": ".*-([0-9]+)",
     "targetLabel": "broker", "replacement": "$1"},
)


def pod_monitor(names: ClusterNames, owner: Owner | None) -> dict[str, Any]:
    """prometheus-operator's PodMonitor (applied only when its CRD exists)."""
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
            "metadata": metadata(names.statefulset, names, BROKER, owner),
            "spec": {"selector": {"matchLabels": names.selector(BROKER)},
                     "podMetricsEndpoints": [{
                         "port": "metrics", "path": "/metrics",
                         "relabelings": [dict(r) for r in BROKER_TARGET_RELABELINGS]}]}}


def _rack_init_container(spec: BrokerClusterSpec) -> dict[str, Any]:
    """Reads the node's topology label through the API (the downward API cannot) and leaves
    it in a file the broker container turns into ``broker.rack``."""
    script = (
        "import json, os, ssl, urllib.request\n"
        "sa = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
        "token = open(sa + '/token').read()\n"
        "url = 'https://%s:%s/api/v1/nodes/%s' % (os.environ['KUBERNETES_SERVICE_HOST'],"
        " os.environ['KUBERNETES_SERVICE_PORT'], os.environ['NODE_NAME'])\n"
        "request = urllib.request.Request(url, headers={'Authorization': 'Bearer ' + token})\n"
        "context = ssl.create_default_context(cafile=sa + '/ca.crt')\n"
        "node = json.load(urllib.request.urlopen(request, context=context, timeout=30))\n"
        "rack = node['metadata'].get('labels', {}).get(os.environ['RACK_TOPOLOGY_KEY'], '')\n"
        f"open('{RACK_DIR}/rack', 'w').write(rack)\n"
    )
    return {
        "name": "rack", "image": spec.image, "imagePullPolicy": spec.image_pull_policy,
        "command": ["python3", "-c", script],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "RACK_TOPOLOGY_KEY", "value": spec.rack_topology_key}],
        "volumeMounts": [{"name": "rack", "mountPath": RACK_DIR}],
        "securityContext": container_security_context(),
    }


def rack_rbac(names: ClusterNames, owner: Owner | None) -> list[dict[str, Any]]:
    """The broker pods' ServiceAccount and its right to read nodes (for the rack label).
    The ClusterRole(Binding) are cluster-scoped, so they carry no namespaced owner; the
    operator deletes them with the BrokerCluster."""
    role_name = f"odradek-rack-{names.namespace}-{names.cluster}"
    labels = names.labels(BROKER)
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": metadata(names.broker_service_account, names, BROKER, owner)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": role_name, "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": role_name, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": role_name},
         "subjects": [{"kind": "ServiceAccount", "name": names.broker_service_account,
                       "namespace": names.namespace}]},
    ]


def claim_retention(delete_claim: bool) -> dict[str, str]:
    """``spec.storage.deleteClaim`` decides for both a scale-down and the cluster's deletion,
    as Strimzi's ``deleteClaim`` does: false keeps a removed broker's claim (a later
    scale-up gives the same broker id its volume back, and an accidental scale-down loses no
    data); true deletes it once the StatefulSet removes the pod, which happens only after the
    broker was drained."""
    policy = "Delete" if delete_claim else "Retain"
    return {"whenScaled": policy, "whenDeleted": policy}


def stop_brokers_patch(delete_claim: bool) -> dict[str, Any]:
    """The StatefulSet patch that stops every broker before the cluster is deleted.

    Scaling to zero is a scale-down: the claims follow :func:`claim_retention`, kept unless
    ``deleteClaim``, exactly as the deletion that follows treats them."""
    return {"spec": {"replicas": 0,
                     "persistentVolumeClaimRetentionPolicy": claim_retention(delete_claim)}}


def _security_env(spec: BrokerClusterSpec, env: list[dict[str, Any]],
                  mounts: list[dict[str, Any]], volumes: list[dict[str, Any]]) -> None:
    """Named listeners, the TLS Secret (read-only) and the inter-broker credentials."""
    env.append({"name": "ODRADEK_LISTENERS", "value": " ".join(
        f"{listener.name}:{listener.port}" for listener in spec.listeners)})
    env.append({"name": "ODRADEK_INTER_BROKER_PROTOCOL", "value": spec.inter_broker.protocol})
    env.append({"name": "ODRADEK_RUN_DIR", "value": RUN_DIR})
    env.append({"name": "ODRADEK_PROBE_CONFIG", "value": PROBE_CONFIG})
    if any(listener.type == NODEPORT for listener in spec.listeners):
        # What a nodeport listener advertises: the node's address, known once scheduled.
        env.append({"name": "ODRADEK_NODE_ADDRESS",
                    "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}})
    volumes.append({"name": "run", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}})
    mounts.append({"name": "run", "mountPath": RUN_DIR})
    if spec.tls is not None:
        env.append({"name": "ODRADEK_TLS_DIR", "value": TLS_DIR})
        volumes.append({"name": "tls", "secret": {"secretName": spec.tls.secret_name,
                                                  "defaultMode": 0o440}})
        mounts.append({"name": "tls", "mountPath": TLS_DIR, "readOnly": True})
    operator = spec.authentication.operator_secret
    if operator is not None and spec.operator_uses_sasl:
        env += [
            {"name": "ODRADEK_SASL_MECHANISM", "value": spec.authentication.operator_mechanism},
            {"name": "ODRADEK_SASL_USERNAME", "valueFrom": {"secretKeyRef": {
                "name": operator.name, "key": operator.key}}},
            {"name": "ODRADEK_SASL_PASSWORD", "valueFrom": {"secretKeyRef": {
                "name": operator.name, "key": spec.authentication.operator_password_key}}},
        ]


def statefulset(names: ClusterNames, owner: Owner | None, spec: BrokerClusterSpec, *,
                replicas: int, restart_hash: str) -> dict[str, Any]:
    """``replicas`` is the operator's decision (it lags spec.replicas while a scale-down
    drains brokers); ``restart_hash`` digests the restart-relevant config and the data of the
    Secrets the brokers mount (a rotated certificate rolls the brokers, ISR-aware)."""
    selector = names.selector(BROKER)
    env: list[dict[str, Any]] = [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "ODRADEK_HEADLESS_SERVICE", "value": names.headless_service},
        {"name": "ODRADEK_PORT", "value": str(spec.port)},
        {"name": "ODRADEK_DATA_DIR", "value": DATA_DIR},
        {"name": "ODRADEK_CONFIG", "value": f"{CONFIG_DIR}/server.properties"},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": "data", "mountPath": DATA_DIR},
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}]
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": names.config_map}}]
    if not spec.legacy_listeners:
        _security_env(spec, env, mounts, volumes)
    probe_port: int | str = "kafka" if spec.legacy_listeners else spec.port
    container: dict[str, Any] = {
        "name": BROKER, "image": spec.image, "imagePullPolicy": spec.image_pull_policy,
        "env": env,
        "ports": [{"name": listener.port_name, "containerPort": listener.port,
                   "protocol": "TCP"} for listener in spec.listeners],
        # Ready = registered in ZooKeeper and in the ISR of everything it replicates (the
        # image's probe): the bootstrap Service then routes only to caught-up brokers. The
        # probe is a Python process: on a busy node its start-up alone took over 8 s (e2e at
        # load 27), so it gets 20 s and asks the broker for at most 10.
        "readinessProbe": {"exec": {"command": ["odradek", "broker-ready", "--timeout", "10"]},
                           "initialDelaySeconds": 3, "periodSeconds": 10, "timeoutSeconds": 20,
                           "failureThreshold": 3},
        # A broker listens only once it has registered in ZooKeeper, which on a busy node (or
        # behind a slow ensemble) can take minutes: the startup probe gives it ten, so the
        # liveness probe never kills a broker that is still starting (a restart starts over).
        "startupProbe": {"tcpSocket": {"port": probe_port}, "periodSeconds": 10,
                         "failureThreshold": 60},
        "livenessProbe": {"tcpSocket": {"port": probe_port}, "periodSeconds": 10,
                          "failureThreshold": 6},
        "volumeMounts": mounts,
        "securityContext": container_security_context(),
    }
    if spec.metrics_enabled:
        container["ports"].append({"name": "metrics", "containerPort": spec.metrics_port,
                                   "protocol": "TCP"})
    if spec.resources:
        container["resources"] = dict(spec.resources)
    pod_spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        "securityContext": pod_security_context(BROKER_UID),
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": selector},
                                               "topologyKey": "kubernetes.io/hostname"}}]}},
        "containers": [container],
        "volumes": volumes,
    }
    if spec.rack_topology_key:
        pod_spec["serviceAccountName"] = names.broker_service_account
        pod_spec["initContainers"] = [_rack_init_container(spec)]
        volumes.append({"name": "rack", "emptyDir": {}})
        mounts.append({"name": "rack", "mountPath": RACK_DIR, "readOnly": True})
        container["command"] = ["sh", "-c",
                                f'ODRADEK_OVERRIDES="$ODRADEK_OVERRIDES broker.rack=$(cat '
                                f'{RACK_DIR}/rack)"; export ODRADEK_OVERRIDES; '
                                "exec /usr/local/bin/odradek-entrypoint"]
    else:
        pod_spec["automountServiceAccountToken"] = False
    claim: dict[str, Any] = {
        "metadata": {"name": "data", "labels": names.labels(BROKER)},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": spec.storage_size}}}}
    if spec.storage_class:
        claim["spec"]["storageClassName"] = spec.storage_class
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": metadata(names.statefulset, names, BROKER, owner),
        "spec": {
            "serviceName": names.headless_service,
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "OnDelete"},
            "persistentVolumeClaimRetentionPolicy": claim_retention(spec.delete_claim),
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": names.labels(BROKER),
                             "annotations": {RESTART_HASH_ANNOTATION: restart_hash}},
                "spec": pod_spec,
            },
            "volumeClaimTemplates": [claim],
        },
    }
