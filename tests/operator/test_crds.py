"""The CRDs, offline: structural schemas, every example valid, wrong specs rejected.

Validation (:mod:`tests.operator.crd_schema`) uses a real OpenAPI 3.0 schema validator on the
CRDs' ``openAPIV3Schema``. CEL rules (``x-kubernetes-validations``) need the API server: they
are checked in ``test_api_server.py`` when a cluster is available.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.operator.crd_schema import (
    CRDS,
    REPO,
    STORAGE_VERSION,
    errors,
    schema_of,
    version_of,
)


def test_every_kind_is_served_with_status_subresource_and_printer_columns():
    assert set(CRDS) == {"BrokerCluster", "Topic", "ConsumerGroup", "Rebalance", "User"}
    for crd in CRDS.values():
        assert crd["spec"]["group"] == "odradek.dev"
        for version in crd["spec"]["versions"]:
            assert version["served"]
            assert version["subresources"]["status"] == {}
            assert version["additionalPrinterColumns"]


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_v1beta1_is_stored_and_v1alpha1_still_served_but_deprecated(kind):
    versions = {v["name"]: v for v in CRDS[kind]["spec"]["versions"]}
    assert set(versions) == {"v1alpha1", "v1beta1"}
    assert [name for name, v in versions.items() if v["storage"]] == [STORAGE_VERSION]
    assert "deprecated" not in versions["v1beta1"]
    alpha = versions["v1alpha1"]
    assert alpha["served"] and alpha["deprecated"] is True
    assert f"use odradek.dev/v1beta1 {kind}" in alpha["deprecationWarning"]


def _typed_fields(schema: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Every field path of ``schema`` with what decides how the API server stores it."""
    return {path: (node.get("type"), node.get("format"),
                   node.get("x-kubernetes-int-or-string", False),
                   node.get("x-kubernetes-preserve-unknown-fields", False))
            for path, node in _walk(schema, "")}


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_no_field_is_lost_between_v1alpha1_and_v1beta1(kind):
    """``conversion.strategy: None`` only rewrites apiVersion; the API server then prunes what
    the target version's schema does not know. So the conversion loses nothing exactly when
    every field of each version exists, with the same type, in the other: a field only in
    v1beta1 would be dropped by a v1alpha1 client's update. When the schemas must diverge, the
    CRD needs a conversion webhook (crds/README.md)."""
    assert CRDS[kind]["spec"]["conversion"] == {"strategy": "None"}
    alpha = _typed_fields(schema_of(kind, "v1alpha1"))
    beta = _typed_fields(schema_of(kind, "v1beta1"))
    missing = {path: shape for path, shape in alpha.items() if beta.get(path) != shape}
    assert missing == {}, f"{kind}: v1alpha1 fields v1beta1 lacks or types differently"
    added = sorted(set(beta) - set(alpha))
    assert added == [], f"{kind}: v1beta1-only fields need a conversion webhook"


def _walk(schema: dict[str, Any], path: str):
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_schemas_are_structural(kind):
    """Every node has a type (or is int-or-string), as the API server requires."""
    untyped = [path for path, node in _walk(schema_of(kind), kind)
               if "type" not in node and not node.get("x-kubernetes-int-or-string")
               and not node.get("x-kubernetes-preserve-unknown-fields")]
    assert untyped == []


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_printer_columns_point_at_schema_fields(kind):
    version = version_of(kind)
    fields = {path for path, _ in _walk(schema_of(kind), "")}
    for column in version["additionalPrinterColumns"]:
        json_path = column["jsonPath"].split("[")[0]
        if json_path.startswith(".metadata"):
            continue
        assert json_path in fields, f"{kind} column {column['name']}: {json_path} not in schema"


