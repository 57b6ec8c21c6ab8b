"""Named listeners, TLS and SCRAM users in the pure layer: spec parsing, the brokers'
manifests and config, the operator's client settings, the users plan, Secret checks."""

from __future__ import annotations

import base64
import ssl

import pytest
from odradek_operator.decisions.config_change import restart_relevant_config
from odradek_operator.decisions.users import DesiredUser, plan_users
from odradek_operator.errors import InvalidSpec, TemporaryReconcileError
from odradek_operator.handlers.secrets import secret_values
from odradek_operator.kafka.access import cluster_access
from odradek_operator.manifests import brokers
from odradek_operator.manifests.common import RESTART_HASH_ANNOTATION, config_hash

from .test_manifests import NAMES, children, cluster_spec

SECURE = {
    "listeners": {"named": [
        {"name": "INTERNAL", "port": 9091, "securityProtocol": "SSL"},
        {"name": "CLIENTS", "port": 9092, "securityProtocol": "SASL_SSL"}]},
    "tls": {"secretName": "odr-tls", "clientAuth": "requested"},
    "authentication": {"mechanisms": ["SCRAM-SHA-256", "SCRAM-SHA-512"],
                       "users": [{"name": "alice", "secretRef": {"name": "alice-pw"}}]},
}


def container(objs):
    return objs[("StatefulSet", "odr")]["spec"]["template"]["spec"]["containers"][0]


def test_the_single_port_form_keeps_the_original_pods_and_services():
    """A cluster created before named listeners: same env, ports, probes, volumes, config."""
    spec = cluster_spec(listeners={"port": 9093})
    assert spec.legacy_listeners and spec.port == 9093
    objs = children(spec)
    broker = container(objs)
    assert [e["name"] for e in broker["env"]] == [
        "POD_NAMESPACE", "ODRADEK_HEADLESS_SERVICE", "ODRADEK_PORT", "ODRADEK_DATA_DIR",
        "ODRADEK_CONFIG"]
    assert broker["ports"][0] == {"name": "kafka", "containerPort": 9093, "protocol": "TCP"}
    assert broker["livenessProbe"]["tcpSocket"]["port"] == "kafka"
    assert [m["name"] for m in broker["volumeMounts"]] == ["data", "config"]
    properties = objs[("ConfigMap", "odr-config")]["data"]["server.properties"]
    assert "listener.security.protocol.map" not in properties
    assert [p["name"] for p in objs[("Service", "odr-bootstrap")]["spec"]["ports"]] == ["kafka"]
    # No Secret inputs: the restart hash is the config's alone, as before.
    config = brokers.broker_config(spec, "zk:2181/odr")
    template = objs[("StatefulSet", "odr")]["spec"]["template"]
    assert template["metadata"]["annotations"][RESTART_HASH_ANNOTATION] == \
        config_hash(restart_relevant_config(config, True))
    assert cluster_access(NAMES, spec).settings == {}


