"""A rebalance against the cluster: the planner's model read from the brokers, the moves
started under a replication throttle, their progress, and a stop.

Sizes come from the brokers themselves (DescribeLogDirs: each replica's bytes on disk; a
partition counts at its largest replica), racks from the brokers' registrations. The throttle
is Kafka's, set as ``kafka-reassign-partitions.sh --throttle`` sets it: a rate on every broker
that sends or receives a moving replica, and the moving replicas named per topic
(``leader.replication.throttled.replicas`` = the current replicas,
``follower.replication.throttled.replicas`` = the new ones); all of it is removed when the
moves end or stop.
"""

from __future__ import annotations

from collections.abc import Iterable

from odradek.client.admin import RESOURCE_BROKER, RESOURCE_TOPIC, AsyncAdminClient
from odradek.client.metadata import TopicPartition

from ..decisions.placement import Assignment, TopicPartitionKey
from ..decisions.rebalance import ClusterModel

__all__ = ["cancel_moves", "clear_throttles", "observe_model", "running_moves", "start_moves"]

BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LEADER_REPLICAS, FOLLOWER_REPLICAS = ("leader.replication.throttled.replicas",
                                      "follower.replication.throttled.replicas")


async def observe_model(admin: AsyncAdminClient) -> ClusterModel:
    metadata = await admin.describe_cluster()
    assignment = {(p.topic, p.partition): p.replicas
                  for info in metadata.topics.values() if info.error_code == 0
                  for p in info.partitions.values()}
    sizes: dict[TopicPartitionKey, int] = {}
    for dirs in (await admin.describe_log_dirs()).values():
        for partitions in dirs.values():
            for tp, size in partitions.items():
                key = (tp.topic, tp.partition)
                sizes[key] = max(sizes.get(key, 0), size)
    racks = {broker_id: node.rack or None for broker_id, node in metadata.brokers.items()}
    return ClusterModel(racks=racks, assignment=assignment, sizes=sizes)


def _throttled_replicas(moves: Assignment, current: Assignment) -> dict[str, dict[str, str]]:
    """Per topic, the two replica lists in Kafka's ``partition:broker,...`` form."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for (topic, partition), new in sorted(moves.items()):
        old = current.get((topic, partition), ())
        leaders.setdefault(topic, []).extend(f"{partition}:{b}" for b in old)
        followers.setdefault(topic, []).extend(f"{partition}:{b}" for b in new if b not in old)
    return {topic: {LEADER_REPLICAS: ",".join(leaders[topic]),
                    FOLLOWER_REPLICAS: ",".join(followers[topic])} for topic in leaders}


def involved_brokers(moves: Assignment, current: Assignment) -> list[int]:
    return sorted({b for tp, new in moves.items() for b in (*new, *current.get(tp, ()))})


async def start_moves(admin: AsyncAdminClient, moves: Assignment, current: Assignment,
                      throttle: int) -> None:
    """Throttle (when ``throttle`` > 0) and then start the reassignments."""
    if throttle > 0:
        for broker in involved_brokers(moves, current):
            await admin.incremental_alter_configs(
                RESOURCE_BROKER, str(broker), [(key, "set", str(throttle))
                                               for key in BROKER_RATES])
        for topic, configs in _throttled_replicas(moves, current).items():
            await admin.incremental_alter_configs(
                RESOURCE_TOPIC, topic, [(k, "set", v) for k, v in configs.items()])
    await admin.alter_partition_reassignments(
        {TopicPartition(t, p): list(r) for (t, p), r in moves.items()})


async def running_moves(admin: AsyncAdminClient, partitions: Iterable[TopicPartitionKey]
                        ) -> set[TopicPartitionKey]:
    """Which of ``partitions`` are still being moved."""
    running = await admin.list_partition_reassignments(
        [TopicPartition(t, p) for t, p in partitions])
    return {(tp.topic, tp.partition) for tp in running}


async def cancel_moves(admin: AsyncAdminClient, partitions: Iterable[TopicPartitionKey]
                       ) -> None:
    """Cancel the running moves among ``partitions`` (Kafka reverts each to its original
    replicas; moves already finished stay)."""
    running = await running_moves(admin, partitions)
    await admin.alter_partition_reassignments({TopicPartition(t, p): None for t, p in running})


async def clear_throttles(admin: AsyncAdminClient, moves: Assignment, current: Assignment) -> None:
    for broker in involved_brokers(moves, current):
        await admin.incremental_alter_configs(
            RESOURCE_BROKER, str(broker), [(key, "delete", None) for key in BROKER_RATES])
    for topic in sorted({t for t, _ in moves}):
        await admin.incremental_alter_configs(
            RESOURCE_TOPIC, topic, [(LEADER_REPLICAS, "delete", None),
                                    (FOLLOWER_REPLICAS, "delete", None)])
