"""Client quotas in ZooKeeper, stored the way Kafka's ZooKeeper mode stores them.

An entity's quotas are its znode's config (``{"version":1,"config":{"producer_byte_rate":
"1048576"}}``) at ``/config/users/<user>``, ``/config/users/<user>/clients/<client-id>`` or
``/config/clients/<client-id>`` (names sanitized, ``<default>`` for the default entity; see
:mod:`odradek.quota.entities`). Each write also creates a ``/config/changes/config_change_``
notification naming the entity (``clients/<client-id>``, ``users/<user>/clients/<c>``), in
the same transaction: every broker's cluster view re-reads that entity and applies it, and
so do Kafka's tools and brokers. Writes are read-modify-write conditional on the znode
version, and keep keys that are not quotas (a user's znode also holds SCRAM credentials).
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from odradek.cluster import znodes
from odradek.cluster.broker_configs import Update, alter_entity_config
from odradek.quota.entities import QuotaEntity

__all__ = ["alter_client_quotas", "read_all_client_quotas", "read_client_quotas"]

log = logging.getLogger(__name__)



def _path(entity: QuotaEntity) -> str:
    return f"/config/{entity.zk_path}"


def alter_client_quotas(
    client: KazooClient, entity: QuotaEntity, update: Update, validate_only: bool = False
) -> dict[str, str]:
    """Replace ``entity``'s config with ``update(current)`` (which validates, raising a
    KafkaError); returns what was (or would be) stored."""
    path = _path(entity)
    if not validate_only:
        # /config/users/<u>/clients: Kafka creates the parent of a nested entity empty too.
        client.ensure_path(path.rsplit("/", 1)[0])
    return alter_entity_config(client, path, entity.zk_path, update, validate_only)


def read_client_quotas(client: KazooClient, entity: QuotaEntity) -> dict[str, str] | None:
    """The stored config of one entity; None when its znode does not exist."""
    try:
        data, _ = client.get(_path(entity))
    except NoNodeError:
        return None
    try:
        return znodes.decode_entity_config(data)
    except (ValueError, TypeError, AttributeError):
        log.error("ignoring the unparseable config of quota entity %s", entity.zk_path)
        return {}


def read_all_client_quotas(client: KazooClient) -> dict[QuotaEntity, dict[str, str]]:
    """Every user, (user, client id) and client id entity with a non-empty config."""
    found: dict[QuotaEntity, dict[str, str]] = {}

    def add(entity: QuotaEntity) -> None:
        config = read_client_quotas(client, entity)
        if config:
            found[entity] = config

    def children(path: str) -> list[str]:
        try:
            return sorted(client.get_children(path))
        except NoNodeError:
            return []

    for user in children("/config/users"):
        add(QuotaEntity(user=user))
        for client_id in children(f"/config/users/{user}/clients"):
            add(QuotaEntity(user=user, client_id=client_id))
    for client_id in children("/config/clients"):
        add(QuotaEntity(client_id=client_id))
    return found
