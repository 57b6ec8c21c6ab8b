"""The security part of a BrokerCluster's spec: named listeners, TLS, SASL/SCRAM users.

Two listener forms are valid. The original one, ``listeners: {port: 9092}``, is one PLAINTEXT
listener (clusters created before named listeners keep exactly their pods and Services). The
Kafka-style one names each listener with its security protocol::

    listeners:
      named:
        - {name: INTERNAL, port: 9091, securityProtocol: SSL}
        - {name: CLIENTS, port: 9092, securityProtocol: SASL_SSL}
      interBrokerListener: INTERNAL   # default: the first one

The inter-broker listener is also the one the operator and the readiness probe use: it is
the cluster's own, so its credentials (``authentication.operatorSecretRef``) are the brokers'.
Pure: dict in, frozen dataclasses out, :class:`~.errors.InvalidSpec` for what a schema
cannot say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidSpec
from .listener_spec import INTERNAL, ExternalAccess, parse_external

__all__ = [
    "CLIENT_AUTH",
    "LEGACY_LISTENER",
    "PROTOCOLS",
    "SASL_MECHANISMS",
    "Authentication",
    "Listener",
    "ScramUser",
    "SecretKeyRef",
    "TlsSpec",
    "parse_authentication",
    "parse_listeners",
    "parse_tls",
    "uses_sasl",
    "uses_tls",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
CLIENT_AUTH = ("none", "requested", "required")
LEGACY_LISTENER = "PLAINTEXT"
_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,14}$")


def uses_tls(protocol: str) -> bool:
    return protocol in ("SSL", "SASL_SSL")


def uses_sasl(protocol: str) -> bool:
    return protocol in ("SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class Listener:
    name: str
    port: int
    protocol: str = "PLAINTEXT"
    #: The Service/container port name: ``kafka`` for the single-port form (what clusters
    #: created before named listeners have), else the listener's name as a DNS label.
    port_name: str = "kafka"
    #: How clients outside the cluster reach it (:mod:`.listener_spec`); None: internal only.
    external: ExternalAccess | None = None

    @property
    def type(self) -> str:
        return self.external.type if self.external is not None else INTERNAL


@dataclass(frozen=True)
class TlsSpec:
    """The server certificate: a Secret with ``tls.crt`` and ``tls.key`` (kubernetes.io/tls),
    and ``ca.crt`` to trust (needed to verify client certificates)."""

    secret_name: str
    client_auth: str = "none"


@dataclass(frozen=True)
class SecretKeyRef:
    name: str
    key: str


@dataclass(frozen=True)
class ScramUser:
    name: str
    mechanism: str
    password: SecretKeyRef


@dataclass(frozen=True)
class Authentication:
    mechanisms: tuple[str, ...] = ("SCRAM-SHA-512",)
    #: Secret with the operator's (and the brokers' inter-broker) user: keys ``username``,
    #: ``password`` by default. Needed when the inter-broker listener uses SASL.
    operator_secret: SecretKeyRef | None = None  # key: the username key; password key below
    operator_password_key: str = "password"
    users: tuple[ScramUser, ...] = ()

    @property
    def operator_mechanism(self) -> str:
        """The mechanism the operator and brokers log in with: the strongest enabled one."""
        for name in ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"):
            if name in self.mechanisms:
                return name
        return self.mechanisms[0]


def _port(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1024 <= value <= 65535:
        raise InvalidSpec(f"{what} must be an integer port in 1024..65535, got {value!r}")
    return value


def parse_listeners(raw: Mapping[str, Any] | None, metrics_port: int | None
                    ) -> tuple[tuple[Listener, ...], str, bool]:
    """(listeners, inter-broker listener name, legacy form?)."""
    raw = raw or {}
    named = raw.get("named")
    if not named:
        if raw.get("interBrokerListener") not in (None, LEGACY_LISTENER):
            raise InvalidSpec("spec.listeners.interBrokerListener names a listener of "
                              "spec.listeners.named, which is not set")
        port = _port(raw.get("port", 9092), "spec.listeners.port")
        return (Listener(LEGACY_LISTENER, port),), LEGACY_LISTENER, True
    if not isinstance(named, list):
        raise InvalidSpec("spec.listeners.named must be a list of {name, port, "
                          "securityProtocol}")
    listeners: list[Listener] = []
    for index, item in enumerate(named):
        what = f"spec.listeners.named[{index}]"
        if not isinstance(item, Mapping):
            raise InvalidSpec(f"{what} must be an object with name, port, securityProtocol")
        name = str(item.get("name") or "")
        if not _NAME.match(name):
            raise InvalidSpec(f"{what}.name {name!r} must be upper case letters, digits and _ "
                              "(at most 15, starting with a letter), like INTERNAL")
        protocol = str(item.get("securityProtocol") or "PLAINTEXT")
        if protocol not in PROTOCOLS:
            raise InvalidSpec(f"{what}.securityProtocol must be one of {', '.join(PROTOCOLS)}")
        listeners.append(Listener(name, _port(item.get("port"), f"{what}.port"), protocol,
                                  name.lower().replace("_", "-"), parse_external(item, what)))
    for attr, what in (("name", "names"), ("port", "ports"), ("port_name", "names")):
        values = [getattr(listener, attr) for listener in listeners]
        if len(set(values)) != len(values):
            raise InvalidSpec(f"spec.listeners.named: listener {what} must be unique")
    if metrics_port is not None and metrics_port in {listener.port for listener in listeners}:
        raise InvalidSpec(f"spec.metrics.port {metrics_port} is also a listener's port")
    if any(listener.port_name == "metrics" for listener in listeners):
        raise InvalidSpec("spec.listeners.named: METRICS is reserved for the metrics port")
    inter = str(raw.get("interBrokerListener") or listeners[0].name)
    if inter not in {listener.name for listener in listeners}:
        raise InvalidSpec(f"spec.listeners.interBrokerListener {inter!r} is not one of "
                          f"spec.listeners.named")
    return tuple(listeners), inter, False


def parse_tls(raw: Any) -> TlsSpec | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not raw.get("secretName"):
        raise InvalidSpec("spec.tls.secretName is required: a Secret with tls.crt and tls.key")
    client_auth = str(raw.get("clientAuth") or "none")
    if client_auth not in CLIENT_AUTH:
        raise InvalidSpec(f"spec.tls.clientAuth must be one of {', '.join(CLIENT_AUTH)}")
    return TlsSpec(str(raw["secretName"]), client_auth)


def _secret_ref(raw: Any, what: str, default_key: str) -> SecretKeyRef:
    if not isinstance(raw, Mapping) or not raw.get("name"):
        raise InvalidSpec(f"{what}.name is required (a Secret in the cluster's namespace)")
    return SecretKeyRef(str(raw["name"]), str(raw.get("key") or default_key))


def parse_authentication(raw: Any) -> Authentication:
    raw = raw or {}
    mechanisms = tuple(str(m) for m in raw.get("mechanisms") or ("SCRAM-SHA-512",))
    for mechanism in mechanisms:
        if mechanism not in SASL_MECHANISMS:
            raise InvalidSpec(f"spec.authentication.mechanisms: {mechanism} is not one of "
                              f"{', '.join(SASL_MECHANISMS)}")
    operator_raw = raw.get("operatorSecretRef")
    operator = None
    password_key = "password"
    if operator_raw is not None:
        if not isinstance(operator_raw, Mapping) or not operator_raw.get("name"):
            raise InvalidSpec("spec.authentication.operatorSecretRef.name is required")
        operator = SecretKeyRef(str(operator_raw["name"]),
                                str(operator_raw.get("usernameKey") or "username"))
        password_key = str(operator_raw.get("passwordKey") or "password")
    users: list[ScramUser] = []
    for index, item in enumerate(raw.get("users") or ()):
        what = f"spec.authentication.users[{index}]"
        if not isinstance(item, Mapping) or not item.get("name"):
            raise InvalidSpec(f"{what}.name is required")
        mechanism = str(item.get("mechanism") or "SCRAM-SHA-512")
        if mechanism not in SCRAM_MECHANISMS:
            raise InvalidSpec(f"{what}.mechanism must be one of {', '.join(SCRAM_MECHANISMS)}")
        if mechanism not in mechanisms:
            raise InvalidSpec(f"{what}.mechanism {mechanism} is not enabled in "
                              "spec.authentication.mechanisms: the user could not log in")
        users.append(ScramUser(str(item["name"]), mechanism,
                               _secret_ref(item.get("secretRef"), f"{what}.secretRef",
                                           "password")))
    names = [user.name for user in users]
    if len(set(names)) != len(names):
        raise InvalidSpec("spec.authentication.users: user names must be unique")
    return Authentication(mechanisms, operator, password_key, tuple(users))
