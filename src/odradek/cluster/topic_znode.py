"""``/brokers/topics/<t>`` as the controller reads and rewrites it: replica lists of every
partition, including ongoing reassignments, and the znode version every rewrite is
conditional on (admin tools and other controllers may write the same znode)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent

from odradek.cluster import znodes
from odradek.cluster.reassignment import ReplicaAssignment

__all__ = ["TopicZnode", "read_topic_znode"]


@dataclass(frozen=True, slots=True)
class TopicZnode:
    """``/brokers/topics/<t>`` as read, with the znode version to write against."""

    name: str
    topic_id: uuid.UUID | None  # None: written by a pre-2.8 tool
    version: int
    assignment: Mapping[int, ReplicaAssignment]

    def encode(self, assignment: Mapping[int, ReplicaAssignment]) -> bytes:
        return znodes.encode_topic_assignment(
            self.topic_id or znodes.random_kafka_uuid(),
            {p: a.replicas for p, a in assignment.items()},
            {p: a.adding for p, a in assignment.items()},
            {p: a.removing for p, a in assignment.items()},
        )


def read_topic_znode(
    client: KazooClient, name: str, watch: Callable[[WatchedEvent], None] | None = None
) -> TopicZnode | None:
    try:
        data, stat = client.get(znodes.topic_path(name), watch=watch)
    except NoNodeError:
        return None
    topic_id, replicas = znodes.decode_topic_assignment(data)
    adding, removing = znodes.decode_ongoing_reassignment(data)
    assignment = {
        p: ReplicaAssignment(r, adding.get(p, ()), removing.get(p, ())) for p, r in replicas.items()
    }
    return TopicZnode(name, topic_id, stat.version, assignment)
