"""What the security settings mean, and the checks a broker's listeners must pass.

Kafka's four protocols are two independent switches — TLS on the socket, SASL before
requests — so every other module asks :func:`uses_tls` / :func:`uses_sasl` instead of
comparing protocol names. ``listener.security.protocol.map`` is read here only
(:func:`parse_protocol_map`, for :class:`~odradek.config_sections.SecurityConfig`), and
so are the two values whose syntax is Kafka's own: a JAAS line (:func:`parse_jaas`, also
for odradek's client) and ``super.users`` (:func:`parse_super_users`).

:func:`validate_listeners` runs on the typed sections whenever a
:class:`~odradek.config.BrokerConfig` is built, so a setup that cannot work is refused with
a :class:`ConfigError` naming what to fix — at startup and for a dynamic change alike.
The TLS and SASL machinery itself is in :mod:`odradek.security`, above this.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from odradek.config_types import ConfigError

if TYPE_CHECKING:  # the sections are built from this module's parsers
    from odradek.config_sections import NetworkConfig, SecurityConfig

__all__ = [
    "AUTHORIZER_CLASS_NAMES",
    "CLIENT_AUTH",
    "PROTOCOLS",
    "SASL_MECHANISMS",
    "authorizer_enabled",
    "parse_jaas",
    "parse_protocol_map",
    "parse_super_users",
    "uses_sasl",
    "uses_tls",
    "validate_authorizer",
    "validate_listeners",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CLIENT_AUTH = ("none", "requested", "required")

# Kafka's ZooKeeper-mode class names are accepted as they are, so a Kafka server.properties
# works unchanged; ``acl`` is odradek's short alias for the same.
AUTHORIZER_CLASS_NAMES = frozenset({
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
    "acl",
})


def uses_tls(protocol: str) -> bool:
    return protocol in ("SSL", "SASL_SSL")


def uses_sasl(protocol: str) -> bool:
    return protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def parse_protocol_map(entries: Iterable[str]) -> dict[str, str]:
    """``listener.security.protocol.map`` entries (``NAME:PROTOCOL``) as {LISTENER: PROTOCOL},
    both upper case."""
    mapping: dict[str, str] = {}
    for entry in entries:
        name, sep, protocol = entry.partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in PROTOCOLS:
            raise ConfigError(f"listener.security.protocol.map: {entry!r} is not "
                              f"NAME:PROTOCOL with PROTOCOL one of {', '.join(PROTOCOLS)}")
        mapping[name.strip().upper()] = protocol
    return mapping


# -- JAAS: the one line Kafka users write for SCRAM and PLAIN, read without a JVM ----------
# ``org.apache.kafka.common.security.scram.ScramLoginModule required username="alice"
# password="secret";`` — the login module, a control flag, then ``key=value`` options
# (values quoted or bare). Only the options matter to us: ``username`` and ``password``.
_JAAS_LINE = re.compile(
    r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s+(.*?)\s*;?\s*$", re.DOTALL)
_JAAS_OPTION = re.compile(r'\s*([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')


def parse_jaas(text: str) -> tuple[str, str]:
    """(username, password) from a ScramLoginModule/PlainLoginModule JAAS line."""
    match = _JAAS_LINE.fullmatch(text)
    if match is None:
        raise ValueError("expected '<LoginModule> required username=\"..\" password=\"..\";'")
    options: dict[str, str] = {}
    rest = match.group(3)
    position = 0
    while position < len(rest):
        option = _JAAS_OPTION.match(rest, position)
        if option is None:
            if rest[position:].strip(" ;\n\t"):
                raise ValueError(f"cannot read options at {rest[position:position + 20]!r}")
            break
        quoted, bare = option.group(2), option.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        options[option.group(1)] = value
        position = option.end()
    try:
        return options["username"], options["password"]
    except KeyError:
        raise ValueError("the JAAS options need username and password") from None


# -- authorizer.class.name and super.users ------------------------------------------------
def authorizer_enabled(class_name: str) -> bool:
    return bool(class_name.strip())


def parse_super_users(value: str) -> frozenset[str]:
    """``User:admin;User:broker`` -> the principals (ValueError for one without a type)."""
    users = set()
    for item in value.split(";"):
        item = item.strip()
        if not item:
            continue
        kind, sep, name = item.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"super.users: {item!r} is not <type>:<name> (User:admin)")
        users.add(item)
    return frozenset(users)


def validate_authorizer(class_name: str, super_users: str) -> None:
    """ConfigError for an authorizer odradek does not have or a malformed ``super.users``."""
    class_name = class_name.strip()
    if class_name and class_name not in AUTHORIZER_CLASS_NAMES:
        raise ConfigError(f"authorizer.class.name {class_name!r} is not supported (supported: "
                          f"{', '.join(sorted(AUTHORIZER_CLASS_NAMES))})")
    try:
        parse_super_users(super_users)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


# -- the listeners' checks --------------------------------------------------------------------
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
