"""SCRAM credentials in ZooKeeper, where and how Kafka's ZooKeeper mode keeps them.

``/config/users/<sanitized user>`` holds ``{"version":1,"config":{"SCRAM-SHA-256":
"salt=..,stored_key=..,server_key=..,iterations=4096"}}`` (other keys of the same znode —
user quotas — are kept as they are); each write adds a ``users/<user>`` change notification
in the same transaction, like Kafka's ``AdminZkClient``. Brokers read a user's credential
when a client authenticates, so a new or deleted credential applies to the next login.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import quote, unquote

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from odradek.cluster import znodes
from odradek.cluster.broker_configs import alter_entity_config

__all__ = [
    "CONFIG_USERS",
    "alter_user_config",
    "list_users",
    "read_user_config",
    "sanitize_user",
    "user_config_path",
]

CONFIG_USERS = "/config/users"


def sanitize_user(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding, with ``*`` and ``~`` encoded too and a
    space as ``%20``, so any user name is one znode name."""
    return quote(name, safe="").replace("*", "%2A").replace("~", "%7E")


def user_config_path(name: str) -> str:
    return f"{CONFIG_USERS}/{sanitize_user(name)}"


def read_user_config(client: KazooClient, name: str) -> dict[str, str]:
    try:
        data, _stat = client.get(user_config_path(name))
    except NoNodeError:
        return {}
    return znodes.decode_entity_config(data)


def alter_user_config(client: KazooClient, name: str,
                      update: Callable[[Mapping[str, str]], Mapping[str, str]]
                      ) -> dict[str, str]:
    return alter_entity_config(client, user_config_path(name),
                               f"users/{sanitize_user(name)}", update)


def list_users(client: KazooClient) -> list[str]:
    try:
        children = client.get_children(CONFIG_USERS)
    except NoNodeError:
        return []
    return sorted(unquote(child) for child in children)
