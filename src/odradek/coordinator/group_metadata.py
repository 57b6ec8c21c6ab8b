"""A group's membership as a ``__consumer_offsets`` group-metadata record, and back.

Split from the state machine in :mod:`odradek.coordinator.group` because saving and
loading is one idea with its own rule set — which fields survive a coordinator move, what a
loaded member's liveness is — and it only needs the group's bookkeeping
(:class:`~odradek.coordinator.group_members.GroupMembership`), not how the group moves.
The byte format itself is :mod:`odradek.coordinator.offsets_topic_format`.
"""

from __future__ import annotations

from odradek.protocol.records import Record

from .group_members import GroupMembership
from .group_state import GroupState
from .member import Member, Protocols
from .offsets_topic_format import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    encode_group_metadata_key,
    encode_group_metadata_value,
)

__all__ = ["load_group_metadata", "metadata_record", "metadata_value"]


def metadata_value(group: GroupMembership) -> GroupMetadataValue:
    """The group's membership as the value of its metadata record."""
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id if group.members else None,
        current_state_timestamp=group.state_timestamp_ms,
        members=tuple(
            MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata_for(group.protocol_name),
                assignment=m.assignment,
            )
            for m in group.members.values()
        ),
    )


def metadata_record(group: GroupMembership, now_ms: int) -> Record:
    """The record a completed rebalance (or an emptied group) appends to ``__consumer_offsets``."""
    return Record(
        timestamp=now_ms,
        key=encode_group_metadata_key(GroupMetadataKey(group.group_id)),
        value=encode_group_metadata_value(metadata_value(group)),
    )


def load_group_metadata(group: GroupMembership, value: GroupMetadataValue, now_ms: int) -> None:
    """Fill a fresh group from its last metadata record (loading a partition).

    A group with members comes back Stable and every member gets a fresh session
    timeout from ``now_ms``: the new coordinator has no idea when they last heartbeat.
    """
    group.protocol_type = value.protocol_type or None
    group.generation_id = value.generation
    group.protocol_name = value.protocol
    group.leader_id = value.leader
    for meta in value.members:
        protocols: Protocols = ((value.protocol or "", meta.subscription),)
        member = Member(
            member_id=meta.member_id,
            group_instance_id=meta.group_instance_id,
            client_id=meta.client_id,
            client_host=meta.client_host,
            rebalance_timeout_ms=(
                meta.rebalance_timeout if meta.rebalance_timeout >= 0
                else meta.session_timeout
            ),
            session_timeout_ms=meta.session_timeout,
            protocol_type=value.protocol_type,
            protocols=protocols,
            assignment=meta.assignment,
            heartbeat_deadline_ms=now_ms + meta.session_timeout,
        )
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
    group.state_timestamp_ms = (
        value.current_state_timestamp if value.current_state_timestamp >= 0 else now_ms
    )
