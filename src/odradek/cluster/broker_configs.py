"""Writing dynamic broker configs the way Kafka's ZooKeeper mode stores them.

``/config/brokers/<id>`` (one broker) and ``/config/brokers/<default>`` (every broker) hold
``{"version":1,"config":{...}}``; each write also creates a sequential
``/config/changes/config_change_`` notification naming ``brokers/<entity>``, in the same
transaction, so Kafka's tools and every broker's view notice it. Writes are read-modify-write
conditional on the znode version, so two concurrent IncrementalAlterConfigs never lose
each other's keys. What is valid is :mod:`odradek.dynamic_config`'s business; this module
stores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from odradek.cluster import znodes
from odradek.protocol.errors import UnknownServerError

__all__ = ["Update", "alter_broker_config", "alter_entity_config"]

Update = Callable[[Mapping[str, str]], Mapping[str, str]]
_ATTEMPTS = 5


def alter_broker_config(
    client: KazooClient, entity: str, update: Update, validate_only: bool = False
) -> dict[str, str]:
    """Replace ``entity``'s dynamic configs with ``update(current)`` (which validates, raising
    a KafkaError); returns what was (or, with ``validate_only``, would be) stored."""
    return alter_entity_config(client, znodes.broker_config_path(entity), f"brokers/{entity}",
                               update, validate_only)


def alter_entity_config(client: KazooClient, path: str, entity_path: str, update: Update,
                        validate_only: bool = False) -> dict[str, str]:
    """The same for any ``/config/<type>/<name>`` znode (``entity_path`` is ``<type>/<name>``,
    what the change notification names)."""
    for _ in range(_ATTEMPTS):
        try:
            data, stat = client.get(path)
            current, version = znodes.decode_entity_config(data), stat.version
        except NoNodeError:
            current, version = {}, -1
        wanted = dict(update(current))
        if validate_only or wanted == current:
            return wanted
        encoded = znodes.encode_entity_config(wanted)
        txn = client.transaction()
        if version < 0:
            txn.create(path, encoded)
        else:
            txn.set_data(path, encoded, version=version)
        txn.create(
            f"{znodes.CONFIG_CHANGES}/{znodes.CONFIG_CHANGE_PREFIX}",
            znodes.encode_config_change(entity_path),
            sequence=True,
        )
        results = txn.commit()
        first = results[0]
        if not any(isinstance(result, Exception) for result in results):
            return wanted
        if not isinstance(first, (BadVersionError, NodeExistsError, NoNodeError)):
            raise UnknownServerError(f"writing {path} failed: {results!r}")
        # Someone else wrote meanwhile: re-read and apply the update to their version.
    raise UnknownServerError(f"{path} kept changing; retry")
