"""What the client knows about the cluster: brokers, topics, partition leaders.

A :class:`ClusterMetadata` is an immutable snapshot built from one Metadata response; the
client swaps in a new snapshot on refresh, so readers never see half an update.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.types import TopicPartition

from .connection import NodeAddress

__all__ = ["ClusterMetadata", "PartitionInfo", "TopicInfo", "TopicPartition"]


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: ErrorCode = ErrorCode.none


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    error_code: ErrorCode
    is_internal: bool
    partitions: dict[int, PartitionInfo]
    topic_id: str | None = None


@dataclass(frozen=True)
class ClusterMetadata:
    brokers: dict[int, NodeAddress] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None

    @classmethod
    def from_response(cls, response: Any, previous: ClusterMetadata | None = None,
                      full: bool = False) -> ClusterMetadata:
        """Merge a Metadata response into ``previous`` (replacing it when ``full``)."""
        brokers = {
            int(b.node_id): NodeAddress(int(b.node_id), b.host, int(b.port),
                                        getattr(b, "rack", None))
            for b in response.brokers
        }
        topics = {} if full or previous is None else dict(previous.topics)
        for t in response.topics:
            partitions = {
                int(p.partition_index): PartitionInfo(
                    t.name, int(p.partition_index), int(p.leader_id),
                    int(getattr(p, "leader_epoch", -1)),
                    tuple(int(r) for r in p.replica_nodes),
                    tuple(int(r) for r in p.isr_nodes),
                    tuple(int(r) for r in getattr(p, "offline_replicas", ())),
                    ErrorCode(p.error_code),
                )
                for p in t.partitions
            }
            topic_id = getattr(t, "topic_id", None)
            topics[t.name] = TopicInfo(t.name, ErrorCode(t.error_code),
                                       bool(getattr(t, "is_internal", False)), partitions,
                                       str(topic_id) if topic_id else None)
        return cls(brokers, topics, int(getattr(response, "controller_id", -1)),
                   getattr(response, "cluster_id", None))

    def partitions_for(self, topic: str) -> list[int]:
        info = self.topics.get(topic)
        return sorted(info.partitions) if info and info.error_code == ErrorCode.none else []

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        info = self.topics.get(tp.topic)
        return info.partitions.get(tp.partition) if info else None

    def leader_for(self, tp: TopicPartition) -> int:
        """The leader's node id, or -1 when unknown/unavailable."""
        part = self.partition(tp)
        if part is None or part.leader < 0 or part.leader not in self.brokers:
            return -1
        return part.leader

    def available_partitions(self, topic: str) -> list[int]:
        info = self.topics.get(topic)
        if not info:
            return []
        return sorted(p for p, part in info.partitions.items()
                      if part.leader >= 0 and part.leader in self.brokers)

    def knows(self, topics: Iterable[str]) -> bool:
        return all(t in self.topics and self.topics[t].error_code == ErrorCode.none for t in topics)
