"""Outside listeners (nodeport, loadbalancer, ingress), pure: parsing and its errors, the
Services and Ingresses rendered per type, what each broker advertises, the status and the
ListenersReady condition — and clusters with internal listeners only render what they rendered
before outside listeners existed, byte for byte."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from odradek_operator.decisions.listeners import (
    NODE_ADDRESS,
    advertised_addresses,
    listener_status,
)
from odradek_operator.errors import InvalidSpec
from odradek_operator.handlers.broker_cluster import desired_children
from odradek_operator.manifests.common import RESTART_HASH_ANNOTATION, ClusterNames, Owner
from odradek_operator.manifests.listeners import (
    INGRESS_ANNOTATIONS,
    POD_NAME_LABEL,
    listener_objects,
)
from odradek_operator.spec import BrokerClusterSpec

NAMES = ClusterNames("odr", "kafka")
OWNER = Owner("odr", "kafka", "uid-1")
INTERNAL = {"name": "INTERNAL", "port": 9091, "securityProtocol": "SSL"}


def spec_with(*outside: dict[str, Any], replicas: int = 3, **extra: Any) -> BrokerClusterSpec:
    return BrokerClusterSpec.parse({
        "replicas": replicas, "zookeeper": {"connect": "zk:2181"}, "tls": {"secretName": "t"},
        "listeners": {"named": [INTERNAL, *outside], "interBrokerListener": "INTERNAL"},
        **extra})


def nodeport(**configuration: Any) -> dict[str, Any]:
    return {"name": "EXTERNAL", "port": 9094, "securityProtocol": "SASL_SSL",
            "type": "nodeport", "configuration": configuration}


def loadbalancer(**fields: Any) -> dict[str, Any]:
    return {"name": "PUBLIC", "port": 9095, "securityProtocol": "SSL", "type": "loadbalancer",
            **fields}


def ingress(brokers: int = 3, **fields: Any) -> dict[str, Any]:
    return {"name": "ROUTED", "port": 9096, "securityProtocol": "SSL", "type": "ingress",
            "class": "nginx", "configuration": {
                "bootstrap": {"host": "kafka.example"},
                "brokers": [{"broker": b, "host": f"b{b}.kafka.example"}
                            for b in range(brokers)]}, **fields}


def by_name(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def allocated(service: dict[str, Any], node_port: int | None = None,
              balancer: str | None = None) -> dict[str, Any]:
    """A Service as the API server returns it: node port allocated, load balancer assigned."""
    out = json.loads(json.dumps(service))
    if node_port is not None:
        out["spec"]["ports"][0]["nodePort"] = node_port
    out["status"] = {"loadBalancer": {"ingress": [{"ip": balancer}]} if balancer else {}}
    return out


# ------------------------------------------------------------------ internal ones unchanged

#: sha256 of desired_children's JSON as the commit before outside listeners rendered it
#: (05ca53a): a cluster without outside listeners must not roll or change on upgrade.
BEFORE_OUTSIDE_LISTENERS = {
    "legacy": ({"replicas": 3, "zookeeper": {"connect": "zk:2181/odr"}},
               "45a8734ad855c98d022d34faf7eeb80b09273770faf6f0a124bca41b4425edc7"),
    "named": ({"replicas": 3, "zookeeper": {"managed": {"replicas": 1}},
               "listeners": {"named": [INTERNAL, {"name": "CLIENTS", "port": 9092,
                                                  "securityProtocol": "SASL_SSL"}],
                             "interBrokerListener": "INTERNAL"},
               "tls": {"secretName": "odr-tls"}, "rack": {}},
              "35238948354c23ce88713710e6ad87dc2e08683f7b9f34ef285bc3717fea6432"),
}


@pytest.mark.parametrize("form", sorted(BEFORE_OUTSIDE_LISTENERS))
@pytest.mark.parametrize("explicit_type", [False, True])
def test_internal_listeners_render_byte_identical_children(form, explicit_type):
    raw, digest = BEFORE_OUTSIDE_LISTENERS[form]
    raw = json.loads(json.dumps(raw))
    if explicit_type and "named" in raw.get("listeners", {}):
        for listener in raw["listeners"]["named"]:
            listener["type"] = "internal"
    spec = BrokerClusterSpec.parse(raw)
    services: dict[str, Any] = {}
    objs = desired_children(NAMES, OWNER, spec, replicas=3, dynamic_supported=True,
                            pod_monitor=True, secret_inputs={"tls": "abc"},
                            advertised=advertised_addresses(NAMES, spec, 3, services))
    assert hashlib.sha256(json.dumps(objs, sort_keys=True).encode()).hexdigest() == digest
    assert listener_objects(NAMES, OWNER, spec, 3) == []


def test_internal_listeners_report_the_bootstrap_service_and_no_condition():
    spec = spec_with()
    report, condition = listener_status(NAMES, spec, 3, {}, {0: "10.0.0.1"})
    assert condition is None
    # ... unless one was reported: the last outside listener went, and with it the wait.
    _, condition = listener_status(NAMES, spec, 3, {}, {}, reported=True)
    assert condition is not None and condition.status is True
    assert condition.reason == "NoOutsideListeners"
    assert report == [{"name": "INTERNAL", "type": "internal", "securityProtocol": "SSL",
                       "bootstrapServers": "odr-bootstrap.kafka.svc:9091",
                       "addresses": [{"host": "odr-bootstrap.kafka.svc", "port": 9091}]}]


# ------------------------------------------------------------------ parsing errors

@pytest.mark.parametrize(("listener", "message"), [
    ({**INTERNAL, "name": "X", "port": 9099, "type": "hostport"}, "type must be one of"),
    ({"name": "X", "port": 9099, "configuration": {}}, "set type"),
    ({"name": "X", "port": 9099, "class": "nginx", "type": "nodeport"},
     "no meaning for a nodeport listener"),
    (loadbalancer(configuration={"bootstrap": {"nodePort": 31000}}),
     "nodePort is for nodeport listeners"),
    (nodeport(bootstrap={"nodePort": 80}), "must be an integer in 30000..32767"),
    (nodeport(brokers=[{"broker": 0}, {"broker": 0}]), "each broker id at most once"),
    (nodeport(brokers=[{"nodePort": 31000}]), "must be a broker id"),
    (nodeport(bootstrap={"nodePort": 31000}, brokers=[{"broker": 1, "nodePort": 31000}]),
     "every nodePort must be unique"),
    (nodeport(brokers=[{"broker": 0, "annotations": {"a": 1}}]),
     "annotations must map names to strings"),
    ({**ingress(), "securityProtocol": "SASL_PLAINTEXT"}, "must be SSL or SASL_SSL"),
    (ingress(brokers=2), "missing: broker 2"),
    ({**ingress(), "configuration": {"brokers": ingress()["configuration"]["brokers"]}},
     "missing: bootstrap"),
])
def test_a_wrong_outside_listener_is_one_clear_error(listener, message):
    with pytest.raises(InvalidSpec, match=message):
        spec_with(listener)


def test_the_inter_broker_listener_must_stay_internal():
    with pytest.raises(InvalidSpec, match="inter-broker listener: it must be type internal"):
        BrokerClusterSpec.parse({"zookeeper": {"connect": "zk:2181"},
                                 "listeners": {"named": [{"name": "A", "port": 9092,
                                                          "type": "nodeport"}]}})


def test_the_example_parses():
    import yaml

    from tests.operator.crd_schema import REPO
    example = yaml.safe_load((REPO / "examples/external-listeners.yaml").read_text())
    spec = BrokerClusterSpec.parse(example["spec"])
    assert [listener.type for listener in spec.listeners] == \
        ["internal", "nodeport", "loadbalancer", "ingress"]


@given(st.lists(st.fixed_dictionaries({}, optional={
    "broker": st.one_of(st.integers(-2, 5), st.text(max_size=2), st.none()),
    "nodePort": st.one_of(st.integers(29990, 30010), st.booleans()),
    "host": st.one_of(st.text(max_size=3), st.none()),
    "advertisedPort": st.integers(-1, 70000)}), max_size=4))
def test_any_brokers_configuration_parses_or_is_one_clear_error(brokers):
    try:
        spec = spec_with(nodeport(brokers=brokers))
    except InvalidSpec as exc:
        assert "spec.listeners" in str(exc)
    else:
        assert spec.external_listeners[0].external is not None


# ------------------------------------------------------------------ rendered objects

def test_nodeport_renders_a_bootstrap_and_one_service_per_broker_selecting_its_pod():
    spec = spec_with(nodeport(bootstrap={"nodePort": 32100, "annotations": {"a": "b"}},
                              brokers=[{"broker": 1, "nodePort": 32001}]))
    services = by_name(listener_objects(NAMES, OWNER, spec, 3), "Service")
    assert sorted(services) == ["odr-external-0", "odr-external-1", "odr-external-2",
                                "odr-external-bootstrap"]
    boot = services["odr-external-bootstrap"]
    assert boot["spec"]["type"] == "NodePort"
    assert boot["spec"]["selector"] == NAMES.selector("broker")
    assert boot["spec"]["ports"] == [{"name": "external", "port": 9094, "targetPort": "external",
                                      "protocol": "TCP", "nodePort": 32100}]
    assert boot["metadata"]["annotations"] == {"a": "b"}
    assert boot["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    one = services["odr-external-1"]
    assert one["spec"]["selector"] == {**NAMES.selector("broker"), POD_NAME_LABEL: "odr-1"}
    assert one["spec"]["ports"][0]["nodePort"] == 32001
    assert one["spec"]["publishNotReadyAddresses"] is True
    assert "nodePort" not in services["odr-external-0"]["spec"]["ports"][0]  # allocated


def test_loadbalancer_services_carry_the_load_balancer_class():
    spec = spec_with(loadbalancer(**{"class": "metallb"}))
    services = by_name(listener_objects(NAMES, OWNER, spec, 2), "Service")
    assert {s["spec"]["type"] for s in services.values()} == {"LoadBalancer"}
    assert {s["spec"]["loadBalancerClass"] for s in services.values()} == {"metallb"}
    assert len(services) == 3


def test_ingress_renders_cluster_ip_services_behind_passthrough_ingresses():
    spec = spec_with(ingress())
    objs = listener_objects(NAMES, OWNER, spec, 3)
    services, ingresses = by_name(objs, "Service"), by_name(objs, "Ingress")
    assert {s["spec"]["type"] for s in services.values()} == {"ClusterIP"}
    assert sorted(ingresses) == sorted(services)
    boot = ingresses["odr-routed-bootstrap"]
    assert boot["metadata"]["annotations"] == INGRESS_ANNOTATIONS
    assert boot["spec"]["ingressClassName"] == "nginx"
    assert boot["spec"]["tls"] == [{"hosts": ["kafka.example"]}]
    (rule,) = boot["spec"]["rules"]
    assert rule["host"] == "kafka.example"
    assert rule["http"]["paths"][0]["backend"]["service"] == {
        "name": "odr-routed-bootstrap", "port": {"number": 9096}}
    assert ingresses["odr-routed-2"]["spec"]["rules"][0]["host"] == "b2.kafka.example"


# ------------------------------------------------------------------ advertised addresses

def test_nodeport_brokers_advertise_the_node_placeholder_and_their_allocated_port():
    spec = spec_with(nodeport(brokers=[{"broker": 2, "advertisedHost": "kafka-2.example",
                                        "advertisedPort": 443}]))
    services = {s["metadata"]["name"]: allocated(s, 31000 + i) for i, s in
                enumerate(listener_objects(NAMES, OWNER, spec, 3))}
    advertised = advertised_addresses(NAMES, spec, 3, services)
    assert advertised == {0: f"EXTERNAL://{NODE_ADDRESS}:31001\n",
                          1: f"EXTERNAL://{NODE_ADDRESS}:31002\n",
                          2: "EXTERNAL://kafka-2.example:443\n"}
    objs = desired_children(NAMES, OWNER, spec, replicas=3, dynamic_supported=True,
                            pod_monitor=False, advertised=advertised)
    config = next(o for o in objs if o["kind"] == "ConfigMap")["data"]
    assert config["broker-0.advertised"] == f"EXTERNAL://{NODE_ADDRESS}:31001\n"
    sts = next(o for o in objs if o["kind"] == "StatefulSet")
    env = {e["name"]: e for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["ODRADEK_NODE_ADDRESS"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.hostIP"}}


def test_a_changed_advertised_address_changes_the_restart_hash():
    spec = spec_with(loadbalancer())

    def restart_hash(advertised: dict[int, str]) -> str:
        objs = desired_children(NAMES, OWNER, spec, replicas=3, dynamic_supported=True,
                                pod_monitor=False, advertised=advertised)
        sts = next(o for o in objs if o["kind"] == "StatefulSet")
        return str(sts["spec"]["template"]["metadata"]["annotations"][RESTART_HASH_ANNOTATION])

    pending = advertised_addresses(NAMES, spec, 3, {})
    assert pending == {0: "", 1: "", 2: ""}  # pod DNS names meanwhile (the entrypoint's)
    services = {s["metadata"]["name"]: allocated(s, balancer=f"203.0.113.{i}")
                for i, s in enumerate(listener_objects(NAMES, OWNER, spec, 3))}
    assigned = advertised_addresses(NAMES, spec, 3, services)
    assert assigned[1] == "PUBLIC://203.0.113.2:9095\n"
    assert restart_hash(pending) != restart_hash(assigned)  # the roll applies the address


def test_ingress_brokers_advertise_their_host_on_443():
    spec = spec_with(ingress())
    assert advertised_addresses(NAMES, spec, 3, {})[0] == "ROUTED://b0.kafka.example:443\n"


@given(st.integers(1, 6), st.lists(st.integers(30000, 32767), min_size=7, max_size=7,
                                   unique=True))
def test_every_broker_advertises_its_own_node_port(replicas, ports):
    spec = spec_with(nodeport(), replicas=replicas)
    services = {s["metadata"]["name"]: allocated(s, port) for s, port in
                zip(listener_objects(NAMES, OWNER, spec, replicas), ports, strict=False)}
    advertised = advertised_addresses(NAMES, spec, replicas, services)
    assert sorted(advertised) == list(range(replicas))
    seen = {text.rsplit(":", 1)[1].strip() for text in advertised.values()}
    assert len(seen) == replicas  # distinct: a client reaches each broker on its own port


# ------------------------------------------------------------------ status and condition

def test_nodeport_status_lists_the_nodes_and_is_ready_once_every_pod_is_placed():
    spec = spec_with(nodeport())
    services = {s["metadata"]["name"]: allocated(s, 31000 + i) for i, s in
                enumerate(listener_objects(NAMES, OWNER, spec, 3))}
    report, condition = listener_status(NAMES, spec, 3, services, {0: "10.0.0.2", 1: "10.0.0.1"})
    assert condition is not None and condition.status is False
    assert condition.reason == "NodeAddressPending" and "broker(s) 2" in condition.message
    external = report[1]
    assert external["type"] == "nodeport"
    assert external["bootstrapServers"] == "10.0.0.1:31000,10.0.0.2:31000"
    _, condition = listener_status(NAMES, spec, 3, services,
                                   {0: "10.0.0.2", 1: "10.0.0.1", 2: "10.0.0.1"})
    assert condition is not None and condition.status is True


def test_a_load_balancer_without_an_address_is_listeners_ready_false_load_balancer_pending():
    spec = spec_with(loadbalancer())
    services = {s["metadata"]["name"]: allocated(s) for s in
                listener_objects(NAMES, OWNER, spec, 2)}
    report, condition = listener_status(NAMES, spec, 2, services, {})
    assert condition is not None and condition.status is False
    assert condition.reason == "LoadBalancerPending"
    assert "odr-public-bootstrap, odr-public-0, odr-public-1" in condition.message
    assert report[1]["bootstrapServers"] == "" and report[1]["addresses"] == []
    services = {name: allocated(s, balancer="lb.example") for name, s in services.items()}
    report, condition = listener_status(NAMES, spec, 2, services, {})
    assert condition is not None and condition.status is True
    assert report[1]["bootstrapServers"] == "lb.example:9095"


def test_ingress_status_is_the_bootstrap_host_on_443():
    report, condition = listener_status(NAMES, spec_with(ingress()), 3, {}, {})
    assert report[1]["bootstrapServers"] == "kafka.example:443"
    assert condition is not None and condition.status is True
