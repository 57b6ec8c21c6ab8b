"""Leader elections on request (ElectLeaders, preferred or unclean), also the step the
preferred-leader rebalance (:mod:`.rebalance`) ends with.

Each partition is read, decided by the pure rules of :mod:`odradek.cluster.election` and
written fenced and conditional on the version read; a conflicting write (a leader's ISR
update) re-reads and retries a few times before the partition reports an error.
"""

from __future__ import annotations

from collections.abc import Set

from odradek.cluster import znodes
from odradek.cluster.controller.context import (
    ATTEMPTS,
    ControllerContext,
    all_partitions,
    read_state,
)
from odradek.cluster.controller.errors import (
    ElectionNotNeeded,
    EligibleLeadersNotAvailable,
    PreferredLeaderNotAvailable,
)
from odradek.cluster.election import (
    LeaderAndIsr,
    is_unclean,
    preferred_leader_and_isr,
    unclean_leader_and_isr,
)
from odradek.cluster.model import NO_LEADER, TopicPartition
from odradek.protocol.errors import KafkaError, UnknownServerError, UnknownTopicOrPartition

__all__ = ["PartitionResults", "elect_partitions"]

PartitionResults = dict[TopicPartition, KafkaError | None]


def elect_partitions(
    ctx: ControllerContext, partitions: list[TopicPartition] | None, unclean: bool
) -> PartitionResults:
    """ElectLeaders: preferred (default) or unclean; ``None`` means every partition."""
    client = ctx.client
    brokers = ctx.read_liveness(watch=False)
    if partitions is None:
        partitions = all_partitions(client)
    results: PartitionResults = {}
    for tp in partitions:
        results[tp] = _elect_one(ctx, tp, brokers.live, brokers.shutting_down, unclean)
    return results


def _elect_one(
    ctx: ControllerContext,
    tp: TopicPartition,
    live: Set[int],
    shutting_down: Set[int],
    unclean: bool,
) -> KafkaError | None:
    for _ in range(ATTEMPTS):
        read = read_state(ctx.client, tp)
        if read is None:
            return UnknownTopicOrPartition(f"The partition {tp} does not exist.")
        current, _topic = read
        if current.zk_version < 0:
            return EligibleLeadersNotAvailable(f"{tp} has no leader state yet")
        decided: LeaderAndIsr | None
        if unclean:
            if current.leader in live:
                return ElectionNotNeeded(f"Leader election not needed for topic partition {tp}")
            decided = unclean_leader_and_isr(current, live, shutting_down)
            if decided is None or decided.leader == NO_LEADER:
                return EligibleLeadersNotAvailable(f"No live replica can lead {tp}")
        else:
            if current.replicas and current.leader == current.replicas[0]:
                return ElectionNotNeeded(f"Leader election not needed for topic partition {tp}")
            decided = preferred_leader_and_isr(current, live, shutting_down)
            if decided is None:
                return PreferredLeaderNotAvailable(
                    f"Failed to elect leader for partition {tp} under strategy "
                    "PreferredReplicaPartitionLeaderElectionStrategy"
                )
        path = znodes.partition_state_path(tp.topic, tp.partition)
        if ctx.set_fenced(path, ctx.encode_state(decided), current.zk_version):
            ctx.log_change(tp.topic, tp.partition, decided, unclean=is_unclean(current, decided))
            return None
    return UnknownServerError(f"{tp} kept changing during the election; retry")
