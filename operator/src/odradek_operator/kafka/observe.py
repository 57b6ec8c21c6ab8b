"""Reading Kafka state into the plain values of :mod:`..decisions.state` and friends.

These are the only functions that turn admin-protocol answers into decision inputs; the
decisions never see a client.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from odradek.client.admin import AsyncAdminClient, GroupDescription, MemberDescription
from odradek.client.consumer_groups import ConsumerGroupDescription, ConsumerGroupMember
from odradek.client.errors import BrokerResponseError
from odradek.client.metadata import TopicPartition
from odradek.client.offsets import EARLIEST, LATEST

from ..decisions.state import ClusterState, PartitionState
from ..decisions.topic_plan import ObservedTopic

__all__ = ["ObservedGroup", "observe_cluster", "observe_group", "observe_topic"]

UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_OVERRIDE_SOURCE = "DYNAMIC_TOPIC_CONFIG"


async def observe_cluster(admin: AsyncAdminClient, default_min_isr: int = 1) -> ClusterState:
    """Brokers, controller, every partition's replicas and ISR, topics' min.insync.replicas
    overrides, and the partitions being reassigned."""
    metadata = await admin.describe_cluster()
    partitions = tuple(
        PartitionState(p.topic, p.partition, p.replicas, p.isr, p.leader)
        for info in metadata.topics.values() if info.error_code == 0
        for p in sorted(info.partitions.values(), key=lambda x: x.partition))
    topics = sorted({p.topic for p in partitions})
    configs = await admin.describe_topic_configs(topics, ["min.insync.replicas"])
    min_isr = {
        topic: int(entry.value)
        for topic, entries in configs.items()
        for entry in entries.values()
        if entry.name == "min.insync.replicas" and entry.value is not None
        and entry.value.isdigit()}
    reassigning = await admin.list_partition_reassignments()
    return ClusterState(
        brokers=frozenset(metadata.brokers),
        controller=metadata.controller_id,
        partitions=partitions,
        min_insync_replicas=min_isr,
        default_min_insync_replicas=default_min_isr,
        reassigning=frozenset((tp.topic, tp.partition) for tp in reassigning))


async def observe_topic(admin: AsyncAdminClient, name: str) -> ObservedTopic | None:
    """The topic as the cluster holds it, or None when it does not exist."""
    try:
        info = (await admin.describe_topics([name]))[name]
    except BrokerResponseError as exc:
        if exc.code == UNKNOWN_TOPIC_OR_PARTITION:
            return None
        raise
    configs = (await admin.describe_topic_configs([name]))[name]
    overrides = {e.name: e.value for e in configs.values()
                 if e.source == TOPIC_OVERRIDE_SOURCE and e.value is not None}
    reassigning = await admin.list_partition_reassignments(
        TopicPartition(name, p) for p in info.partitions)
    return ObservedTopic(
        name=name, topic_id=info.topic_id,
        assignment={p: part.replicas for p, part in sorted(info.partitions.items())},
        overrides=overrides, reassigning=bool(reassigning),
        config_names=frozenset(e.name for e in configs.values()))


@dataclass(frozen=True)
class ObservedGroup:
    description: GroupDescription | None  # None: the coordinator knows no such group
    committed: dict[tuple[str, int], int]
    earliest: dict[tuple[str, int], int]
    latest: dict[tuple[str, int], int]
    topic_partitions: dict[str, tuple[int, ...]]
    # A consumer-type group (KIP-848): ConsumerGroupDescribe's answer, and no description
    # (DescribeGroups sees only classic groups).
    consumer: ConsumerGroupDescription | None = None

    @property
    def members(self) -> tuple[MemberDescription | ConsumerGroupMember, ...]:
        if self.consumer is not None:
            return self.consumer.members
        return self.description.members if self.description is not None else ()

    @property
    def has_active_members(self) -> bool:
        return bool(self.members)

    @property
    def group_type(self) -> str | None:
        """``consumer`` (KIP-848), ``classic``, or None for a group that does not exist."""
        if self.consumer is not None:
            return "consumer"
        return "classic" if self.description is not None else None

    @property
    def state(self) -> str:
        if self.consumer is not None:
            return self.consumer.state
        if self.description is None:
            return "Dead"
        return self.description.state or "Unknown"


async def observe_group(admin: AsyncAdminClient, group_id: str, topics: Iterable[str] = ()
                        ) -> ObservedGroup:
    """The group's live state (ConsumerGroupDescribe first, then DescribeGroups for a
    classic group, as Kafka's admin client does), its committed offsets and the log bounds
    of every partition of the topics it committed (or was told to watch)."""
    consumer = (await admin.describe_consumer_groups([group_id]))[group_id]
    description: GroupDescription | None = None
    if consumer is None:
        try:
            description = (await admin.describe_groups([group_id]))[group_id]
        except BrokerResponseError as exc:
            if exc.code not in (16, 69):  # NOT_COORDINATOR: retried; GROUP_ID_NOT_FOUND
                raise
        if description is not None and description.state == "Dead":
            description = None
    committed = {(tp.topic, tp.partition): offset
                 for tp, offset in (await admin.list_group_offsets(group_id)).items()}
    wanted = set(topics) | {t for t, _ in committed}
    metadata = await admin.client.refresh_metadata(sorted(wanted)) if wanted else None
    topic_partitions: dict[str, tuple[int, ...]] = {}
    if metadata is not None:
        for topic in sorted(wanted):
            info = metadata.topics.get(topic)
            if info is not None and info.error_code == 0:
                topic_partitions[topic] = tuple(sorted(info.partitions))
    keys = [TopicPartition(t, p) for t, parts in topic_partitions.items() for p in parts]
    earliest, latest = {}, {}
    if keys:
        low = await admin.list_offsets({tp: EARLIEST for tp in keys})
        high = await admin.list_offsets({tp: LATEST for tp in keys})
        earliest = {(tp.topic, tp.partition): v.offset for tp, v in low.items() if v}
        latest = {(tp.topic, tp.partition): v.offset for tp, v in high.items() if v}
    return ObservedGroup(description, committed, earliest, latest, topic_partitions, consumer)
