"""Plain ZooKeeper access for tests: read what brokers and controllers wrote."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from kazoo.client import KazooClient


@contextlib.contextmanager
def zk_client(connect: str) -> Iterator[KazooClient]:
    """A kazoo client on ``connect`` (chroot included), closed on exit."""
    client = KazooClient(hosts=connect, timeout=10)
    client.start(20)
    client.ensure_path("/")
    try:
        yield client
    finally:
        client.stop()
        client.close()


def read_json(client: KazooClient, path: str) -> Any:
    """The JSON stored at ``path``, or None when the znode does not exist."""
    if client.exists(path) is None:
        return None
    data, _ = client.get(path)
    return json.loads(data)
