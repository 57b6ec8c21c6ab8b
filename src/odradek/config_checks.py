"""The checks a broker's listeners and security settings must pass, run on the typed
sections whenever a :class:`~odradek.config.BrokerConfig` is built: a setup that cannot work
is refused with a :class:`~odradek.config_types.ConfigError` naming what to fix — at startup
and for a dynamic change alike. What the settings mean is :mod:`odradek.config_security`.
"""

from __future__ import annotations

from odradek.config_sections import NetworkConfig, SecurityConfig
from odradek.config_security import (
    CLIENT_AUTH,
    SASL_MECHANISMS,
    parse_jaas,
    uses_sasl,
    uses_tls,
    validate_authorizer,
)
from odradek.config_types import ConfigError

__all__ = ["validate_listeners"]


def _validate_listener(security: SecurityConfig, protocol: str, where: str) -> None:
    """The TLS and SASL settings one listener sees (its own where it has them); ``where``
    names the listener in messages when it has ``listener.name.*`` configs of its own."""
    if security.ssl_keystore_type.upper() != "PEM" or \
            security.ssl_truststore_type.upper() != "PEM":
        raise ConfigError(f"only PEM key and trust stores are supported (ssl.*.type=PEM){where}")
    if security.ssl_client_auth not in CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH)}{where}")
    if uses_tls(protocol):
        has_chain = security.ssl_keystore_certificate_chain and security.ssl_keystore_key
        if not (security.ssl_keystore_location or has_chain):
            raise ConfigError(f"an SSL listener{where} needs ssl.keystore.location (a PEM file "
                              "with the key and certificate chain) or "
                              "ssl.keystore.certificate.chain and ssl.keystore.key")
    if security.ssl_client_auth != "none" and not (
            security.ssl_truststore_location or security.ssl_truststore_certificates):
        raise ConfigError(f"ssl.client.auth needs ssl.truststore.location to verify "
                          f"clients{where}")
    for mechanism in security.sasl_enabled_mechanisms:
        if mechanism not in SASL_MECHANISMS:
            raise ConfigError(f"sasl.enabled.mechanisms{where}: {mechanism} is not supported "
                              f"(supported: {', '.join(SASL_MECHANISMS)})")


def validate_listeners(network: NetworkConfig, security: SecurityConfig) -> None:
    """Raise ConfigError for a listener setup that cannot work, naming what to fix (at
    least one listener is given: the configuration checked that first)."""
    names = [listener.name for listener in network.listeners]
    for name in names:
        if name not in security.protocol_map:
            raise ConfigError(f"listener {name} has no entry in listener.security.protocol.map")
    for listener in network.advertised_listeners:  # the given ones, or listeners' own
        if listener.name not in names:
            raise ConfigError(f"advertised listener {listener.name} is not in listeners")
    inter = network.inter_broker_listener_name
    if inter is not None and inter.upper() not in names:
        raise ConfigError(f"inter.broker.listener.name {inter} is not in listeners")
    by_protocol = network.security_inter_broker_protocol
    if by_protocol is not None:
        if inter is not None:  # Kafka's words
            raise ConfigError("Only one of inter.broker.listener.name and "
                              "security.inter.broker.protocol should be set.")
        if by_protocol.upper() not in names:
            raise ConfigError(f"security.inter.broker.protocol {by_protocol} names no listener "
                              "(the inter-broker listener is the one named after it)")
    for name in names:
        where = f" (listener {name})" if name in security.listeners else ""
        _validate_listener(security.of_listener(name), security.protocol_map[name], where)
    validate_authorizer(security.authorizer_class_name, security.super_users)
    inter_name = network.inter_broker_listener.upper()
    own = security.of_listener(inter_name)  # its own mechanisms, keystore, credentials
    if uses_sasl(security.protocol_map[inter_name]):
        if own.sasl_mechanism_inter_broker_protocol not in own.sasl_enabled_mechanisms:
            raise ConfigError("sasl.mechanism.inter.broker.protocol must be one of "
                              "sasl.enabled.mechanisms")
        if not own.sasl_jaas_config:
            raise ConfigError("a SASL inter-broker listener needs the broker's credentials in "
                              "sasl.jaas.config (or listener.name.<listener>.<mechanism>."
                              "sasl.jaas.config)")
        try:
            parse_jaas(own.sasl_jaas_config)
        except ValueError as exc:
            raise ConfigError(f"sasl.jaas.config: {exc}") from None
