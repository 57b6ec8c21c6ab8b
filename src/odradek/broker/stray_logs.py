"""Deleting, at startup, logs the cluster no longer wants on this broker.

Topic deletion removes a topic's znodes at once; brokers that are up delete their logs when
the topic leaves their view. A broker that was down missed that, and would otherwise keep
(and, on a re-created topic of the same name, even serve) the stale data forever. So once
the cluster view is loaded, before any partition is opened, every local log whose topic or
partition is unknown — or that lists this broker in none of its replicas, e.g. reassigned
away while the broker was down — is deleted (Kafka's "stray" logs).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odradek.cluster.model import TopicMetadata
    from odradek.storage import LogManager

__all__ = ["delete_stray_logs", "stray_partitions"]

log = logging.getLogger(__name__)


def stray_partitions(
    local: Iterable[tuple[str, int]], topics: Mapping[str, TopicMetadata], broker_id: int
) -> list[tuple[str, int]]:
    """The ``(topic, partition)`` logs in ``local`` that this broker should not hold."""
    stray = []
    for topic, partition in sorted(local):
        metadata = topics.get(topic)
        state = metadata.partitions.get(partition) if metadata is not None else None
        if state is None or broker_id not in tuple(state.replicas):
            stray.append((topic, partition))
    return stray


def delete_stray_logs(
    log_manager: LogManager, topics: Mapping[str, TopicMetadata], broker_id: int
) -> None:
    local = [(plog.topic, plog.partition) for plog in log_manager.all_logs()]
    for topic, partition in stray_partitions(local, topics, broker_id):
        log.info("deleting stray log %s-%d (not a replica in the cluster)", topic, partition)
        try:
            log_manager.delete_log(topic, partition)
        except OSError:
            log.exception("deleting stray log %s-%d failed", topic, partition)
