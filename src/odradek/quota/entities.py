"""Quota entities, their names in ZooKeeper, and which entity's quota a client gets.

A quota is configured for an *entity*: a user, a client id, or a (user, client id) pair,
where either name may be ``<default>`` (every user / client id without its own entry).
In ZooKeeper (Kafka's layout) they live at ``/config/users/<user>``,
``/config/users/<user>/clients/<client-id>`` and ``/config/clients/<client-id>``, each name
*sanitized* (URL-encoded as Kafka's ``Sanitizer`` does) so that any principal or client id
is a valid znode name and never collides with ``<default>``. :class:`QuotaEntity` holds the
sanitized names; ``None`` means the entity has no such part.

A client (user, client id) gets, for each quota key separately, the quota of the first
entity configured with that key in Kafka's precedence order (:func:`resolve`)::

    /config/users/<user>/clients/<client-id>
    /config/users/<user>/clients/<default>
    /config/users/<user>
    /config/users/<default>/clients/<client-id>
    /config/users/<default>/clients/<default>
    /config/users/<default>
    /config/clients/<client-id>
    /config/clients/<default>

The matched level also says who shares the quota (Kafka's metric tags): a user-level entity
is shared by all that user's client ids (tags ``(user, "")``), a client-id-level one by all
users of that client id (``("", client)``), the others by exactly that (user, client id).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

from odradek.protocol.errors import InvalidRequest

__all__ = [
    "CLIENT_ID",
    "CONSUMER_BYTE_RATE",
    "DEFAULT",
    "PRODUCER_BYTE_RATE",
    "QUOTA_KEYS",
    "REQUEST_PERCENTAGE",
    "USER",
    "QuotaEntity",
    "desanitize",
    "resolve",
    "sanitize",
    "validate_value",
]

DEFAULT = "<default>"
USER = "user"  # the protocol's entity types
CLIENT_ID = "client-id"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_KEYS: dict[str, type] = {
    PRODUCER_BYTE_RATE: int,  # Kafka's LONG: whole bytes per second
    CONSUMER_BYTE_RATE: int,
    REQUEST_PERCENTAGE: float,  # percent of one request-handling thread
}
"""The quota keys odradek enforces, with their Kafka config type."""

Tags = tuple[str, str]  # (user, client id) of the quota's sharers, "" for "any"


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding, with ``*`` as ``%2A`` and space as
    ``%20`` (Java's encoder keeps ``*`` and writes ``+`` for space; Kafka replaces both)."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return unquote(name)


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """One configured entity, by sanitized name (``DEFAULT`` for the default entity)."""

    user: str | None = None
    client_id: str | None = None

    @property
    def zk_path(self) -> str:
        """The entity's path below ``/config`` (also its change notification's
        ``entity_path``): ``users/<u>``, ``users/<u>/clients/<c>`` or ``clients/<c>``."""
        if self.user is not None and self.client_id is not None:
            return f"users/{self.user}/clients/{self.client_id}"
        if self.user is not None:
            return f"users/{self.user}"
        if self.client_id is not None:
            return f"clients/{self.client_id}"
        raise ValueError("a quota entity names a user, a client id or both")

    @classmethod
    def from_zk_path(cls, path: str) -> QuotaEntity | None:
        """The entity of ``users/...`` or ``clients/...``; None for anything else."""
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "users" and parts[1]:
            return cls(user=parts[1])
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients" and all(parts[1::2]):
            return cls(user=parts[1], client_id=parts[3])
        if len(parts) == 2 and parts[0] == "clients" and parts[1]:
            return cls(client_id=parts[1])
        return None

    @classmethod
    def from_protocol(cls, components: Mapping[str, str | None]) -> QuotaEntity:
        """From the protocol's (entity type -> name, None for the default) pairs."""
        if not components or set(components) - {USER, CLIENT_ID}:
            raise InvalidRequest(f"Invalid quota entity types {sorted(components)}: "
                                 f"expected {USER!r} and/or {CLIENT_ID!r}")
        if any(name == "" for name in components.values()):
            raise InvalidRequest("A quota entity name may not be empty (null: the default)")
        names = {kind: DEFAULT if name is None else sanitize(name)
                 for kind, name in components.items()}
        return cls(user=names.get(USER), client_id=names.get(CLIENT_ID))

    def to_protocol(self) -> dict[str, str | None]:
        """Entity type -> name (None for the default), as DescribeClientQuotas answers."""
        found: dict[str, str | None] = {}
        for kind, name in ((USER, self.user), (CLIENT_ID, self.client_id)):
            if name is not None:
                found[kind] = None if name == DEFAULT else desanitize(name)
        return found


def validate_value(key: str, value: float) -> str:
    """The value of ``key`` as stored in ZooKeeper; INVALID_REQUEST for an unknown key, a
    negative or non-finite value, or a fraction where Kafka wants a whole number."""
    kind = QUOTA_KEYS.get(key)
    if kind is None:
        raise InvalidRequest(f"Invalid configuration key {key}")
    if not math.isfinite(value) or value < 0:
        raise InvalidRequest(f"Configuration {key} must be a non-negative number, not {value}")
    if kind is int:
        if abs(value - round(value)) > 1e-6:
            raise InvalidRequest(f"Configuration {key} must be a Long value")
        return str(round(value))
    return str(float(value))


def resolve(
    configured: Mapping[QuotaEntity, float], user: str, client_id: str
) -> tuple[Tags, float | None]:
    """The quota of ``user`` (a principal's name) with ``client_id`` among ``configured``
    (the entities that set one quota key) and the tags of the sensor it is measured by.
    Without a quota the tags are ``("", client_id)``, as Kafka tags unthrottled clients."""
    u, c = sanitize(user), sanitize(client_id)
    for entity, tags in (
        (QuotaEntity(u, c), (user, client_id)),
        (QuotaEntity(u, DEFAULT), (user, client_id)),
        (QuotaEntity(u, None), (user, "")),
        (QuotaEntity(DEFAULT, c), (user, client_id)),
        (QuotaEntity(DEFAULT, DEFAULT), (user, client_id)),
        (QuotaEntity(DEFAULT, None), (user, "")),
        (QuotaEntity(None, c), ("", client_id)),
        (QuotaEntity(None, DEFAULT), ("", client_id)),
    ):
        bound = configured.get(entity)
        if bound is not None:
            return tags, bound
    return ("", client_id), None
