"""Who is in one classic group: its members, their indexes and its leader.

A :class:`~odradek.coordinator.group.Group` owns one :class:`Membership` (composition, not a
base class). The group's state machine decides *when* a member joins, is replaced or leaves;
this module keeps the member table consistent whatever the order of those decisions, and
answers the questions about members every other part asks (is this a current member, which
protocol do they all speak, what does DescribeGroups show).

What it owns, and its invariants (kept by :meth:`Membership.add`, :meth:`~Membership.remove`,
:meth:`~Membership.rename` and :meth:`~Membership.choose_leader`, the only writers of the
member table and its indexes):

* ``members``: member id -> :class:`~odradek.coordinator.member.Member`, in join order
  (the order the leader's JoinGroup response lists them and a new leader is chosen from).
* ``static_members``: ``group.instance.id`` -> member id, for exactly the static members.
* ``leader_id``: a member's id, or None only when there is no member.
* ``pending_sync``: ids of members whose SyncGroup the rebalance still awaits (a subset of
  ``members``; the group fills and clears it, member changes keep it in step).
* ``pending_members``: ids handed out with MEMBER_ID_REQUIRED and their expiry; not members
  yet (the group adds and expires them).

No lock: the coordinator is sans-IO and its asyncio adapter drives every group from the
event loop thread, one request (or timer) at a time, so a mutation always completes before
the next one reads. The ``Member`` objects are shared with the group, which parks and
answers their tokens and moves their deadlines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from odradek.protocol.consumer_protocol import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from odradek.protocol.errors import ErrorCode

from .errors import FencedInstanceId, InconsistentGroupProtocol, UnknownMemberId
from .group_state import GroupState
from .member import Member, Protocols
from .results import JoinResult, Reply, SyncResult

__all__ = ["GroupDescription", "MemberDescription", "Membership"]


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """One member as DescribeGroups reports it (metadata and assignment only when Stable)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """One group as DescribeGroups reports it."""

    group_id: str
    error: ErrorCode
    state: str = "Dead"
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()


class Membership:
    """The members of one group, their static-instance index and the leader (the module
    docstring states the invariants and who writes what)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id  # for messages
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: dict[str, int] = {}  # MEMBER_ID_REQUIRED ids -> expiry
        self.pending_sync: set[str] = set()
        self.leader_id: str | None = None

    # ------------------------------------------------------------------ changes

    def add(self, member: Member) -> None:
        """A new member, last in join order; the first member of a group leads it."""
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id

    def remove(self, member: Member) -> None:
        """Drop ``member`` from the table and every index; a removed leader is replaced."""
        del self.members[member.member_id]
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        self.pending_sync.discard(member.member_id)
        if self.leader_id == member.member_id:
            self.choose_leader()

    def rename(self, instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """A static instance rejoined without its id: its entry moves to a new member id
        (last in join order), keeping its place as leader or awaited syncer."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        if old_member_id in self.pending_sync:
            self.pending_sync.discard(old_member_id)
            self.pending_sync.add(new_member_id)
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        return member

    def choose_leader(self) -> None:
        """Kafka's rule: the leader stays while it has rejoined; otherwise the first member
        that rejoined leads, else the first member (None when there is none). A leader that
        did not rejoin is kept when nobody did."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join:
            return
        joined = next((m.member_id for m in self.members.values() if m.awaiting_join), None)
        if joined is not None:
            self.leader_id = joined
        elif leader is None:
            self.leader_id = next(iter(self.members), None)

    # ------------------------------------------------------------------ queries

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def accepts_joining(self, member_id: str, state: GroupState, max_group_size: int) -> bool:
        """group.max.size: rejects members beyond the limit, counting as Kafka does."""
        if state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        member = self.members.get(member_id)
        if state is GroupState.PREPARING_REBALANCE:
            awaiting = sum(1 for m in self.members.values() if m.awaiting_join)
            return (member is not None and member.awaiting_join) or awaiting < max_group_size
        return member is not None or len(self.members) < max_group_size

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

    def supports_protocols(
        self,
        group_protocol_type: str | None,
        protocol_type: str,
        protocols: Protocols,
        exclude: str | None = None,
    ) -> bool:
        """Whether a member joining with ``protocols`` shares one with every other member
        (and the group's protocol type); the first member only needs to name one."""
        others = [m for m in self.members.values() if m.member_id != exclude]
        names = [name for name, _ in protocols]
        if not others:
            return bool(protocol_type) and bool(names)
        if protocol_type != group_protocol_type:
            return False
        common = _common_protocols(others)
        return any(name in common for name in names)

    def select_protocol(self) -> str:
        """The protocol every member supports that most members rank first among those.

        Ties (Kafka leaves them to hash order) go to the leader's preference, so the
        choice is deterministic.
        """
        members = list(self.members.values())
        candidates = _common_protocols(members)
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

    def subscribed_topics(
        self, protocol_type: str | None, protocol_name: str | None
    ) -> frozenset[str] | None:
        """Every topic the members subscribe to, for a group of the consumer protocol type
        (None for another type, or when one subscription cannot be read)."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = subscribed_topics(member.metadata_for(protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return frozenset(topics)

    def describe(self, protocol_name: str | None, *, stable: bool) -> list[MemberDescription]:
        return [
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata_for(protocol_name) if stable else b"",
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


def _common_protocols(members: Sequence[Member]) -> set[str]:
    common: set[str] | None = None
    for member in members:
        names = set(member.protocol_names())
        common = names if common is None else common & names
    return common or set()