def test_named_listeners_reach_server_properties_env_services_and_ports():
    spec = cluster_spec(**SECURE)
    assert spec.inter_broker_listener == "INTERNAL" and spec.port == 9091
    objs = children(spec)
    properties = objs[("ConfigMap", "odr-config")]["data"]["server.properties"].splitlines()
    assert {"listener.security.protocol.map=INTERNAL:SSL,CLIENTS:SASL_SSL",
            "inter.broker.listener.name=INTERNAL", "ssl.client.auth=requested",
            "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512"} <= set(properties)
    assert not any(line.startswith("sasl.mechanism.inter.broker") for line in properties)
    broker = container(objs)
    env = {e["name"]: e.get("value") for e in broker["env"]}
    assert env["ODRADEK_LISTENERS"] == "INTERNAL:9091 CLIENTS:9092"
    assert env["ODRADEK_PORT"] == "9091"  # the probe's listener
    assert env["ODRADEK_TLS_DIR"] == brokers.TLS_DIR
    assert "ODRADEK_SASL_USERNAME" not in env  # SSL inter-broker: no broker password
    assert [(p["name"], p["containerPort"]) for p in broker["ports"]] == [
        ("internal", 9091), ("clients", 9092), ("metrics", 9404)]
    assert broker["readinessProbe"]["exec"]["command"][:2] == ["odradek", "broker-ready"]
    assert broker["livenessProbe"]["tcpSocket"]["port"] == 9091
    mounts = {m["name"]: m for m in broker["volumeMounts"]}
    assert mounts["tls"]["readOnly"] is True and mounts["tls"]["mountPath"] == brokers.TLS_DIR
    volumes = {v["name"]: v for v in objs[("StatefulSet", "odr")]["spec"]["template"]["spec"]
               ["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "odr-tls"
    assert volumes["run"]["emptyDir"]["medium"] == "Memory"
    for service in ("odr-bootstrap", "odr-headless"):
        ports = {p["name"]: p["port"] for p in objs[("Service", service)]["spec"]["ports"]}
        assert ports["internal"] == 9091 and ports["clients"] == 9092


def test_a_sasl_inter_broker_listener_gets_the_brokers_credentials_from_the_secret():
    spec = cluster_spec(listeners={"named": [
        {"name": "REPLICATION", "port": 9091, "securityProtocol": "SASL_SSL"}]},
        tls={"secretName": "odr-tls"},
        authentication={"operatorSecretRef": {"name": "odr-admin"}})
    objs = children(spec)
    env = {e["name"]: e for e in container(objs)["env"]}
    assert env["ODRADEK_SASL_USERNAME"]["valueFrom"]["secretKeyRef"] == {
        "name": "odr-admin", "key": "username"}
    assert env["ODRADEK_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "odr-admin", "key": "password"}
    assert env["ODRADEK_SASL_MECHANISM"]["value"] == "SCRAM-SHA-512"
    properties = objs[("ConfigMap", "odr-config")]["data"]["server.properties"]
    assert "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512" in properties
    access = cluster_access(NAMES, spec, credentials=("admin", "s3cret"))
    assert access.bootstrap_servers == NAMES.bootstrap_servers(9091)
    assert access.settings["security_protocol"] == "SASL_SSL"
    assert access.settings["sasl_plain_username"] == "admin"
    assert isinstance(access.settings["ssl_context"], ssl.SSLContext)
    assert access.settings["ssl_context"].check_hostname


def test_the_operator_loads_the_brokers_certificate_only_when_clients_must_present_one():
    """(The handshake itself: test_secure_session.py, against a broker requiring it.)"""
    garbage = ("not a certificate", "not a key")
    for client_auth, loads in (("none", False), ("requested", True), ("required", True)):
        spec = cluster_spec(listeners={"named": [{"name": "INTERNAL", "port": 9091,
                                                  "securityProtocol": "SSL"}]},
                            tls={"secretName": "odr-tls", "clientAuth": client_auth})
        if loads:
            with pytest.raises(ssl.SSLError):
                cluster_access(NAMES, spec, client_certificate=garbage)
        else:
            assert cluster_access(NAMES, spec, client_certificate=garbage).settings


def test_a_rotated_certificate_changes_the_restart_hash():
    spec = cluster_spec(**SECURE)

    def hash_for(inputs):
        from odradek_operator.handlers.broker_cluster import desired_children
        from odradek_operator.manifests.common import Owner
        objs = desired_children(NAMES, Owner("odr", "kafka", "u"), spec, replicas=3,
                                dynamic_supported=True, pod_monitor=False,
                                secret_inputs=inputs)
        sts = next(o for o in objs if o["kind"] == "StatefulSet")
        return sts["spec"]["template"]["metadata"]["annotations"][RESTART_HASH_ANNOTATION]

    first = hash_for({"tls": config_hash({"tls.crt": "A", "tls.key": "K"})})
    assert first == hash_for({"tls": config_hash({"tls.crt": "A", "tls.key": "K"})})
    assert first != hash_for({"tls": config_hash({"tls.crt": "B", "tls.key": "K"})})


@pytest.mark.parametrize(("raw", "message"), [
    ({"listeners": {"named": [{"name": "A", "port": 9092, "securityProtocol": "SSL"}]}},
     "spec.tls.secretName"),
    ({"listeners": {"named": [{"name": "A", "port": 9092},
                              {"name": "B", "port": 9092}]}}, "ports must be unique"),
    ({"listeners": {"named": [{"name": "lower", "port": 9092}]}}, "upper case"),
    ({"listeners": {"named": [{"name": "A", "port": 9092}], "interBrokerListener": "B"}},
     "not one of"),
    ({"listeners": {"named": [{"name": "A", "port": 9404}]}}, "metrics.port"),
    ({"listeners": {"named": [{"name": "A", "port": 9092, "securityProtocol": "SASL_SSL"}]},
      "tls": {"secretName": "t"}}, "operatorSecretRef"),
    ({"authentication": {"users": [{"name": "u", "secretRef": {"name": "s"}}]}},
     "no listener uses SASL"),
    ({"listeners": {"named": [{"name": "A", "port": 9092,
                               "securityProtocol": "SASL_PLAINTEXT"}]},
      "authentication": {"mechanisms": ["SCRAM-SHA-256"], "operatorSecretRef": {"name": "o"},
                         "users": [{"name": "u", "secretRef": {"name": "s"}}]}},
     "not enabled"),
    ({"config": {"sasl.jaas.config": "x"}}, "sasl.jaas.config"),
    ({"tls": {"secretName": "t", "clientAuth": "sometimes"}}, "clientAuth"),
    ({"tls": {"secretName": "t"}}, "no listener uses SSL"),
])
def test_invalid_security_specs_are_refused_with_a_clear_message(raw, message):
    with pytest.raises(InvalidSpec, match=message):
        cluster_spec(**raw)


def _secret(data, version="7"):
    return {"metadata": {"resourceVersion": version},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def test_secret_values_name_the_missing_key_and_what_needs_it():
    values = secret_values(_secret({"tls.crt": "C", "tls.key": "K"}), "odr-tls", "kafka",
                           ["tls.crt", "tls.key"], "spec.tls.secretName")
    assert values.data == {"tls.crt": "C", "tls.key": "K"} and values.resource_version == "7"
    with pytest.raises(TemporaryReconcileError) as caught:
        secret_values(_secret({"tls.crt": "C"}), "odr-tls", "kafka",
                      ["tls.crt", "tls.key", "ca.crt"], "spec.tls.secretName")
    assert caught.value.reason == "SecretInvalid"
    assert "kafka/odr-tls has no tls.key, ca.crt" in str(caught.value)
    assert "spec.tls.secretName" in str(caught.value)


def test_users_plan_upserts_new_and_changed_and_deletes_dropped_users():
    applied = {"alice": {"mechanism": "SCRAM-SHA-512", "secretVersion": "1"},
               "bob": {"mechanism": "SCRAM-SHA-256", "secretVersion": "4"},
               "carol": {"mechanism": "SCRAM-SHA-512", "secretVersion": "2"}}
    existing = [("alice", "SCRAM-SHA-512"), ("bob", "SCRAM-SHA-256"),
                ("carol", "SCRAM-SHA-512"), ("admin", "SCRAM-SHA-512")]
    desired = [DesiredUser("alice", "SCRAM-SHA-512", "1"),       # unchanged
               DesiredUser("bob", "SCRAM-SHA-512", "4"),         # mechanism changed
               DesiredUser("dave", "SCRAM-SHA-512", "9")]        # new
    plan = plan_users(desired, applied, existing)
    assert plan.upsert == ("bob", "dave")
    assert set(plan.delete) == {("bob", "SCRAM-SHA-256"), ("carol", "SCRAM-SHA-512")}
    assert set(plan.applied) == {"alice", "bob", "dave"}  # admin was never ours: untouched


def test_users_plan_rewrites_a_credential_deleted_behind_its_back_and_keeps_unreadable():
    applied = {"alice": {"mechanism": "SCRAM-SHA-512", "secretVersion": "1"},
               "erin": {"mechanism": "SCRAM-SHA-512", "secretVersion": "3"}}
    plan = plan_users([DesiredUser("alice", "SCRAM-SHA-512", "1")], applied,
                      [("erin", "SCRAM-SHA-512")], kept=["erin"])
    assert plan.upsert == ("alice",) and plan.delete == ()
    assert plan.applied["erin"] == applied["erin"]
    assert plan_users([DesiredUser("alice", "SCRAM-SHA-512", "1")], applied,
                      [("alice", "SCRAM-SHA-512")], kept=["erin"]).empty
