"""Against a REAL Kubernetes API server (KUBECONFIG): CRDs accepted, CEL rules, status
subresource, printer columns, finalizers. Skipped with one line when no cluster is given;
``make e2e-local`` runs them on the local control plane after the e2e suite (e2e/local/e2e.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("KUBECONFIG", "")
KUBECTL = shutil.which("kubectl")

pytestmark = pytest.mark.skipif(
    not (KUBECONFIG and Path(KUBECONFIG).exists() and KUBECTL),
    reason="no Kubernetes API server: set KUBECONFIG (and put kubectl on PATH) to run these")


def kubectl(*args: str, stdin: str | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run([KUBECTL, *args], input=stdin, text=True, capture_output=True,
                          timeout=60, check=check)


@pytest.fixture(scope="module")
def namespace() -> Iterator[str]:
    kubectl("apply", "--server-side", "-f", str(REPO / "crds"))
    for crd in ("brokerclusters", "topics", "consumergroups", "rebalances", "users"):
        kubectl("wait", "--for=condition=Established", f"crd/{crd}.odradek.dev",
                "--timeout=60s")
    name = f"odradek-test-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    yield name
    kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_examples_are_accepted_and_defaults_applied(namespace):
    for example in ("cluster.yaml", "secure-cluster.yaml", "topic.yaml", "consumergroup.yaml",
                    "rebalance.yaml", "user.yaml"):
        kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / example))
    policy = kubectl("get", "-n", namespace, "topic", "page-views",
                     "-o", "jsonpath={.spec.deletionPolicy}").stdout
    assert policy == "Retain"
    port = kubectl("get", "-n", namespace, "brokercluster", "odradek",
                   "-o", "jsonpath={.spec.listeners.port}").stdout
    assert port == "9092"


def test_cel_rules_reject_what_the_schema_alone_cannot(namespace):
    bad = f"""
apiVersion: odradek.dev/v1alpha1
kind: BrokerCluster
metadata: {{name: bad, namespace: {namespace}}}
spec:
  zookeeper: {{connect: "zk:2181"}}
  config: {{broker.id: 3}}
"""
    result = kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.returncode != 0 and "managed by the operator" in result.stderr


SECURITY_CEL: list[tuple[dict[str, Any], str]] = [
    ({"listeners": {"named": [{"name": "A", "port": 9092, "securityProtocol": "SSL"}]}},
     "need tls.secretName"),
    ({"listeners": {"named": [{"name": "A", "port": 9092}]}, "tls": {"secretName": "t"}},
     "no listener uses SSL"),
    ({"listeners": {"named": [{"name": "A", "port": 9092}, {"name": "B", "port": 9092}]}},
     "ports must be unique"),
    ({"listeners": {"named": [{"name": "A", "port": 9092}], "interBrokerListener": "B"}},
     "must name one of listeners.named"),
    ({"listeners": {"port": 9092, "interBrokerListener": "A"}},
     "must name one of listeners.named"),
    ({"listeners": {"named": [{"name": "METRICS", "port": 9092}]}},
     "reserved for the metrics port"),
    ({"config": {"sasl.jaas.config": "x"}}, "managed by the operator"),
]


@pytest.mark.parametrize(("spec", "message"), SECURITY_CEL,
                         ids=[m for _, m in SECURITY_CEL])
def test_cel_rules_reject_inconsistent_listener_security(namespace, spec, message):
    bad = {"apiVersion": "odradek.dev/v1alpha1", "kind": "BrokerCluster",
           "metadata": {"name": "bad-security", "namespace": namespace},
           "spec": {"zookeeper": {"connect": "zk:2181"}, **spec}}
    result = kubectl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert result.returncode != 0 and message in result.stderr, result.stderr


@pytest.mark.parametrize(("spec", "accepted"), [
    ({"mode": "add-brokers", "brokers": [3]}, True), ({"mode": "add-brokers"}, False),
    ({"brokers": [3]}, False), ({}, True)])
def test_a_rebalance_names_brokers_exactly_when_its_mode_needs_them(namespace, spec, accepted):
    obj = {"apiVersion": "odradek.dev/v1alpha1", "kind": "Rebalance",
           "metadata": {"name": "r", "namespace": namespace},
           "spec": {"clusterRef": {"name": "odradek"}, **spec}}
    result = kubectl("apply", "--dry-run=server", "-f", "-", stdin=json.dumps(obj), check=False)
    assert (result.returncode == 0) == accepted, result.stderr
    if not accepted:
        assert "brokers lists the brokers to add or remove" in result.stderr


def test_status_is_a_subresource(namespace):
    kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / "topic.yaml"))
    kubectl("patch", "-n", namespace, "topic", "page-views", "--subresource=status",
            "--type=merge", "-p", '{"status": {"partitions": 12, "topicName": "page-views"}}')
    out = kubectl("get", "-n", namespace, "topics").stdout
    assert "page-views" in out and "12" in out


def test_status_writes_do_not_touch_spec_or_generation(namespace):
    kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / "topic.yaml"))
    before = kubectl("get", "-n", namespace, "topic", "page-views",
                     "-o", "jsonpath={.metadata.generation}").stdout
    kubectl("patch", "-n", namespace, "topic", "page-views", "--subresource=status",
            "--type=merge", "-p", '{"spec": {"partitions": 99}, "status": {"partitions": 12}}')
    spec = kubectl("get", "-n", namespace, "topic", "page-views",
                   "-o", "jsonpath={.spec.partitions} {.metadata.generation}").stdout
    assert spec == f"12 {before}"


def test_finalizer_holds_a_deleted_topic_until_removed(namespace):
    manifest = f"""
