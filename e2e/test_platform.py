"""The platform as a user meets it: ``helm install --wait`` of the chart (operator + a
BrokerCluster with a managed ZooKeeper), ``kubectl apply -f examples/topic.yaml``, clients in
the cluster, a broker lost under acks=all load, Topic finalizers, ``helm uninstall``.

One scenario, in order, on one install (each step needs the one before; an install is the
costly part): every step says what it proved in the test's output.
"""

from __future__ import annotations

import time

import pytest

from e2e.conftest import Images
from e2e.helm import REPO_ROOT
from e2e.kube import Kube, conditions
from e2e.platform import CLUSTER, Platform, platform_values

pytestmark = pytest.mark.e2e

LOAD_RECORDS = 3000
LOAD_RATE = 100.0  # records per second: the load spans the deletion and the pod's return


def _topic(namespace: str, name: str, policy: str, partitions: int = 3) -> dict:
    return {"apiVersion": "odradek.dev/v1beta1", "kind": "Topic",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterRef": {"name": CLUSTER}, "partitions": partitions,
                     "replicationFactor": 3, "deletionPolicy": policy}}


def _topic_ready(kube: Kube, namespace: str, name: str, timeout: float = 180) -> dict:
    return kube.wait_resource(
        namespace, "topics", name, "to be Ready with a topic id",
        lambda t: conditions(t).get("Ready", {}).get("status") == "True"
        and bool((t.get("status") or {}).get("topicId")), timeout)


@pytest.mark.timeout(2400)
def test_helm_install_topic_clients_broker_loss_finalizers_and_uninstall(
        kube: Kube, kubectl, images: Images, namespace: str, platform: Platform,
        backend) -> None:
    # 1. helm install --wait, then the BrokerCluster reports Ready.
    cluster = platform.install(platform_values(images, backend.storage_class,
                                               zookeeper_replicas=3))
    status = cluster["status"]
    assert status["readyReplicas"] == 3 and status["underReplicatedPartitions"] == 0
    assert status["bootstrapServers"] == f"{CLUSTER}-bootstrap.{namespace}.svc:9092"
    assert status["controllerId"] in (0, 1, 2)

    # 2. kubectl apply -f examples/topic.yaml → Ready, with the topic id Kafka assigned.
    kubectl("apply", "-n", namespace, "-f", str(REPO_ROOT / "examples" / "topic.yaml"))
    topic = _topic_ready(kube, namespace, "page-views")
    assert topic["status"]["partitions"] == 12 and topic["status"]["replicationFactor"] == 3
    assert kubectl("get", "-n", namespace, "topics", "-o", "wide").count(
        topic["status"]["topicId"]) == 1
    print(f"Topic page-views Ready: id {topic['status']['topicId']}")

    # 3. Produce and consume through the bootstrap Service from an in-cluster Job.
    log = platform.run("smoke", (
        "set -e\n"
        f"seq 0 99 | sed 's/^/hello-/' | odradek produce --bootstrap-server {platform.bootstrap} "
        "page-views\n"
        f"odradek consume --bootstrap-server {platform.bootstrap} page-views --from-beginning "
        "--max-messages 100 --timeout-ms 60000\n"))
    consumed = sorted(line for line in log.splitlines() if line.startswith("hello-"))
    assert consumed == sorted(f"hello-{n}" for n in range(100)), log[-2000:]

    # 4. A broker pod deleted under acks=all load: no acknowledged record is lost.
    platform.start_acked_load("load", "page-views", LOAD_RECORDS, LOAD_RATE)
    acked_before = platform.acked_so_far("load", at_least=300)
    victim = f"{CLUSTER}-1"
    old_uid = kube.core.read_namespaced_pod(victim, namespace).metadata.uid
    kube.core.delete_namespaced_pod(victim, namespace)
    deleted_at = time.monotonic()
    kube.wait_pod_ready(namespace, victim, timeout=300, not_uid=old_uid)
    back_after = time.monotonic() - deleted_at
    acked, failed = platform.finish_acked_load("load", LOAD_RECORDS, timeout=600)
    assert len(acked) > acked_before, "no record was acknowledged after the deletion"
    read = platform.read_back("verify", "page-views")
    missing = sorted(acked - read)
    print(f"acks=all load: {len(acked)}/{LOAD_RECORDS} acknowledged ({acked_before} before the "
          f"deletion), {len(failed)} failed, {len(read)} read back; {victim} Ready again "
          f"{back_after:.0f}s after its deletion")
    assert not missing, f"{len(missing)} acknowledged record(s) lost, e.g. {missing[:10]}"
    platform.wait_cluster_ready(timeout=300)

    # 5. Finalizers: deletionPolicy Delete removes the Kafka topic, Retain keeps it.
    kube.custom.create_namespaced_custom_object("odradek.dev", "v1beta1", namespace, "topics",
                                                _topic(namespace, "scratch", "Delete"))
    _topic_ready(kube, namespace, "scratch")
    assert "odradek.dev/finalizer" in \
        kube.resource(namespace, "topics", "scratch")["metadata"]["finalizers"]
    kube.delete_resource(namespace, "topics", "scratch")
    kube.delete_resource(namespace, "topics", "page-views")
    kube.wait_gone(namespace, "topics", "scratch", timeout=120)
    kube.wait_gone(namespace, "topics", "page-views", timeout=120)
    listed = platform.run("list", f"odradek topics --bootstrap-server {platform.bootstrap} list")
    assert "scratch" not in listed.split(), "deletionPolicy Delete left the Kafka topic"
    assert "page-views" in listed.split(), "deletionPolicy Retain deleted the Kafka topic"

    # 6. helm uninstall: the pre-delete hook deletes the BrokerCluster while the operator
    # runs; the volumes stay (storage.deleteClaim false) with the data in them.
    kube.custom.create_namespaced_custom_object("odradek.dev", "v1beta1", namespace, "topics",
                                                {**_topic(namespace, "leftover", "Delete"),
                                                 "metadata": {
                                                     "name": "leftover", "namespace": namespace,
                                                     "labels": {
                                                         "app.kubernetes.io/instance": "odradek",
                                                         "app.kubernetes.io/managed-by": "Helm"}}})
    _topic_ready(kube, namespace, "leftover")
    claims_before = kube.claims(namespace)
    started = time.monotonic()
    platform.uninstall()
    print(f"helm uninstall --wait: {time.monotonic() - started:.0f}s")
    assert kube.resource(namespace, "topics", "leftover") is None, \
        "the pre-delete hook left a release Topic behind"
    assert kube.resource(namespace, "brokerclusters", CLUSTER) is None
    assert not kube.apps.list_namespaced_deployment(namespace).items
    claims_after = kube.claims(namespace)
    expected = {f"data-{CLUSTER}-{i}" for i in range(3)} | \
        {f"data-{CLUSTER}-zookeeper-{i}" for i in range(3)}
    assert expected <= set(claims_before)
    assert {name: claims_after.get(name) for name in expected} == \
        dict.fromkeys(expected, "Bound"), "deleteClaim false must keep every claim"
