"""Consumer-type groups (KIP-848, ``group.protocol=consumer``) seen through their
coordinator: ConsumerGroupDescribe, what ``kafka-consumer-groups --describe`` reads for them.

DescribeGroups describes classic groups only (a consumer-type group is Dead there, as in
Kafka); ConsumerGroupDescribe answers GROUP_ID_NOT_FOUND for a classic or unknown group,
which :func:`describe_consumer_groups` returns as None so that a caller can fall back to
DescribeGroups, as Kafka's admin client does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey

from .cluster_client import ClusterClient
from .errors import UnsupportedByBroker, raise_for_code
from .metadata import TopicPartition

__all__ = ["ConsumerGroupDescription", "ConsumerGroupMember", "describe_consumer_groups"]

# GROUP_ID_NOT_FOUND: a classic group, or none; UNSUPPORTED_VERSION: a broker whose group
# coordinator has no consumer-type groups (Apache Kafka 3.x in ZooKeeper mode answers so).
_NOT_A_CONSUMER_GROUP = (ErrorCode.group_id_not_found, ErrorCode.unsupported_version)


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One member: its epoch, and where its reconciliation stands (the partitions it owns
    now, ``assignment``, against those the group's assignor gave it, ``target_assignment``:
    they differ while it revokes or waits for partitions another member still owns)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    subscribed_topics: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[TopicPartition, ...]
    target_assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    state: str  # Empty, Assigning, Reconciling, Stable
    group_epoch: int
    assignment_epoch: int  # the target assignment's epoch
    assignor: str
    members: tuple[ConsumerGroupMember, ...]
    coordinator: int


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    if assignment is None:
        return ()
    return tuple(sorted(TopicPartition(t.topic_name, int(p))
                        for t in assignment.topic_partitions for p in t.partitions))


async def describe_consumer_groups(client: ClusterClient, group_ids: Iterable[str]
                                   ) -> dict[str, ConsumerGroupDescription | None]:
    """Each group asked, or None when it is not a consumer-type group (classic, or none;
    a broker without KIP-848's coordinator has no such groups). Raises
    :class:`BrokerResponseError` for any other error."""
    out: dict[str, ConsumerGroupDescription | None] = {}
    for group_id in group_ids:
        node = await client.find_coordinator(group_id)
        try:
            response = await client.send(node, ApiKey.CONSUMER_GROUP_DESCRIBE, {
                "group_ids": [group_id], "include_authorized_operations": False})
        except UnsupportedByBroker:
            out[group_id] = None
            continue
        for group in response.groups:
            if group.error_code in _NOT_A_CONSUMER_GROUP:
                out[str(group.group_id)] = None
                continue
            raise_for_code(group.error_code, f"ConsumerGroupDescribe {group_id!r}",
                           group.error_message)
            out[str(group.group_id)] = ConsumerGroupDescription(
                str(group.group_id), group.group_state, int(group.group_epoch),
                int(group.assignment_epoch), group.assignor_name,
                tuple(ConsumerGroupMember(
                    m.member_id, m.instance_id, m.client_id, m.client_host,
                    int(m.member_epoch), tuple(str(t) for t in m.subscribed_topic_names),
                    m.subscribed_topic_regex, _partitions(m.assignment),
                    _partitions(m.target_assignment))
                    for m in group.members),
                node)
    return out
