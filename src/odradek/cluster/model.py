"""Value types of the cluster layer: brokers, partitions, topics.

Everything here is a frozen dataclass so a snapshot handed to a reader on the event loop
can never change under it; updates build new objects and swap whole mappings.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NewType, TypeVar

from odradek.types import TopicPartition as TopicPartition

BrokerId = NewType("BrokerId", int)
LeaderEpoch = NewType("LeaderEpoch", int)
ControllerEpoch = NewType("ControllerEpoch", int)

NO_LEADER = -1
"""Kafka's ``LeaderAndIsr.NoLeader``: the partition is offline."""


K = TypeVar("K")
V = TypeVar("V")


def frozen_mapping(items: Mapping[K, V] | None = None) -> Mapping[K, V]:
    """A read-only copy, so published snapshots cannot be mutated by a reader."""
    return MappingProxyType(dict(items or {}))


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener, written in ZooKeeper as ``LISTENER://host:port``."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        # IPv6 literals are bracketed exactly as Kafka's EndPoint.connectionString does.
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A live broker as registered under ``/brokers/ids/<id>``.

    ``host``/``port`` are the broker's PLAINTEXT endpoint (Kafka's top-level compatibility
    fields); ``endpoints`` holds every advertised listener.
    """

    id: int
    host: str
    port: int
    rack: str | None = None
    endpoints: tuple[Endpoint, ...] = ()

    def __post_init__(self) -> None:
        if self.rack == "":  # an unset broker.rack property reads as ""
            object.__setattr__(self, "rack", None)
        if not self.endpoints:
            object.__setattr__(self, "endpoints", (Endpoint("PLAINTEXT", self.host, self.port),))


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """Assignment plus leadership of one partition, as registered in ZooKeeper (Kafka's
    ``LeaderIsrAndControllerEpoch`` with the replica list; KRaft's ``PartitionRegistration``).

    ``replicas`` comes from ``/brokers/topics/<t>``; the rest from
    ``/brokers/topics/<t>/partitions/<p>/state``. A partition the controller has not yet
    initialised has ``leader == NO_LEADER``, ``leader_epoch == -1`` and ``zk_version == -1``.
    ``zk_version`` is the state znode's version: whoever rewrites the state (controller now,
    the leader's ISR updates later) writes conditionally on it.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    controller_epoch: int
    zk_version: int = -1

    @property
    def online(self) -> bool:
        return self.leader != NO_LEADER


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=frozen_mapping)
    config: Mapping[str, str] = field(default_factory=frozen_mapping)