apiVersion: odradek.dev/v1alpha1
kind: Topic
metadata:
  name: held
  namespace: {namespace}
  finalizers: [odradek.dev/finalizer]
spec:
  clusterRef: {{name: odradek}}
  partitions: 1
  replicationFactor: 1
"""
    kubectl("apply", "-f", "-", stdin=manifest)
    kubectl("delete", "-n", namespace, "topic", "held", "--wait=false")
    stamp = kubectl("get", "-n", namespace, "topic", "held",
                    "-o", "jsonpath={.metadata.deletionTimestamp}").stdout
    assert stamp, "a Topic with a finalizer must stay (Terminating) until it is removed"
    kubectl("patch", "-n", namespace, "topic", "held", "--type=merge",
            "-p", '{"metadata": {"finalizers": null}}')
    kubectl("wait", "-n", namespace, "--for=delete", "topic/held", "--timeout=30s")


def test_topic_partitions_can_grow_but_a_decrease_is_refused_on_apply(namespace):
    topic = {"apiVersion": "odradek.dev/v1alpha1", "kind": "Topic",
             "metadata": {"name": "grows", "namespace": namespace},
             "spec": {"clusterRef": {"name": "odradek"}, "partitions": 12,
                      "replicationFactor": 1}}
    kubectl("apply", "-f", "-", stdin=json.dumps(topic))
    shrink = kubectl("patch", "-n", namespace, "topic", "grows", "--type=merge",
                     "-p", '{"spec": {"partitions": 6}}', check=False)
    assert shrink.returncode != 0, "the API server accepted a partition decrease"
    assert "partitions cannot be decreased (Kafka cannot remove partitions)" in shrink.stderr, \
        shrink.stderr
    kubectl("patch", "-n", namespace, "topic", "grows", "--type=merge",
            "-p", '{"spec": {"partitions": 16}}')
    grown = kubectl("get", "-n", namespace, "topic", "grows",
                    "-o", "jsonpath={.spec.partitions}").stdout
    assert grown == "16"


@pytest.mark.parametrize("kind", ["Topic", "ConsumerGroup"])
def test_a_missing_cluster_ref_is_refused_in_one_clear_line(namespace, kind):
    spec = {"partitions": 1, "replicationFactor": 1} if kind == "Topic" else {}
    bad = {"apiVersion": "odradek.dev/v1alpha1", "kind": kind,
           "metadata": {"name": "no-cluster", "namespace": namespace}, "spec": spec}
    result = kubectl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f'The {kind} "no-cluster" is invalid: spec.clusterRef: Required value: set '
        "clusterRef.name (a BrokerCluster in this namespace) or clusterRef.bootstrapServers "
        "(host:port,...)"], result.stderr