EXAMPLES = [doc for path in sorted((REPO / "examples").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda d: d["kind"])
def test_examples_are_valid(example):
    assert errors(example["kind"], example) == []


def test_every_example_is_safe_to_apply():
    """An example is applied as it is: nothing in it may rewrite data. A ConsumerGroup reset
    overwrites the offsets the consumers resume from, so an example shows it commented out
    (a dry run, which only computes the offsets, would be harmless)."""
    active = [f"{doc['kind']} {doc['metadata']['name']}" for doc in EXAMPLES
              if doc["kind"] == "ConsumerGroup" and (doc["spec"].get("reset") or {})
              and not doc["spec"]["reset"].get("dryRun", False)]
    assert active == [], f"examples that reset consumer offsets when applied: {active}"


def _commented_reset() -> dict[str, Any]:
    """The reset examples/consumergroup.yaml documents in comments, uncommented."""
    lines = (REPO / "examples" / "consumergroup.yaml").read_text().splitlines()
    start = lines.index("  # reset:")
    block = "\n".join("  " + line[len("  # "):] for line in lines[start:]
                      if line.startswith("  # "))
    reset: dict[str, Any] = yaml.safe_load(block)["reset"]
    return reset


def test_the_commented_reset_of_the_example_is_valid_and_a_dry_run():
    group = _example("ConsumerGroup")
    group["spec"]["reset"] = _commented_reset()
    assert errors("ConsumerGroup", group) == []
    assert group["spec"]["reset"]["dryRun"] is True


def _example(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(d for d in EXAMPLES if d["kind"] == kind))


def _set(obj: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    *parents, last = dotted.split(".")
    node = obj
    for key in parents:
        node = node.setdefault(key, {})
    if value is _DELETE:
        node.pop(last, None)
    else:
        node[last] = value
    return obj


_DELETE = object()

NEGATIVE = [
    ("BrokerCluster", "spec.replicas", 0),
    ("BrokerCluster", "spec.replicas", "three"),
    ("BrokerCluster", "spec.storage.size", "lots"),
    ("BrokerCluster", "spec.imagePullPolicy", "Sometimes"),
    ("BrokerCluster", "spec.config", {"log.retention.ms": {"nested": 1}}),
    ("BrokerCluster", "spec.zookeeper.managed.replicas", 4),
    ("BrokerCluster", "spec.zookeeper", _DELETE),
    ("BrokerCluster", "spec.listeners.port", 80),
    ("BrokerCluster", "spec.listeners.named", [{"name": "lower", "port": 9092}]),
    ("BrokerCluster", "spec.listeners.named",
     [{"name": "A", "port": 9092, "securityProtocol": "TLS"}]),
    ("BrokerCluster", "spec.listeners.named", [{"port": 9092}]),
    ("BrokerCluster", "spec.listeners.named",
     [{"name": "A", "port": 9092, "type": "hostport"}]),
    ("BrokerCluster", "spec.listeners.named",
     [{"name": "A", "port": 9092, "type": "nodeport",
       "configuration": {"bootstrap": {"nodePort": 9092}}}]),
    ("BrokerCluster", "spec.listeners.named",
     [{"name": "A", "port": 9092, "type": "nodeport",
       "configuration": {"brokers": [{"nodePort": 31000}]}}]),
    ("BrokerCluster", "spec.tls", {"clientAuth": "none"}),
    ("BrokerCluster", "spec.authentication.mechanisms", ["GSSAPI"]),
    ("BrokerCluster", "spec.authentication.users", [{"name": "u"}]),
    ("Topic", "spec.partitions", 0),
    ("Topic", "spec.replicationFactor", _DELETE),
    ("Topic", "spec.deletionPolicy", "Keep"),
    ("Topic", "spec.topicName", "bad name!"),
    ("Topic", "spec.clusterRef.bootstrapServers", "no-port"),
    ("Topic", "spec.config", {"retention.ms": [1, 2]}),
    ("ConsumerGroup", "spec.reset.strategy", "middle"),
    ("ConsumerGroup", "spec.reset.id", _DELETE),
    ("ConsumerGroup", "spec.reset.offset", -1),
    ("ConsumerGroup", "spec.reset.timestamp", "yesterday"),
    ("Rebalance", "spec.mode", "shuffle"),
    ("Rebalance", "spec.goals", ["CpuUsageDistributionGoal"]),
    ("Rebalance", "spec.replicationThrottle", -1),
    ("Rebalance", "spec.brokers", ["b1"]),
    ("User", "spec.authentication.type", "plain"),
    ("User", "spec.authorization.acls", [{"resource": {"type": "topic", "name": "t"},
                                          "operations": ["Fly"]}]),
    ("User", "spec.quotas", {"producerByteRate": -1}),
]


@pytest.mark.parametrize(("kind", "field", "value"), NEGATIVE,
                         ids=[f"{k}:{f}={'<deleted>' if v is _DELETE else v}"
                              for k, f, v in NEGATIVE])
def test_invalid_specs_are_rejected(kind, field, value):
    obj = _example(kind)
    if field.startswith("spec.reset."):  # a valid reset, then the one wrong field
        obj["spec"]["reset"] = _commented_reset()
        assert errors(kind, obj) == []
    obj = _set(obj, field, value)
    if field == "spec.reset.offset":
        obj["spec"]["reset"]["strategy"] = "offset"
    assert errors(kind, obj), f"{kind} with {field}={value!r} was accepted"


def _rules(kind: str, *path: str) -> list[dict[str, Any]]:
    node = schema_of(kind)
    for name in path:
        node = node["properties"][name]
    return list(node.get("x-kubernetes-validations") or [])


CLUSTER_REF_MESSAGE = ("set clusterRef.name (a BrokerCluster in this namespace) or "
                       "clusterRef.bootstrapServers (host:port,...)")


@pytest.mark.parametrize("kind", ["Topic", "ConsumerGroup", "Rebalance", "User"])
def test_a_missing_cluster_ref_is_one_clear_error(kind):
    """Not ``required``: a schema error makes the API server skip the CEL rules and append
    "some validation rules were not checked because the object was invalid" to the
    message. A rule reports it alone, as ``spec.clusterRef: Required value: <message>``
    (test_api_server.py checks what kubectl prints)."""
    assert "clusterRef" not in schema_of(kind)["properties"]["spec"].get("required", [])
    assert {"rule": "has(self.clusterRef)", "fieldPath": ".clusterRef",
            "reason": "FieldValueRequired", "message": CLUSTER_REF_MESSAGE} \
        in _rules(kind, "spec")


def test_topic_partitions_can_grow_but_the_api_server_refuses_a_decrease():
    """A transition rule: the shrink is refused on apply, not accepted and then refused in
    status (test_api_server.py applies it)."""
    (rule,) = _rules("Topic", "spec", "partitions")
    assert rule["rule"] == "self >= oldSelf"
    assert rule["message"] == "partitions cannot be decreased (Kafka cannot remove partitions)"
    # The API server refuses a CRD whose messageExpression has an unbounded estimated cost
    # (string(self) does): a static message only.
    assert "messageExpression" not in rule
