"""A classic group's bookkeeping: who is in it, which protocol it speaks, what it committed.

Split from :mod:`odradek.coordinator.group` (which holds the JoinGroup/SyncGroup/rebalance
state machine) because these are the facts about a group that every other part reads —
membership, static-instance ids, the chosen protocol, committed offsets, the checks a
request naming a member must pass — independent of *how* the group moves between
states. The state machine subclasses :class:`GroupMembership`; persistence
(:mod:`odradek.coordinator.group_metadata`) and describe calls read it. Sans-IO like the
rest of the coordinator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from odradek.config_sections import GroupCoordinatorConfig
from odradek.protocol.consumer_protocol import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from odradek.protocol.errors import ErrorCode
from odradek.types import TopicPartition

from .errors import (
    CoordinatorNotAvailable,
    FencedInstanceId,
    IllegalGeneration,
    InconsistentGroupProtocol,
    RebalanceInProgress,
    UnknownMemberId,
)
from .group_state import VALID_PREVIOUS_STATES, GroupState, IllegalStateTransition
from .member import Member, Protocols
from .offsets import OffsetAndMetadata
from .results import JoinResult, Reply, SyncResult

__all__ = ["GroupMembership", "MemberDescription"]


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """One member as DescribeGroups reports it (metadata and assignment only when Stable)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


class GroupMembership:
    """A classic group's members, protocol, generation and committed offsets."""

    def __init__(
        self,
        group_id: str,
        config: GroupCoordinatorConfig,
        now_ms: int,
        new_uuid: Callable[[], str],
    ) -> None:
        self.group_id = group_id
        self.config = config
        self._new_uuid = new_uuid
        self.state = GroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: dict[str, int] = {}  # MEMBER_ID_REQUIRED ids -> expiry
        self.pending_sync: set[str] = set()
        self.subscribed_topics: frozenset[str] | None = None
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        # Each committed partition's ``__consumer_offsets`` record key, encoded once: an
        # OffsetCommit writes the same keys again and again (dropped with the offset).
        self.offset_keys: dict[TopicPartition, bytes] = {}
        # Rebalance timers.
        self.join_deadline_ms: int | None = None
        self.sync_deadline_ms: int | None = None
        self._initial_join = False
        self._initial_delay_remaining_ms = 0
        self._new_member_added = False

    # ------------------------------------------------------------------ basic queries

    def __repr__(self) -> str:
        return (
            f"Group({self.group_id!r}, {self.state.value}, generation={self.generation_id}, "
            f"members={list(self.members)})"
        )

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def _transition(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateTransition(
                f"group {self.group_id}: {self.state.value} -> {target.value}"
            )
        self.state = target
        self.state_timestamp_ms = now_ms

    # ------------------------------------------------------------------ validation

    def validate_member(self, member_id: str, group_instance_id: str | None) -> Member:
        """Kafka's rule for requests naming a member: the instance id, when given, must map
        to exactly this member id (else it is a zombie: FENCED_INSTANCE_ID)."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                raise UnknownMemberId(f"unknown instance {group_instance_id}")
            if current != member_id:
                raise FencedInstanceId(f"instance {group_instance_id} is now {current}")
        member = self.members.get(member_id)
        if member is None:
            raise UnknownMemberId(f"unknown member {member_id!r} in group {self.group_id}")
        return member

    def validate_offset_commit(
        self, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> Member | None:
        """Who may commit: anyone to an Empty group with generation -1 (simple consumers
        keeping offsets in Kafka); otherwise a member of the current generation, and not
        while the group waits for its leader's assignment."""
        if self.state is GroupState.DEAD:
            raise CoordinatorNotAvailable(f"group {self.group_id} is dead")
        if generation_id < 0 and self.state is GroupState.EMPTY:
            return None
        member = None
        if generation_id >= 0 or member_id or group_instance_id is not None:
            member = self.validate_member(member_id, group_instance_id)
            if generation_id != self.generation_id:
                raise IllegalGeneration(
                    f"generation {generation_id} is not the group's {self.generation_id}"
                )
        elif self.state is not GroupState.EMPTY:
            raise UnknownMemberId("commits without a member id need an empty group")
        if self.state is GroupState.COMPLETING_REBALANCE:
            raise RebalanceInProgress(f"group {self.group_id} is rebalancing")
        return member

    def _supports_protocols(
        self, protocol_type: str, protocols: Protocols, exclude: str | None = None
    ) -> bool:
        others = [m for m in self.members.values() if m.member_id != exclude]
        names = [name for name, _ in protocols]
        if not others:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        common = self._common_protocols(others)
        return any(name in common for name in names)

    @staticmethod
    def _common_protocols(members: Sequence[Member]) -> set[str]:
        common: set[str] | None = None
        for member in members:
            names = set(member.protocol_names())
            common = names if common is None else common & names
        return common or set()

    def select_protocol(self) -> str:
        """The protocol every member supports that most members rank first among those.

        Ties (Kafka leaves them to hash order) go to the leader's preference, so the
        choice is deterministic.
        """
        members = list(self.members.values())
        candidates = self._common_protocols(members)
        if not candidates:
            raise InconsistentGroupProtocol(f"group {self.group_id} has no common protocol")
        votes = Counter(member.vote(candidates) for member in members)
        top = max(votes.values())
        winners = {name for name, count in votes.items() if count == top}
        leader = self.members.get(self.leader_id or "") or members[0]
        for name in leader.protocol_names():
            if name in winners:
                return name
        return sorted(winners)[0]

    def _accepts_joining_member(self, member_id: str) -> bool:
        """group.max.size: rejects members beyond the limit, counting as Kafka does."""
        limit = self.config.max_group_size
        if self.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        member = self.members.get(member_id)
        if self.state is GroupState.PREPARING_REBALANCE:
            awaiting = sum(1 for m in self.members.values() if m.awaiting_join)
            return (member is not None and member.awaiting_join) or awaiting < limit
        return member is not None or len(self.members) < limit

    def _compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = subscribed_topics(member.metadata_for(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return frozenset(topics)

    # ------------------------------------------------------------------ describe

    def describe_members(self) -> list[MemberDescription]:
        stable = self.state is GroupState.STABLE
        return [
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata_for(self.protocol_name) if stable else b"",
                assignment=m.assignment if stable else b"",
            )
            for m in self.members.values()
        ]

    def pending_tokens(self) -> list[Reply]:
        """Every parked request, answered NOT_COORDINATOR (used when the group is unloaded)."""
        replies = []
        for member in self.members.values():
            if member.join_token is not None:
                replies.append(Reply(member.join_token,
                                     JoinResult(ErrorCode.not_coordinator, member.member_id)))
                member.join_token = None
            if member.sync_token is not None:
                replies.append(Reply(member.sync_token, SyncResult(ErrorCode.not_coordinator)))
                member.sync_token = None
        return replies
