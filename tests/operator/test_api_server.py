"""Against a REAL Kubernetes API server (KUBECONFIG): CRDs accepted, CEL rules, status
subresource, printer columns, finalizers, and both served versions (v1beta1 stored, v1alpha1
deprecated) converting every field both ways. Skipped with one line when no cluster is given;
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
import yaml

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
    for example in ("cluster.yaml", "secure-cluster.yaml", "external-listeners.yaml",
                    "topic.yaml", "consumergroup.yaml", "rebalance.yaml", "user.yaml"):
        kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / example))
    policy = kubectl("get", "-n", namespace, "topic", "page-views",
                     "-o", "jsonpath={.spec.deletionPolicy}").stdout
    assert policy == "Retain"
    port = kubectl("get", "-n", namespace, "brokercluster", "odradek",
                   "-o", "jsonpath={.spec.listeners.port}").stdout
    assert port == "9092"


def test_cel_rules_reject_what_the_schema_alone_cannot(namespace):
    bad = f"""
apiVersion: odradek.dev/v1beta1
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
    ({"listeners": {"named": [{"name": "A", "port": 9092},
                              {"name": "B", "port": 9093, "configuration": {}}]}},
     "configuration is for nodeport, loadbalancer and ingress listeners"),
    ({"listeners": {"named": [{"name": "A", "port": 9092},
                              {"name": "B", "port": 9093, "type": "ingress", "configuration": {
                                  "bootstrap": {"host": "k.example"}}}]}},
     "needs securityProtocol SSL or SASL_SSL"),
    ({"listeners": {"named": [{"name": "A", "port": 9092},
                              {"name": "B", "port": 9093, "type": "ingress",
                               "securityProtocol": "SSL"}]}, "tls": {"secretName": "t"}},
     "needs configuration.bootstrap.host"),
    ({"replicas": 2, "tls": {"secretName": "t"},
      "listeners": {"named": [{"name": "A", "port": 9092},
                              {"name": "B", "port": 9093, "type": "ingress",
                               "securityProtocol": "SSL", "configuration": {
                                   "bootstrap": {"host": "k.example"},
                                   "brokers": [{"broker": 0, "host": "b0.example"}]}}]}},
     "needs configuration.brokers[].host for every broker"),
    ({"listeners": {"named": [{"name": "A", "port": 9092},
                              {"name": "B", "port": 9093, "type": "loadbalancer",
                               "configuration": {"bootstrap": {"nodePort": 31000}}}]}},
     "nodePort is for nodeport listeners"),
    ({"listeners": {"named": [{"name": "A", "port": 9092, "type": "nodeport"},
                              {"name": "B", "port": 9093}]}},
     "the inter-broker listener must be type internal"),
]


@pytest.mark.parametrize(("spec", "message"), SECURITY_CEL,
                         ids=[m for _, m in SECURITY_CEL])
def test_cel_rules_reject_inconsistent_listener_security(namespace, spec, message):
    bad = {"apiVersion": "odradek.dev/v1beta1", "kind": "BrokerCluster",
           "metadata": {"name": "bad-security", "namespace": namespace},
           "spec": {"zookeeper": {"connect": "zk:2181"}, **spec}}
    result = kubectl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert result.returncode != 0 and message in result.stderr, result.stderr


@pytest.mark.parametrize(("spec", "accepted"), [
    ({"mode": "add-brokers", "brokers": [3]}, True), ({"mode": "add-brokers"}, False),
    ({"brokers": [3]}, False), ({}, True)])
def test_a_rebalance_names_brokers_exactly_when_its_mode_needs_them(namespace, spec, accepted):
    obj = {"apiVersion": "odradek.dev/v1beta1", "kind": "Rebalance",
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
apiVersion: odradek.dev/v1beta1
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
    topic = {"apiVersion": "odradek.dev/v1beta1", "kind": "Topic",
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
    bad = {"apiVersion": "odradek.dev/v1beta1", "kind": kind,
           "metadata": {"name": "no-cluster", "namespace": namespace}, "spec": spec}
    result = kubectl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f'The {kind} "no-cluster" is invalid: spec.clusterRef: Required value: set '
        "clusterRef.name (a BrokerCluster in this namespace) or clusterRef.bootstrapServers "
        "(host:port,...)"], result.stderr


EXAMPLES = [doc for path in sorted((REPO / "examples").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]
PLURALS = {"BrokerCluster": "brokerclusters", "Topic": "topics", "User": "users",
           "ConsumerGroup": "consumergroups", "Rebalance": "rebalances"}
STATUS = {"observedGeneration": 1, "conditions": [
    {"type": "Ready", "status": "True", "reason": "Converted", "message": "kept field for field",
     "lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": 1}]}


def _read(namespace: str, kind: str, name: str, version: str) -> dict[str, Any]:
    """``kind``/``name`` as the API server serves it at ``version`` (kubectl's
    ``<plural>.<version>.<group>`` form picks the version)."""
    out = kubectl("get", "-n", namespace, f"{PLURALS[kind]}.{version}.odradek.dev", name,
                  "-o", "json")
    obj: dict[str, Any] = json.loads(out.stdout)
    assert obj["apiVersion"] == f"odradek.dev/{version}"
    return obj


def _contains(whole: Any, part: Any) -> bool:
    """Every field of ``part`` is in ``whole`` with the same value, item by item in lists
    (schema defaults may add fields, as ``host: "*"`` to a User's ACL rules)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and _contains(whole[k], v)
                                               for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(whole) == len(part) and \
            all(_contains(w, p) for w, p in zip(whole, part, strict=True))
    return bool(whole == part)


@pytest.mark.parametrize(("written", "read"), [("v1alpha1", "v1beta1"), ("v1beta1", "v1alpha1")])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda d: f"{d['kind']}-{d['metadata']['name']}")
def test_every_field_survives_writing_at_one_version_and_reading_at_the_other(
        namespace, example, written, read):
    """conversion None: what is written at one served version reads back identical at the other
    (spec, labels, annotations and, through the status subresource, status)."""
    name = f"{example['metadata']['name']}-{written}"
    obj = {**example, "apiVersion": f"odradek.dev/{written}",
           "metadata": {**example["metadata"], "name": name, "namespace": namespace,
                        "labels": {"written-at": written}}}
    result = kubectl("apply", "-f", "-", stdin=json.dumps(obj))
    if written == "v1alpha1":
        assert f"odradek.dev/v1alpha1 {example['kind']} is deprecated; use odradek.dev/v1beta1" \
            in result.stderr, f"no deprecation warning: {result.stderr!r}"
    kubectl("patch", "-n", namespace, f"{PLURALS[obj['kind']]}.{written}.odradek.dev", name,
            "--subresource=status", "--type=merge", "-p", json.dumps({"status": STATUS}))
    at_written = _read(namespace, obj["kind"], name, written)
    at_read = _read(namespace, obj["kind"], name, read)
    assert _contains(at_written["spec"], example["spec"]), "the API server dropped a field"
    assert at_read["spec"] == at_written["spec"]
    assert at_read["status"] == at_written["status"] == STATUS
    for key in ("labels", "annotations", "uid", "generation", "resourceVersion"):
        assert at_read["metadata"].get(key) == at_written["metadata"].get(key), key
    # Written back at the other version, nothing changes either.
    at_read["metadata"] = {k: at_read["metadata"][k] for k in ("name", "namespace", "labels")}
    at_read.pop("status")
    kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=json.dumps(at_read))
    assert _read(namespace, obj["kind"], name, written)["spec"] == at_written["spec"]
