"""A group's membership as a ``__consumer_offsets`` group-metadata record, and back.

Apart from the state machine in :mod:`odradek.coordinator.group` because saving and
loading is one idea with its own rule set — which fields survive a coordinator move, what a
loaded member's liveness is — and it only needs what a group records (:class:`RecordedGroup`),
not how the group moves.
The byte format itself is :mod:`odradek.coordinator.offsets_topic_format`.
"""

from __future__ import annotations

from typing import Protocol

from odradek.protocol.records import Record

from .group_members import Membership
from .group_state import GroupState
from .member import Member, Protocols
from .offsets_topic_format import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    encode_group_metadata_key,
    encode_group_metadata_value,
)

__all__ = ["RecordedGroup", "load_group_metadata", "metadata_record", "metadata_value"]


class RecordedGroup(Protocol):
    """The facts of a group that its metadata record holds (a
    :class:`~odradek.coordinator.group.Group`; a protocol so this module needs no import of
    the state machine)."""

    group_id: str
    protocol_type: str | None
    protocol_name: str | None
    generation_id: int
    state: GroupState
    state_timestamp_ms: int
    membership: Membership


def metadata_value(group: RecordedGroup) -> GroupMetadataValue:
    """The group's membership as the value of its metadata record."""
    membership = group.membership
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=membership.leader_id if membership.members else None,
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
            for m in membership.members.values()
        ),
    )


def metadata_record(group: RecordedGroup, now_ms: int) -> Record:
    """The record a completed rebalance (or an emptied group) appends to ``__consumer_offsets``."""
    return Record(
        timestamp=now_ms,
        key=encode_group_metadata_key(GroupMetadataKey(group.group_id)),
        value=encode_group_metadata_value(metadata_value(group)),
    )


def load_group_metadata(group: RecordedGroup, value: GroupMetadataValue, now_ms: int) -> None:
    """Fill a fresh group from its last metadata record (loading a partition).

    A group with members comes back Stable and every member gets a fresh session
    timeout from ``now_ms``: the new coordinator has no idea when they last heartbeat.
    """
    group.protocol_type = value.protocol_type or None
    group.generation_id = value.generation
    group.protocol_name = value.protocol
    membership = group.membership
    for meta in value.members:
        protocols: Protocols = ((value.protocol or "", meta.subscription),)
        membership.add(Member(
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
        ))
    membership.leader_id = value.leader  # as recorded, not the first member add() chose
    group.state = GroupState.STABLE if membership.members else GroupState.EMPTY
    group.state_timestamp_ms = (
        value.current_state_timestamp if value.current_state_timestamp >= 0 else now_ms
    )
