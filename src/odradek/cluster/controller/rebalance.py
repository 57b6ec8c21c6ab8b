"""Preferred-leader rebalance: leadership back to each partition's first replica.

Two triggers, as in Kafka's ZooKeeper mode: the ``/admin/preferred_replica_election`` znode
(``kafka-preferred-replica-election`` and older tools write it; the controller elects, then
deletes it) and, with ``auto.leader.rebalance.enable``, a periodic check whose choice of
partitions is the pure rule of :mod:`odradek.cluster.preferred`.
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from odradek.cluster import znodes
from odradek.cluster.controller.context import ControllerContext, all_partitions, read_state
from odradek.cluster.controller.leader_election import elect_partitions
from odradek.cluster.model import PartitionRegistration, TopicPartition
from odradek.cluster.preferred import partitions_to_rebalance

__all__ = ["auto_rebalance", "run_preferred_request"]

log = logging.getLogger(__name__)


def run_preferred_request(ctx: ControllerContext) -> bool:
    """Kafka's ZK-mode ``kafka-preferred-replica-election``: elect, then delete the znode.
    True if the znode changed meanwhile (another pass is needed)."""
    client: KazooClient = ctx.client
    path = znodes.PREFERRED_REPLICA_ELECTION
    try:
        data, stat = client.get(path, watch=ctx.work_watch)
    except NoNodeError:
        client.exists(path, watch=ctx.work_watch)
        return False
    try:
        wanted = [TopicPartition(t, p) for t, p in znodes.decode_partition_list(data)]
    except (ValueError, KeyError, TypeError):
        wanted = []
    elect_partitions(ctx, wanted, unclean=False)
    return not ctx.delete_fenced(path, stat.version)


def auto_rebalance(ctx: ControllerContext) -> None:
    """One check of Kafka's auto leader rebalance (``auto.leader.rebalance.enable``)."""
    client = ctx.client
    if client.exists(znodes.REASSIGN_PARTITIONS) is not None:
        return
    brokers = ctx.read_liveness(watch=False)
    states: dict[TopicPartition, PartitionRegistration] = {}
    for tp in all_partitions(client):
        read = read_state(client, tp)
        if read is None:
            continue
        state, assigned = read
        if assigned.is_reassigning:
            return  # the reassignment decides leadership; check again next period
        if state.zk_version >= 0:
            states[tp] = state
    chosen = partitions_to_rebalance(
        states,
        brokers.live,
        ctx.settings.leader_imbalance_per_broker_percentage,
        brokers.shutting_down,
    )
    if chosen:
        log.info(
            "controller %d: preferred leader rebalance of %s",
            ctx.broker_id,
            [str(tp) for tp in chosen],
        )
        elect_partitions(ctx, chosen, unclean=False)
