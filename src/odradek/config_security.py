"""What the security settings mean (the checks a broker's listeners must pass, which run on
the typed sections, are :mod:`odradek.config_checks`).

Kafka's four protocols are two independent switches — TLS on the socket, SASL before
requests — so every other module asks :func:`uses_tls` / :func:`uses_sasl` instead of
comparing protocol names. ``listener.security.protocol.map`` is read here only
(:func:`parse_protocol_map`, for :class:`~odradek.config_sections.SecurityConfig`), and
so are the two values whose syntax is Kafka's own: a JAAS line (:func:`parse_jaas`, also
for odradek's client) and ``super.users`` (:func:`parse_super_users`).

The TLS and SASL machinery itself is in :mod:`odradek.security`, above this.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from odradek.config_types import ConfigError

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
