"""What a listener's security protocol means, and the checks a broker config must pass.

Kafka's four protocols are two independent switches — TLS on the socket, SASL before
requests — so every other module asks :func:`uses_tls` / :func:`uses_sasl` instead of
comparing protocol names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

__all__ = [
    "PROTOCOLS",
    "SASL_MECHANISMS",
    "uses_sasl",
    "uses_tls",
    "validate_security",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CLIENT_AUTH = ("none", "requested", "required")


def uses_tls(protocol: str) -> bool:
    return protocol in ("SSL", "SASL_SSL")


def uses_sasl(protocol: str) -> bool:
    return protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def _validate_listener(config: BrokerConfig, name: str, protocol: str, where: str) -> None:
    """The TLS and SASL settings listener ``name`` sees (``config.for_listener``); ``where``
    names the listener in messages when it has ``listener.name.*`` configs of its own."""
    if config["ssl.keystore.type"].upper() != "PEM" or config["ssl.truststore.type"].upper() \
            != "PEM":
        raise ValueError(f"only PEM key and trust stores are supported (ssl.*.type=PEM){where}")
    if config["ssl.client.auth"] not in CLIENT_AUTH:
        raise ValueError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH)}{where}")
    if uses_tls(protocol):
        has_chain = config["ssl.keystore.certificate.chain"] and config["ssl.keystore.key"]
        if not (config["ssl.keystore.location"] or has_chain):
            raise ValueError(f"an SSL listener{where} needs ssl.keystore.location (a PEM file "
                              "with the key and certificate chain) or "
                              "ssl.keystore.certificate.chain and ssl.keystore.key")
    if config["ssl.client.auth"] != "none" and not (
            config["ssl.truststore.location"] or config["ssl.truststore.certificates"]):
        raise ValueError(f"ssl.client.auth needs ssl.truststore.location to verify "
                         f"clients{where}")
    for mechanism in config["sasl.enabled.mechanisms"]:
        if mechanism not in SASL_MECHANISMS:
            raise ValueError(f"sasl.enabled.mechanisms{where}: {mechanism} is not supported "
                              f"(supported: {', '.join(SASL_MECHANISMS)})")


def validate_security(config: BrokerConfig) -> None:
    """Raise ValueError for a listener setup that cannot work, naming what to fix (the
    config turns it into its ConfigError)."""
    mapping: dict[str, str] = {}
    for entry in config["listener.security.protocol.map"]:
        name, sep, protocol = entry.partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in PROTOCOLS:
            raise ValueError(f"listener.security.protocol.map: {entry!r} is not "
                              f"NAME:PROTOCOL with PROTOCOL one of {', '.join(PROTOCOLS)}")
        mapping[name.strip().upper()] = protocol
    names = [listener.name for listener in config["listeners"]]
    for name in names:
        if name not in mapping:
            raise ValueError(f"listener {name} has no entry in listener.security.protocol.map")
    for listener in config["advertised.listeners"] or ():
        if listener.name not in names:
            raise ValueError(f"advertised listener {listener.name} is not in listeners")
    inter = config["inter.broker.listener.name"]
    if inter is not None and inter.upper() not in names:
        raise ValueError(f"inter.broker.listener.name {inter} is not in listeners")
    by_protocol = config["security.inter.broker.protocol"]
    if by_protocol is not None:
        if inter is not None:  # Kafka's words
            raise ValueError("Only one of inter.broker.listener.name and "
                              "security.inter.broker.protocol should be set.")
        if by_protocol.upper() not in names:
            raise ValueError(f"security.inter.broker.protocol {by_protocol} names no listener "
                              "(the inter-broker listener is the one named after it)")
        inter = by_protocol
    for name in names:
        where = f" (listener {name})" if name in config.listener_configs else ""
        _validate_listener(config.for_listener(name), name, mapping[name], where)
    # no cycle: hoist when issue 23 reworks this module
    from .authorizer_config import validate_authorizer

    validate_authorizer(config["authorizer.class.name"], config["super.users"])
    inter_name = (inter or names[0]).upper()
    inter_protocol = mapping[inter_name]
    config = config.for_listener(inter_name)  # its own mechanisms, keystore, credentials
    if uses_sasl(inter_protocol):
        if config["sasl.mechanism.inter.broker.protocol"] not in config["sasl.enabled.mechanisms"]:
            raise ValueError("sasl.mechanism.inter.broker.protocol must be one of "
                              "sasl.enabled.mechanisms")
        if not config["sasl.jaas.config"]:
            raise ValueError("a SASL inter-broker listener needs the broker's credentials in "
                              "sasl.jaas.config (or listener.name.<listener>.<mechanism>."
                              "sasl.jaas.config)")
        from .jaas import parse_jaas  # no cycle: hoist when issue 23 reworks this module

        try:
            parse_jaas(config["sasl.jaas.config"])
        except ValueError as exc:
            raise ValueError(f"sasl.jaas.config: {exc}") from None
    if uses_tls(inter_protocol) and config["ssl.client.auth"] == "required" and not (
            config["ssl.keystore.location"] or config["ssl.keystore.certificate.chain"]):
        raise ValueError("ssl.client.auth=required on the inter-broker listener needs a "
                          "broker certificate")
