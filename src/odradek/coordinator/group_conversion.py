"""Online migration between classic and consumer groups (KIP-848's upgrade and downgrade).

Pure functions on the groups' state, as Kafka's ``ConsumerGroup.fromClassicGroup`` and
``ClassicGroup.fromConsumerGroup`` with the checks of its ``GroupMetadataManager``
(``validateOnlineUpgrade``, ``validateOnlineDowngradeWithFencedMembers``):

* **upgrade**: the first ConsumerGroupHeartbeat of a member joining a non-empty classic group
  turns it into a consumer group when ``group.consumer.migration.policy`` is
  ``bidirectional`` or ``upgrade``, the group runs the consumer embedded protocol and it is
  not larger than ``group.consumer.max.size``. Its group epoch and assignment epoch are the
  classic generation; every classic member becomes a member of that epoch, Stable, whose
  current and target assignment are what the classic leader gave it, and which goes on
  speaking the classic protocol (:mod:`odradek.coordinator.classic_members`) until its
  process is rolled. The joining member then bumps the epoch like any other join, so the
  partitions move through the usual revocation-before-assignment reconciliation.
* **downgrade**: when the members that leave or are fenced are the last ones speaking the
  consumer protocol and classic members remain (policy ``bidirectional`` or ``downgrade``,
  no more than ``group.max.size``), the group becomes a classic group of generation = group
  epoch, Stable with each member's current assignment, and starts a rebalance at once: the
  classic members rejoin and the leader assigns again.

Committed offsets are not part of either group here: they stay in the shard's offsets
holder (:class:`~odradek.coordinator.group.Group`) and in their own records, so a
conversion cannot lose them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from odradek.config_sections import GroupCoordinatorConfig
from odradek.protocol.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    MalformedConsumerProtocol,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)

from .consumer_group import ClassicMetadata, ConsumerGroup, ConsumerMember
from .group import Group
from .group_state import GroupState
from .member import Member
from .reconciliation import MemberAssignment, MemberState

__all__ = [
    "MalformedConsumerProtocol",
    "classic_from_consumer",
    "consumer_from_classic",
    "downgrade_allowed",
    "upgrade_refusal",
]


def upgrade_refusal(classic: Group, config: GroupCoordinatorConfig) -> str | None:
    """Why the non-empty classic group cannot become a consumer group, or None if it can."""
    if config.consumer_migration_policy not in ("bidirectional", "upgrade"):
        return "the online upgrade is disabled"
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return "the group does not use the consumer embedded protocol"
    if len(classic.members) > config.consumer_max_size:
        return "the group size exceeds the consumer group maximum size"
    return None


def consumer_from_classic(classic: Group, config: GroupCoordinatorConfig,
                          now_ms: int) -> ConsumerGroup:
    """The consumer group a classic group becomes (its offsets are not part of it).

    :raises MalformedConsumerProtocol: a member's subscription or assignment does not parse.
    """
    group = ConsumerGroup(classic.group_id, config)
    epoch = classic.generation_id
    group.group_epoch = group.assignment_epoch = epoch
    for member in classic.members.values():
        subscription = decode_subscription(member.metadata_for(classic.protocol_name))
        assigned = frozenset(decode_assignment(member.assignment))
        converted = ConsumerMember(
            member.member_id, member.group_instance_id, None, member.client_id,
            member.client_host, member.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            assignment=MemberAssignment(MemberState.STABLE, epoch, epoch, assigned),
            session_deadline_ms=now_ms + member.session_timeout_ms,
            classic=ClassicMetadata(member.session_timeout_ms, member.protocols),
        )
        group.members[member.member_id] = converted
        group.target[member.member_id] = assigned
    group.rebuild_indexes()
    return group


def downgrade_allowed(group: ConsumerGroup, leaving: Collection[str],
                      config: GroupCoordinatorConfig) -> bool:
    """Whether the group becomes classic once the members ``leaving`` are gone."""
    remaining = [m for m in group.members.values() if m.member_id not in leaving]
    return (
        bool(remaining)
        and all(m.classic is not None for m in remaining)
        and config.consumer_migration_policy in ("bidirectional", "downgrade")
        and len(remaining) <= config.max_group_size
    )


def classic_from_consumer(group: ConsumerGroup, leaving: Collection[str],
                          config: GroupCoordinatorConfig, now_ms: int,
                          new_uuid: Callable[[], str]) -> Group:
    """The classic group (Stable, generation = group epoch, no offsets) that the consumer
    group's remaining classic members form; the caller starts its rebalance."""
    classic = Group(group.group_id, config, now_ms, new_uuid)
    classic.generation_id = group.group_epoch
    classic.protocol_type = CONSUMER_PROTOCOL_TYPE
    for member in group.members.values():
        if member.member_id in leaving or member.classic is None:
            continue
        classic.membership.add(Member(
            member_id=member.member_id,
            group_instance_id=member.instance_id,
            client_id=member.client_id,
            client_host=member.client_host,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            session_timeout_ms=member.classic.session_timeout_ms,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=member.classic.protocols,
            assignment=encode_assignment(sorted(member.assignment.assigned)),
            heartbeat_deadline_ms=now_ms + member.classic.session_timeout_ms,
        ))
    classic.protocol_name = classic.membership.select_protocol()
    classic.subscribed_topics = classic.membership.subscribed_topics(
        classic.protocol_type, classic.protocol_name)
    classic.state = GroupState.STABLE
    classic.state_timestamp_ms = now_ms
    return classic
