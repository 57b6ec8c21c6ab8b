"""A managed ZooKeeper ensemble (the real Apache ZooKeeper) for a BrokerCluster.

Everything this module assumes about the ZooKeeper image is in :data:`IMAGE_CONTRACT`, so a
change of image needs one edit here:

* the server's ``myid`` is the pod ordinal + 1 (ZooKeeper ids start at 1), derived by the
  image's entrypoint from ``HOSTNAME`` (``<statefulset>-<ordinal>``);
* ``ZOO_SERVERS`` lists the ensemble, space-separated, in ZooKeeper's dynamic-config form
  ``server.<id>=<host>:<peer port>:<election port>;<client port>``;
* ``ZOO_DATA_DIR`` is where snapshots, transaction logs and ``myid`` live (a PVC mounted on
  the image's own data folder);
* client, peer and election ports are ZooKeeper's defaults 2181, 2888, 3888;
* readiness is the image's ``zookeeper-ready`` (the server answers ``srvr`` as leader,
  follower or standalone: a member outside a quorum is not Ready); liveness is a TCP check on
  the client port, which a member waiting for its quorum still passes.

Members start in parallel (``podManagementPolicy: Parallel``): one is Ready only inside a
quorum, so starting them one at a time would wait forever for the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..spec import ManagedZooKeeper
from .common import (
    ClusterNames,
    Owner,
    container_security_context,
    metadata,
    pod_security_context,
)

__all__ = ["IMAGE_CONTRACT", "ZooKeeperImageContract", "zookeeper_connect", "zookeeper_manifests"]

ZOOKEEPER = "zookeeper"


@dataclass(frozen=True)
class ZooKeeperImageContract:
    client_port: int = 2181
    peer_port: int = 2888
    election_port: int = 3888
    data_dir: str = "/var/lib/zookeeper/data"
    ready_command: tuple[str, ...] = ("zookeeper-ready",)
    servers_env: str = "ZOO_SERVERS"
    data_dir_env: str = "ZOO_DATA_DIR"
    myid_offset: int = 1  # myid = ordinal + myid_offset
    run_as_user: int = 10001


IMAGE_CONTRACT = ZooKeeperImageContract()


def _host(names: ClusterNames, ordinal: int) -> str:
    return (f"{names.zookeeper}-{ordinal}.{names.zookeeper_headless}."
            f"{names.namespace}.svc.cluster.local")


def zookeeper_servers(names: ClusterNames, replicas: int,
                      contract: ZooKeeperImageContract = IMAGE_CONTRACT) -> str:
    return " ".join(
        f"server.{ordinal + contract.myid_offset}={_host(names, ordinal)}:"
        f"{contract.peer_port}:{contract.election_port};{contract.client_port}"
        for ordinal in range(replicas))


def zookeeper_connect(names: ClusterNames, managed: ManagedZooKeeper,
                      contract: ZooKeeperImageContract = IMAGE_CONTRACT) -> str:
    """Every ensemble member (a client fails over between them), plus the chroot if any."""
    hosts = ",".join(f"{_host(names, i)}:{contract.client_port}"
                     for i in range(managed.replicas))
    return hosts + (managed.chroot or "")


def zookeeper_manifests(names: ClusterNames, owner: Owner | None, managed: ManagedZooKeeper,
                        contract: ZooKeeperImageContract = IMAGE_CONTRACT
                        ) -> list[dict[str, Any]]:
    """Headless Service, client Service, PodDisruptionBudget and StatefulSet."""
    selector = names.selector(ZOOKEEPER)
    ports = [{"name": "client", "port": contract.client_port, "targetPort": "client"},
             {"name": "peer", "port": contract.peer_port, "targetPort": "peer"},
             {"name": "election", "port": contract.election_port, "targetPort": "election"}]
    claim: dict[str, Any] = {
        "metadata": {"name": "data", "labels": names.labels(ZOOKEEPER)},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": managed.storage_size}}}}
    if managed.storage_class:
        claim["spec"]["storageClassName"] = managed.storage_class
    container = {
        "name": ZOOKEEPER, "image": managed.image, "imagePullPolicy": "IfNotPresent",
        "env": [{"name": contract.servers_env, "value": zookeeper_servers(names, managed.replicas,
                                                                          contract)},
                {"name": contract.data_dir_env, "value": contract.data_dir}],
        "ports": [{"name": p["name"], "containerPort": p["port"]} for p in ports],
        "resources": dict(managed.resources),
        "readinessProbe": {"exec": {"command": list(contract.ready_command)},
                           "initialDelaySeconds": 5, "periodSeconds": 5, "timeoutSeconds": 5,
                           "failureThreshold": 3},
        "startupProbe": {"tcpSocket": {"port": "client"}, "periodSeconds": 10,
                         "failureThreshold": 30},
        "livenessProbe": {"tcpSocket": {"port": "client"}, "periodSeconds": 10,
                          "failureThreshold": 6},
        "volumeMounts": [{"name": "data", "mountPath": contract.data_dir}],
        "securityContext": container_security_context(),
    }
    return [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": metadata(names.zookeeper_headless, names, ZOOKEEPER, owner),
         "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                  "selector": selector, "ports": ports}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": metadata(names.zookeeper, names, ZOOKEEPER, owner),
         "spec": {"type": "ClusterIP", "selector": selector, "ports": ports[:1]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": metadata(names.zookeeper, names, ZOOKEEPER, owner),
         "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector}}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet",
         "metadata": metadata(names.zookeeper, names, ZOOKEEPER, owner),
         "spec": {
             "serviceName": names.zookeeper_headless,
             "replicas": managed.replicas,
             # A quorum forms only when every server is up: start them together.
             "podManagementPolicy": "Parallel",
             "updateStrategy": {"type": "RollingUpdate"},
             "persistentVolumeClaimRetentionPolicy": {
                 "whenScaled": "Retain",
                 "whenDeleted": "Delete" if managed.delete_claim else "Retain"},
             "selector": {"matchLabels": selector},
             "template": {
                 "metadata": {"labels": names.labels(ZOOKEEPER)},
                 "spec": {
                     "automountServiceAccountToken": False,
                     "securityContext": pod_security_context(contract.run_as_user),
                     "affinity": {"podAntiAffinity": {
                         "preferredDuringSchedulingIgnoredDuringExecution": [{
                             "weight": 100, "podAffinityTerm": {
                                 "labelSelector": {"matchLabels": selector},
                                 "topologyKey": "kubernetes.io/hostname"}}]}},
                     "containers": [container],
                 },
             },
             "volumeClaimTemplates": [claim],
         }},
    ]
