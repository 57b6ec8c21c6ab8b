"""Topic deletion: ``/admin/delete_topics/<t>`` (written by DeleteTopics or Kafka's tools)
makes the controller remove every znode of the topic and the marker in one fenced
transaction. Brokers delete their logs when the topic leaves their view (Kafka waits for
StopReplica acknowledgements first); a broker that was down at the time deletes its stray
log when it comes back (:mod:`odradek.broker.stray_logs`).
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import NoNodeError

from odradek.cluster import znodes
from odradek.cluster.controller.context import ControllerContext

__all__ = ["delete_topic", "topics_to_delete"]

log = logging.getLogger(__name__)


def topics_to_delete(ctx: ControllerContext) -> set[str]:
    """The deletion markers, leaving the work watch on their directory."""
    return set(ctx.client.get_children(znodes.DELETE_TOPICS, watch=ctx.work_watch))


def delete_topic(ctx: ControllerContext, topic: str) -> bool:
    """Remove ``topic``; True if it changed while collecting (try again next pass)."""
    client = ctx.client
    paths = _collect(client, znodes.topic_path(topic))
    config_path = znodes.topic_config_path(topic)
    if client.exists(config_path) is not None:
        paths.append(config_path)
    paths.append(znodes.delete_topic_path(topic))

    def build(txn: TransactionRequest) -> None:
        for path in paths:
            txn.delete(path)

    results = ctx.fenced(build)
    if any(isinstance(r, Exception) for r in results):
        return True
    log.info("controller %d: deleted topic %s", ctx.broker_id, topic)
    return False


def _collect(client: KazooClient, path: str) -> list[str]:
    """``path`` and everything under it, children first (ZooKeeper deletes only leaves)."""
    try:
        children = client.get_children(path)
    except NoNodeError:
        return []
    paths: list[str] = []
    for child in children:
        paths.extend(_collect(client, f"{path}/{child}"))
    paths.append(path)
    return paths
