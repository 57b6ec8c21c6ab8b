"""The vocabulary every layer shares: ids that must not be mixed, and the partition key.

The ids are ``NewType`` s over ``int``: free at runtime, but mypy refuses a ``LeaderEpoch``
where an ``Offset`` is expected — the mix-ups that replication bugs are made of.
:class:`TopicPartition` is the one key for a partition, in every layer (storage, broker,
cluster, client). It is a ``NamedTuple``, so it equals and hashes like the plain
``(topic, partition)`` tuple and unpacks like one.

This module imports nothing from odradek: it sits below every package.
"""

from __future__ import annotations

from typing import NamedTuple, NewType

__all__ = [
    "BrokerId",
    "ControllerEpoch",
    "LeaderEpoch",
    "Offset",
    "PartitionIndex",
    "ProducerEpoch",
    "ProducerId",
    "TopicPartition",
]

BrokerId = NewType("BrokerId", int)
"""A broker's ``broker.id``; ``-1`` where Kafka means "none" (no leader)."""

Offset = NewType("Offset", int)
"""A position in a partition's log (the offset of a record, or one past the last)."""

LeaderEpoch = NewType("LeaderEpoch", int)
"""The leader's term for one partition; bumped by the controller on every leader change."""

ControllerEpoch = NewType("ControllerEpoch", int)
"""The controller's term; a write carrying an older one is fenced."""

ProducerId = NewType("ProducerId", int)
ProducerEpoch = NewType("ProducerEpoch", int)

PartitionIndex = NewType("PartitionIndex", int)
"""A partition's number within its topic."""


class TopicPartition(NamedTuple):
    """A partition of a topic: the key for everything per partition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
