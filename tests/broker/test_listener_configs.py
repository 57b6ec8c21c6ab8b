"""Kafka's listener-prefixed security configs (``listener.name.<listener>.<config>``): the
server.properties that starts Apache Kafka 3.9 with SASL and TLS per listener starts odradek,
and each listener gets its own settings."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kio.schema.describe_configs.v4 import request as describing
from kio.schema.errors import ErrorCode
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.static.primitive import i8

from odradek.config import BrokerConfig, ConfigError
from odradek.config_sections import BrokerSections
from odradek.local_cluster import ZooKeeperProcess
from tests.harness.certs import CertSet

from .inprocess import InProcessBroker
from .wire import WireClient

# What Apache Kafka 3.9.2 starts with (tests/interop observes the same keys on Kafka).
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret";')
KAFKA_STYLE = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
}


def _properties(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"broker.id": "0", "log.dirs": str(tmp_path / "logs"), **KAFKA_STYLE, **extra}


def test_listener_prefixed_security_configs_are_accepted_and_unknown_ones_named(
        tmp_path: Path) -> None:
    config = BrokerConfig.from_properties(_properties(tmp_path))
    assert config.for_listener("SASL_PLAINTEXT")["sasl.enabled.mechanisms"] == [
        "PLAIN", "SCRAM-SHA-256"]
    assert config.for_listener("PLAINTEXT")["sasl.enabled.mechanisms"] == [
        "SCRAM-SHA-256", "SCRAM-SHA-512"]  # the broker-wide default
    again = config.with_overrides(num_partitions="3")
    assert again.listener_configs == config.listener_configs
    with pytest.raises(ConfigError, match=r"listener\.name\.sasl_plaintext\.no\.such\.key"):
        BrokerConfig.from_properties(_properties(
            tmp_path, **{"listener.name.sasl_plaintext.no.such.key": "1"}))
    with pytest.raises(ConfigError, match=r"sasl\.enabled\.mechanisms.*GSSAPI"):
        BrokerConfig.from_properties(_properties(
            tmp_path, **{"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "GSSAPI"}))
    # Kafka's other way to name the inter-broker listener
    by_protocol = BrokerConfig.from_properties(_properties(
        tmp_path, **{"security.inter.broker.protocol": "SASL_PLAINTEXT",
                     "sasl.mechanism.inter.broker.protocol": "PLAIN"}))
    assert BrokerSections.from_config(by_protocol).network.inter_broker_listener == (
        "SASL_PLAINTEXT")
    with pytest.raises(ConfigError, match=r"Only one of inter\.broker\.listener\.name"):
        BrokerConfig.from_properties(_properties(
            tmp_path, **{"security.inter.broker.protocol": "SASL_PLAINTEXT",
                         "inter.broker.listener.name": "PLAINTEXT"}))
    with_ssl = {"listeners": KAFKA_STYLE["listeners"] + ",SSL://127.0.0.1:0",
                "listener.name.ssl.ssl.client.auth": "none"}
    with pytest.raises(ConfigError, match=r"listener SSL.*keystore"):  # SSL, no key store
        BrokerConfig.from_properties(_properties(tmp_path, **with_ssl))


def test_each_listener_serves_its_own_prefixed_settings(
        zookeeper: ZooKeeperProcess, certs: CertSet, tmp_path: Path) -> None:
    """SASL mechanisms only on the SASL listener; a key store only for the SSL listener;
    the inter-broker login from the listener's own JAAS config for its mechanism."""
    properties = _properties(
        tmp_path, **{
            "zookeeper.connect": f"{zookeeper.connect}/t-{uuid.uuid4().hex[:12]}",
            "offsets.topic.replication.factor": "1",
            "listeners": KAFKA_STYLE["listeners"] + ",SSL://127.0.0.1:0",
            "listener.name.ssl.ssl.keystore.location": str(certs.broker_keystore),
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
        })
    broker = InProcessBroker(BrokerConfig.from_properties(properties)).start()
    try:
        assert broker.broker is not None
        ports = broker.broker.bound_ports
        with WireClient(ports["SASL_PLAINTEXT"]) as client:
            refused = client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"))
        assert refused.error_code == ErrorCode.unsupported_sasl_mechanism
        assert list(refused.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports['SSL']}",
                             "security.protocol": "SSL", "ssl.ca.location": str(certs.ca)})
        assert admin.list_topics(timeout=20).brokers  # the SSL listener has its key store
        # DescribeConfigs lists them as Kafka 3.9.2 does: read-only, the prefixed key then
        # the broker-wide one it overrides; JAAS configs sensitive
        with WireClient(ports["PLAINTEXT"]) as client:
            (result,) = client.request(describing.DescribeConfigsRequest(
                include_synonyms=True, resources=(describing.DescribeConfigsResource(
                    resource_type=i8(4), resource_name="0", configuration_keys=None),))).results
        described = {e.name: e for e in result.configs}
        mechanisms = described["listener.name.sasl_plaintext.sasl.enabled.mechanisms"]
        assert (mechanisms.value, mechanisms.read_only, mechanisms.config_source) == (
            "PLAIN,SCRAM-SHA-256", True, 4)
        assert [(s.name, s.source) for s in mechanisms.synonyms] == [
            ("listener.name.sasl_plaintext.sasl.enabled.mechanisms", 4),
            ("sasl.enabled.mechanisms", 5)]
        jaas = described["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
        assert (jaas.value, jaas.is_sensitive, jaas.config_type) == (None, True, 9)
        assert [(s.name, s.value, s.source) for s in jaas.synonyms] == [
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", None, 4)]
    finally:
        broker.stop()
