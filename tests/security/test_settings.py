"""Security settings: JAAS lines, listener validation, TLS principals."""

from __future__ import annotations

import pytest

from odradek.config import BrokerConfig, ConfigError
from odradek.config_sections import BrokerSections
from odradek.config_security import parse_jaas
from odradek.security.tls import principal_of_certificate

BASE = {"listeners": "PLAINTEXT://127.0.0.1:0"}


def config(**properties: str) -> BrokerConfig:
    return BrokerConfig.from_properties({**BASE, **{k.replace("_", "."): v
                                                     for k, v in properties.items()}})


def test_jaas_lines() -> None:
    assert parse_jaas('org.apache.kafka.common.security.scram.ScramLoginModule required '
                      'username="admin" password="a\\"b c";') == ("admin", 'a"b c')
    assert parse_jaas("org.apache.kafka.common.security.plain.PlainLoginModule required "
                      "username=bob password=pw") == ("bob", "pw")
    for bad in ["", "username=a password=b", "M required username=a;", "M required x"]:
        with pytest.raises(ValueError):
            parse_jaas(bad)


def test_default_protocol_map_knows_the_four_protocols() -> None:
    sections = BrokerSections.from_config(config())
    assert sections.security.protocol_of("PLAINTEXT") == "PLAINTEXT"
    assert sections.security.protocol_of("SASL_SSL") == "SASL_SSL"
    custom = config(listeners="INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
                    listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
                    inter_broker_listener_name="INTERNAL")
    assert BrokerSections.from_config(custom).security.protocol_of("EXTERNAL") == \
        "SASL_PLAINTEXT"


@pytest.mark.parametrize(("properties", "message"), [
    ({"listeners": "CLIENT://127.0.0.1:0"}, "no entry in listener.security.protocol.map"),
    ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "NAME:PROTOCOL"),
    ({"listeners": "SSL://127.0.0.1:0"}, "ssl.keystore.location"),
    ({"inter.broker.listener.name": "OTHER"}, "not in listeners"),
    ({"advertised.listeners": "SSL://h:1"}, "not in listeners"),
    ({"ssl.client.auth": "maybe"}, "ssl.client.auth"),
    ({"ssl.client.auth": "required"}, "truststore"),
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "not supported"),
    ({"ssl.keystore.type": "JKS"}, "PEM"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}, "sasl.jaas.config"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.jaas.config": "nonsense"},
     "sasl.jaas.config"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
      "sasl.jaas.config": 'M required username="a" password="b";'},
     "sasl.mechanism.inter.broker.protocol"),
])
def test_insecure_or_broken_setups_are_rejected(properties: dict[str, str],
                                                message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_properties({**BASE, **properties})


def test_a_sasl_inter_broker_listener_with_credentials_is_accepted() -> None:
    config(listeners="SASL_PLAINTEXT://127.0.0.1:0",
           sasl_jaas_config='M required username="broker" password="pw";')


def test_certificate_principal_is_the_rfc2253_subject() -> None:
    certificate = {"subject": ((("countryName", "DE"),), (("organizationName", "Acme, Inc"),),
                               (("commonName", "client"),))}
    assert principal_of_certificate(certificate) == "User:CN=client,O=Acme\\, Inc,C=DE"
    assert principal_of_certificate({}) is None
    assert principal_of_certificate(None) is None


def test_command_config_properties() -> None:
    from odradek.client.security import settings_from_properties

    settings = settings_from_properties({
        "security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
                            'required username="alice" password="pw";',
        "ssl.truststore.location": "/ca.pem"})
    assert settings["security_protocol"] == "SASL_SSL"
    assert (settings["sasl_plain_username"], settings["sasl_plain_password"]) == ("alice", "pw")
    assert settings["ssl_cafile"] == "/ca.pem"
    plain = settings_from_properties({"security.protocol": "SASL_PLAINTEXT",
                                      "sasl.username": "bob", "sasl.password": "x"})
    assert plain["sasl_plain_username"] == "bob"
    with pytest.raises(ValueError, match="unsupported client properties: acks"):
        settings_from_properties({"acks": "all"})
    with pytest.raises(ValueError, match="only PEM"):
        settings_from_properties({"ssl.truststore.type": "JKS"})


def test_client_security_needs_credentials_for_sasl() -> None:
    from odradek.client.security import ClientSecurity

    with pytest.raises(ValueError, match="user name and password"):
        ClientSecurity.create("SASL_PLAINTEXT")
    with pytest.raises(ValueError, match="security protocol"):
        ClientSecurity.create("TLS")
