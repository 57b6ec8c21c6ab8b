"""Kafka's listener-prefixed security configs: ``listener.name.<listener>.<config>``.

Why: a Kafka ``server.properties`` with SASL or TLS on some listeners sets their security
per listener — ``listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN``,
``listener.name.sasl_plaintext.plain.sasl.jaas.config=...``,
``listener.name.ssl.ssl.keystore.location=...`` — and the same file should start odradek.
As in Kafka, the prefixed value applies to that listener only and beats the unprefixed one;
the listener name is matched case-insensitively. The JAAS config is per mechanism
(``listener.name.<l>.<mechanism>.sasl.jaas.config``); odradek reads from it only the
broker's own credentials, for the inter-broker listener's inter-broker mechanism (it
checks PLAIN logins against the SCRAM credentials, not against JAAS ``user_*`` options).

A prefixed key whose config odradek does not have is an error, like an unknown key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["LISTENER_CONFIGS", "jaas_key", "split_listener_configs"]

LISTENER_CONFIGS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.certificates", "ssl.client.auth",
    "ssl.endpoint.identification.algorithm", "sasl.enabled.mechanisms",
    "sasl.server.max.receive.size", "connections.max.reauth.ms",
})
"""The broker configs a listener may override (those of Kafka's that odradek has)."""

_PREFIXED = re.compile(r"listener\.name\.([^.]+)\.(.+)")
_JAAS = re.compile(r"([a-z0-9-]+)\.sasl\.jaas\.config")


def jaas_key(mechanism: str) -> str:
    """How a listener's JAAS config for ``mechanism`` is keyed (Kafka's spelling)."""
    return f"{mechanism.lower()}.sasl.jaas.config"


def split_listener_configs(
    properties: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, dict[str, str]], list[str]]:
    """``(unprefixed properties, {LISTENER: {config: raw}}, unknown prefixed keys)``."""
    plain: dict[str, str] = {}
    per_listener: dict[str, dict[str, str]] = {}
    unknown: list[str] = []
    for key, raw in properties.items():
        match = _PREFIXED.fullmatch(key)
        if match is None:
            plain[key] = raw
            continue
        listener, config = match.group(1).upper(), match.group(2)
        if config in LISTENER_CONFIGS or _JAAS.fullmatch(config):
            per_listener.setdefault(listener, {})[config] = raw
        else:
            unknown.append(key)
    return plain, per_listener, unknown
