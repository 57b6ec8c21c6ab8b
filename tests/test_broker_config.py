"""The broker configuration as an operator meets it: what a bad ``server.properties`` is
told (the exact words, which tools and people grep for), and how the broker's ``log.*``
defaults relate to storage's topic-level configs."""

from __future__ import annotations

import pytest

from odradek.config import BrokerConfig, ConfigError
from odradek.storage.log_config import LogConfig

_SSL = "SSL://:9093"
_SASL = "SASL_PLAINTEXT://:9093"
_NEEDS_KEYSTORE = ("needs ssl.keystore.location (a PEM file with the key and certificate "
                   "chain) or ssl.keystore.certificate.chain and ssl.keystore.key")
_PROTOCOLS = "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
_MECHANISMS = "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"

INVALID = [
    ({"listeners": ""}, "listeners must name at least one address"),
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,BAD"},
     f"listener.security.protocol.map: 'BAD' is not NAME:PROTOCOL with PROTOCOL one of "
     f"{_PROTOCOLS}"),
    ({"listener.security.protocol.map": "PLAINTEXT:FOO"},
     f"listener.security.protocol.map: 'PLAINTEXT:FOO' is not NAME:PROTOCOL with PROTOCOL "
     f"one of {_PROTOCOLS}"),
    ({"listeners": "EXTERNAL://:9093"},
     "listener EXTERNAL has no entry in listener.security.protocol.map"),
    ({"advertised.listeners": "OTHER://h:1"}, "advertised listener OTHER is not in listeners"),
    ({"inter.broker.listener.name": "NOPE"},
     "inter.broker.listener.name NOPE is not in listeners"),
    ({"inter.broker.listener.name": "PLAINTEXT",
      "security.inter.broker.protocol": "PLAINTEXT"},
     "Only one of inter.broker.listener.name and security.inter.broker.protocol should be "
     "set."),
    ({"security.inter.broker.protocol": "SSL"},
     "security.inter.broker.protocol SSL names no listener (the inter-broker listener is the "
     "one named after it)"),
    ({"ssl.keystore.type": "JKS"}, "only PEM key and trust stores are supported (ssl.*.type=PEM)"),
    ({"ssl.client.auth": "maybe"}, "ssl.client.auth must be one of none, requested, required"),
    ({"listeners": _SSL}, f"an SSL listener {_NEEDS_KEYSTORE}"),
    ({"listeners": f"{_SSL},PLAINTEXT://:9092", "listener.name.ssl.ssl.client.auth": "required"},
     f"an SSL listener (listener SSL) {_NEEDS_KEYSTORE}"),
    ({"ssl.client.auth": "required"},
     "ssl.client.auth needs ssl.truststore.location to verify clients"),
    ({"sasl.enabled.mechanisms": "GSSAPI"},
     f"sasl.enabled.mechanisms: GSSAPI is not supported (supported: {_MECHANISMS})"),
    ({"listeners": f"{_SASL},PLAINTEXT://:9092",
      "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "GSSAPI"},
     f"sasl.enabled.mechanisms (listener SASL_PLAINTEXT): GSSAPI is not supported "
     f"(supported: {_MECHANISMS})"),
    ({"authorizer.class.name": "foo.Bar"},
     "authorizer.class.name 'foo.Bar' is not supported (supported: acl, "
     "kafka.security.auth.SimpleAclAuthorizer, kafka.security.authorizer.AclAuthorizer)"),
    ({"super.users": "admin"}, "super.users: 'admin' is not <type>:<name> (User:admin)"),
    ({"listeners": _SASL, "sasl.mechanism.inter.broker.protocol": "PLAIN"},
     "sasl.mechanism.inter.broker.protocol must be one of sasl.enabled.mechanisms"),
    ({"listeners": _SASL},
     "a SASL inter-broker listener needs the broker's credentials in sasl.jaas.config (or "
     "listener.name.<listener>.<mechanism>.sasl.jaas.config)"),
    ({"listeners": _SASL, "sasl.jaas.config": "garbage"},
     "sasl.jaas.config: expected '<LoginModule> required username=\"..\" password=\"..\";'"),
    ({"log.message.timestamp.type": "Never"},
     "log.message.timestamp.type must be CreateTime or LogAppendTime"),
    ({"log.cleanup.policy": "delete,shred"}, "log.cleanup.policy: unknown policy 'shred'"),
    ({"num.partitions": "0"}, "num.partitions must be at least 1, got 0"),
    ({"broker.id": "x"},
     "invalid value 'x' for broker.id: invalid literal for int() with base 10: 'x'"),
    ({"no.such.key": "1"}, "unknown broker config key(s): no.such.key"),
    ({"listener.name.ssl.no.such": "1"},
     "unknown broker config key(s): listener.name.ssl.no.such"),
]


@pytest.mark.parametrize(("properties", "message"), INVALID,
                         ids=[next(iter(p.items()))[0] + "=" + next(iter(p.items()))[1]
                              for p, _ in INVALID])
def test_an_invalid_configuration_is_refused_in_these_words(
        properties: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        BrokerConfig.from_properties(properties)
    assert str(refused.value) == message


def test_an_ssl_listener_with_its_key_as_pem_text_is_accepted() -> None:
    config = BrokerConfig.from_properties({
        "listeners": _SSL, "ssl.keystore.certificate.chain": "chain",
        "ssl.keystore.key": "key", "ssl.client.auth": "required",
        "ssl.truststore.certificates": "cas"})
    assert config["ssl.client.auth"] == "required"


def test_the_broker_log_defaults_are_storage_topic_defaults() -> None:
    """A broker with default settings gives every topic storage's own topic defaults: the
    two tables say the same thing (Kafka's defaults) in their own names."""
    defaults = BrokerConfig.from_properties({}).topic_defaults()
    assert LogConfig.for_topic(defaults) == LogConfig()


def test_a_topic_override_lies_over_the_broker_default() -> None:
    config = BrokerConfig.from_properties({"log.segment.bytes": "2048", "log.roll.hours": "1"})
    topic = LogConfig.for_topic(config.topic_defaults(), {"segment.bytes": "4096"})
    assert (topic.segment_bytes, topic.segment_ms) == (4096, 3_600_000)
    assert LogConfig.for_topic(config.topic_defaults()).segment_bytes == 2048
