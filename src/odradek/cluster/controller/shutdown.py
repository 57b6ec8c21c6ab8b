"""Controlled shutdown (ControlledShutdown v3): a broker about to stop asks the controller
to move its leaderships and drop it from every ISR.

The broker is marked *shutting down* for as long as the registration that asked (its
broker epoch) exists: never elected, dropped from ISRs, yet still live, so a partition it
alone can lead stays with it until it stops (Kafka reports those as "remaining"; going
offline early would only turn a clean stop into an outage). The move itself is ordinary
reconcile passes with the mark in place.
"""

from __future__ import annotations

import logging

from odradek.cluster import znodes
from odradek.cluster.controller import reconcile
from odradek.cluster.controller.context import (
    ATTEMPTS,
    ControllerContext,
    all_partitions,
    read_state,
)
from odradek.cluster.controller.errors import StaleBrokerEpoch
from odradek.cluster.model import TopicPartition
from odradek.protocol.errors import BrokerNotAvailable

__all__ = ["controlled_shutdown"]

log = logging.getLogger(__name__)


def controlled_shutdown(
    ctx: ControllerContext, broker_id: int, broker_epoch: int
) -> list[TopicPartition]:
    """Mark ``broker_id`` shutting down and move what can be moved; returns the partitions
    it still leads (their only in-sync replica is the broker itself)."""
    client = ctx.client
    stat = client.exists(znodes.broker_path(broker_id))
    if stat is None:
        raise BrokerNotAvailable(f"broker {broker_id} is not registered")
    if broker_epoch >= 0 and stat.czxid != broker_epoch:
        raise StaleBrokerEpoch(
            f"broker {broker_id} epoch {broker_epoch} is stale (registered: {stat.czxid})"
        )
    if broker_id not in ctx.shutting_down:
        log.info("controller %d: controlled shutdown of broker %d", ctx.broker_id, broker_id)
    ctx.shutting_down[broker_id] = stat.czxid
    for _ in range(ATTEMPTS * 2):
        if not reconcile.run_pass(ctx).again:
            break
    remaining: list[TopicPartition] = []
    for tp in all_partitions(client):
        read = read_state(client, tp)
        if read is not None and read[0].leader == broker_id and len(read[0].replicas) > 1:
            remaining.append(tp)
    return remaining
