"""One classic consumer group: membership, generations and rebalances (sans-IO).

Everything that moves a group between states lives here; the legal transitions are the
table in :mod:`odradek.coordinator.group_state`. Every entry point takes ``now_ms`` and
returns :data:`~odradek.coordinator.results.Output` values; nothing here sleeps or awaits.
Time-driven behaviour is a set of explicit deadlines (:meth:`Group.next_deadline`) that the
caller turns into timers, then feeds back with :meth:`Group.poll`.

A :class:`Group` owns its state, generation, chosen protocol, rebalance timers, subscribed
topics and committed offsets (the :class:`~odradek.coordinator.shard.CoordinatorShard`
replays committed records into them), and a :class:`~odradek.coordinator.group_members.
Membership` (``membership``): who is in the group, with the invariants stated there. The
group decides *when* members change; the membership keeps its table consistent. Saving and
loading is :mod:`odradek.coordinator.group_metadata`. No lock: the asyncio adapter drives
each group from one thread, one request or timer at a time.

The rules follow Kafka's classic group coordinator (``GroupCoordinator.scala`` and its Java
successor), because clients depend on the exact errors:

* A JoinGroup without a member id gets a fresh id (``<client or instance id>-<uuid>``). From
  JoinGroup v4 that first answer is MEMBER_ID_REQUIRED: the id is only *pending* until the
  client rejoins with it, so a client that crashes between the two requests leaves no member
  behind that the group must wait for.
* A rebalance parks every JoinGroup until all known members have rejoined or the rebalance
  timeout (the largest of the members') passes; members that did not rejoin are removed
  (static members are kept: their instance may be restarting). The first rebalance of an
  empty group first waits ``group.initial.rebalance.delay.ms``, extended while new members
  keep arriving, so a starting fleet of consumers gets one rebalance rather than one each.
* The leader (the first member, kept across rebalances while it rejoins) receives every
  member's subscription and sends the assignment in its SyncGroup; followers' SyncGroups
  wait for it. Members that never send SyncGroup are removed after the rebalance timeout.
* Static members (``group.instance.id``) survive restarts: a known instance rejoining
  without a member id takes over its old entry (the old id is fenced with
  FENCED_INSTANCE_ID) and, in a Stable group with unchanged protocol, gets the current
  generation back without a rebalance.
* Heartbeats keep a member alive for its session timeout; members parked in JoinGroup or
  SyncGroup are alive by definition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from odradek.config_sections import GroupCoordinatorConfig
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.types import TopicPartition

from .errors import (
    CoordinatorNotAvailable,
    IllegalGeneration,
    InconsistentGroupProtocol,
    RebalanceInProgress,
    UnknownMemberId,
)
from .group_members import MemberDescription, Membership
from .group_metadata import load_group_metadata, metadata_record
from .group_state import VALID_PREVIOUS_STATES, GroupState, IllegalStateTransition
from .member import JoinRequest, Member
from .offsets import OffsetAndMetadata
from .offsets_topic_format import GroupMetadataValue
from .results import JoinMember, JoinResult, Output, Reply, StoreGroup, SyncResult

__all__ = ["UNKNOWN_MEMBER_ID", "Group", "JoinRequest", "MemberDescription"]

UNKNOWN_MEMBER_ID: Final = ""
_NONE = ErrorCode.none


class Group:
    """The membership state machine: JoinGroup, SyncGroup, heartbeats, leaves and timers."""

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
        self.membership = Membership(group_id)
        self.state = GroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
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

    def __repr__(self) -> str:
        return (
            f"Group({self.group_id!r}, {self.state.value}, generation={self.generation_id}, "
            f"members={list(self.members)})"
        )

    @property
    def members(self) -> Mapping[str, Member]:
        """The members by id, in join order (read-only; changes go through ``membership``)."""
        return self.membership.members

    def _transition(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateTransition(
                f"group {self.group_id}: {self.state.value} -> {target.value}"
            )
        self.state = target
        self.state_timestamp_ms = now_ms

    def describe_members(self) -> list[MemberDescription]:
        return self.membership.describe(self.protocol_name, stable=self.state is GroupState.STABLE)

    # ------------------------------------------------------------------ JoinGroup

    def join(self, now_ms: int, token: int, request: JoinRequest) -> list[Output]:
        """Handle a JoinGroup; its answer (now or later) is a Reply for ``token``."""
        out: list[Output] = []
        try:
            if not (
                self.config.min_session_timeout_ms
                <= request.session_timeout_ms
                <= self.config.max_session_timeout_ms
            ):
                return [_join_error(token, request.member_id, ErrorCode.invalid_session_timeout)]
            if self.state is GroupState.DEAD:
                raise CoordinatorNotAvailable(f"group {self.group_id} is dead")
            if not self.membership.accepts_joining(
                request.member_id, self.state, self.config.max_group_size
            ):
                if request.member_id in self.members:
                    self._remove_member(now_ms, self.members[request.member_id], out)
                return [
                    *out,
                    _join_error(token, request.member_id, ErrorCode.group_max_size_reached),
                ]
            if request.member_id == UNKNOWN_MEMBER_ID:
                self._join_unknown_member(now_ms, token, request, out)
            else:
                self._join_known_member(now_ms, token, request, out)
        except KafkaError as exc:
            out.append(_join_error(token, request.member_id, exc.code))
        return out

    def _join_unknown_member(
        self, now_ms: int, token: int, request: JoinRequest, out: list[Output]
    ) -> None:
        if not self.membership.supports_protocols(
            self.protocol_type, request.protocol_type, request.protocols
        ):
            raise InconsistentGroupProtocol("no protocol in common with the group")
        prefix = request.group_instance_id or request.client_id
        member_id = f"{prefix}-{self._new_uuid()}"
        if request.group_instance_id is not None:
            self._join_static_unknown(now_ms, token, member_id, request, out)
        elif request.require_known_member_id:
            self.membership.pending_members[member_id] = now_ms + request.session_timeout_ms
            out.append(Reply(token, JoinResult(ErrorCode.member_id_required, member_id)))
        else:
            self._add_member_and_rebalance(now_ms, token, member_id, request, out)

    def _join_static_unknown(
        self, now_ms: int, token: int, new_member_id: str, request: JoinRequest,
        out: list[Output],
    ) -> None:
        instance_id = request.group_instance_id
        assert instance_id is not None
        old_member_id = self.membership.static_members.get(instance_id)
        if old_member_id is None:
            self._add_member_and_rebalance(now_ms, token, new_member_id, request, out)
            return
        member = self._replace_static_member(instance_id, old_member_id, new_member_id, out)
        member.rejoin(request)
        if self.state is GroupState.STABLE:
            # A restarted static member gets its old place back without a rebalance, unless
            # its protocols would change what the group runs.
            if self.membership.select_protocol() == self.protocol_name:
                member.touch(now_ms)
                result = self._join_result_for(member, skip_assignment=True)
                out.append(
                    StoreGroup(
                        self.group_id,
                        self.generation_id,
                        metadata_record(self, now_ms),
                        (Reply(token, result),),
                    )
                )
                return
            member.join_token = token
            self._prepare_rebalance(now_ms, out)
        elif self.state is GroupState.COMPLETING_REBALANCE:
            # The leader may be assigning to the old id: start over with the new one.
            member.join_token = token
            self._prepare_rebalance(now_ms, out)
        else:
            member.join_token = token
            self._maybe_complete_join(now_ms, out)

    def _join_known_member(
        self, now_ms: int, token: int, request: JoinRequest, out: list[Output]
    ) -> None:
        member_id = request.member_id
        if member_id in self.membership.pending_members:
            if request.group_instance_id is not None:
                raise UnknownMemberId("a pending member id cannot carry an instance id")
            del self.membership.pending_members[member_id]
            self._add_member_and_rebalance(now_ms, token, member_id, request, out)
            return
        member = self.membership.validate_member(member_id, request.group_instance_id)
        if not self.membership.supports_protocols(
            self.protocol_type, request.protocol_type, request.protocols, member_id
        ):
            raise InconsistentGroupProtocol("no protocol in common with the group")
        if self.state is GroupState.PREPARING_REBALANCE:
            member.rejoin(request)
            self._park_join(member, token, out)
            self._maybe_complete_join(now_ms, out)
        elif self.state is GroupState.COMPLETING_REBALANCE:
            if member.matches(request.protocols):
                # The JoinGroup response was lost; send it again.
                out.append(Reply(token, self._join_result_for(member)))
            else:
                member.rejoin(request)
                self._park_join(member, token, out)
                self._prepare_rebalance(now_ms, out)
        elif self.state is GroupState.STABLE:
            if member_id == self.membership.leader_id or not member.matches(request.protocols):
                # The leader rejoining means it wants a new assignment (e.g. new topics).
                member.rejoin(request)
                self._park_join(member, token, out)
                self._prepare_rebalance(now_ms, out)
            else:
                member.touch(now_ms)
                out.append(Reply(token, self._join_result_for(member)))
        else:
            raise UnknownMemberId(f"group {self.group_id} is {self.state.value}")

    def _add_member_and_rebalance(
        self, now_ms: int, token: int, member_id: str, request: JoinRequest, out: list[Output]
    ) -> None:
        member = Member.joining(
            member_id, request, token, now_ms + self.config.new_member_join_timeout_ms
        )
        if self.state is GroupState.PREPARING_REBALANCE and self.generation_id == 0:
            self._new_member_added = True
        if not self.members:
            self.protocol_type = request.protocol_type
        self.membership.add(member)
        if self.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(now_ms, out)
        else:
            self._prepare_rebalance(now_ms, out)

    @staticmethod
    def _park_join(member: Member, token: int, out: list[Output]) -> None:
        """Park a JoinGroup; a JoinGroup it replaces (a client retry) is answered now."""
        if member.join_token is not None and member.join_token != token:
            out.append(
                Reply(member.join_token, JoinResult(ErrorCode.rebalance_in_progress,
                                                    member.member_id))
            )
        member.join_token = token

    def _replace_static_member(
        self, instance_id: str, old_member_id: str, new_member_id: str, out: list[Output]
    ) -> Member:
        member = self.members[old_member_id]
        if member.join_token is not None:
            out.append(
                Reply(member.join_token, JoinResult(ErrorCode.fenced_instance_id, old_member_id))
            )
            member.join_token = None
        if member.sync_token is not None:
            out.append(Reply(member.sync_token, SyncResult(ErrorCode.fenced_instance_id)))
            member.sync_token = None
        return self.membership.rename(instance_id, old_member_id, new_member_id)

    def _join_result_for(self, member: Member, skip_assignment: bool = False) -> JoinResult:
        is_leader = member.member_id == self.membership.leader_id
        members: tuple[JoinMember, ...] = ()
        if is_leader:
            members = tuple(
                JoinMember(m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
                for m in self.members.values()
            )
        return JoinResult(
            error=_NONE,
            member_id=member.member_id,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=self.membership.leader_id or "",
            members=members,
            skip_assignment=skip_assignment and is_leader,
        )

    # ------------------------------------------------------------------ rebalancing

    def _prepare_rebalance(self, now_ms: int, out: list[Output]) -> None:
        if self.state is GroupState.COMPLETING_REBALANCE:
            for member in self.members.values():
                member.assignment = b""
                if member.sync_token is not None:
                    out.append(Reply(member.sync_token,
                                     SyncResult(ErrorCode.rebalance_in_progress)))
                    member.sync_token = None
        self.membership.pending_sync.clear()
        self.sync_deadline_ms = None
        delay = self.config.initial_rebalance_delay_ms
        if self.state is GroupState.EMPTY and delay > 0:
            self._initial_join = True
            self._new_member_added = False
            self.join_deadline_ms = now_ms + delay
            self._initial_delay_remaining_ms = max(self.membership.rebalance_timeout_ms - delay, 0)
        else:
            self._initial_join = False
            self.join_deadline_ms = now_ms + self.membership.rebalance_timeout_ms
        self._transition(GroupState.PREPARING_REBALANCE, now_ms)
        self._maybe_complete_join(now_ms, out)

    def rebalance(self, now_ms: int) -> list[Output]:
        """Start a rebalance now (a group just downgraded from a consumer group)."""
        out: list[Output] = []
        self._prepare_rebalance(now_ms, out)
        return out

    def _maybe_prepare_rebalance(self, now_ms: int, out: list[Output]) -> None:
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(now_ms, out)

    def _maybe_complete_join(self, now_ms: int, out: list[Output]) -> None:
        """The rebalance ends early once everyone rejoined — but never during the initial
        delay, whose whole point is to wait for members we do not know yet."""
        if (
            self.state is GroupState.PREPARING_REBALANCE
            and not self._initial_join
            and self.membership.all_joined()
        ):
            self._complete_join(now_ms, out)

    def _complete_join(self, now_ms: int, out: list[Output]) -> None:
        for member in list(self.members.values()):
            if not member.awaiting_join and not member.is_static:
                self._remove_member(now_ms, member, out, rebalance=False)
        self.membership.choose_leader()
        self.join_deadline_ms = None
        self._initial_join = False
        self.generation_id += 1
        if not self.members:
            self.protocol_name = None
            self.subscribed_topics = None
            self._transition(GroupState.EMPTY, now_ms)
            out.append(StoreGroup(self.group_id, self.generation_id, metadata_record(self, now_ms)))
            return
        self.protocol_name = self.membership.select_protocol()
        self.subscribed_topics = self.membership.subscribed_topics(
            self.protocol_type, self.protocol_name
        )
        self._transition(GroupState.COMPLETING_REBALANCE, now_ms)
        self.membership.pending_sync = set(self.members)
        self.sync_deadline_ms = now_ms + self.membership.rebalance_timeout_ms
        for member in self.members.values():
            if member.join_token is not None:
                out.append(Reply(member.join_token, self._join_result_for(member)))
                member.join_token = None
            member.is_new = False
            member.touch(now_ms)

    # ------------------------------------------------------------------ SyncGroup

    def sync(
        self,
        now_ms: int,
        token: int,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        assignments: Mapping[str, bytes],
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> list[Output]:
        out: list[Output] = []
        try:
            if self.state is GroupState.DEAD:
                raise CoordinatorNotAvailable(f"group {self.group_id} is dead")
            member = self.membership.validate_member(member_id, group_instance_id)
            if generation_id != self.generation_id:
                raise IllegalGeneration(f"generation {generation_id} != {self.generation_id}")
            if (protocol_type is not None and protocol_type != self.protocol_type) or (
                protocol_name is not None and protocol_name != self.protocol_name
            ):
                raise InconsistentGroupProtocol("SyncGroup protocol differs from the group's")
            if self.state is GroupState.PREPARING_REBALANCE:
                raise RebalanceInProgress(f"group {self.group_id} is rebalancing")
            if self.state is GroupState.EMPTY:
                raise UnknownMemberId(f"group {self.group_id} is empty")
        except KafkaError as exc:
            return [Reply(token, SyncResult(exc.code))]
        self.membership.pending_sync.discard(member_id)
        if not self.membership.pending_sync:
            self.sync_deadline_ms = None
        if self.state is GroupState.STABLE:
            member.touch(now_ms)
            out.append(Reply(token, self._sync_result(member)))
            return out
        # CompletingRebalance: park; the leader's SyncGroup releases everyone.
        if member.sync_token is not None:
            out.append(Reply(member.sync_token, SyncResult(ErrorCode.rebalance_in_progress)))
        member.sync_token = token
        if member_id == self.membership.leader_id:
            for other in self.members.values():
                other.assignment = assignments.get(other.member_id, b"")
            self._transition(GroupState.STABLE, now_ms)
            replies = []
            for other in self.members.values():
                if other.sync_token is not None:
                    replies.append(Reply(other.sync_token, self._sync_result(other)))
                    other.sync_token = None
                other.touch(now_ms)
            out.append(
                StoreGroup(
                    self.group_id, self.generation_id, metadata_record(self, now_ms),
                    tuple(replies),
                )
            )
        return out

    def _sync_result(self, member: Member) -> SyncResult:
        return SyncResult(_NONE, member.assignment, self.protocol_type, self.protocol_name)

    def on_store_failed(self, now_ms: int, generation_id: int) -> list[Output]:
        """The metadata record of ``generation_id`` was not committed: rebalance again."""
        out: list[Output] = []
        if generation_id == self.generation_id and self.state is GroupState.STABLE:
            for member in self.members.values():
                member.assignment = b""
            self._prepare_rebalance(now_ms, out)
        return out

    # ------------------------------------------------------------------ Heartbeat / leave

    def heartbeat(
        self, now_ms: int, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        try:
            if self.state is GroupState.DEAD:
                raise CoordinatorNotAvailable(f"group {self.group_id} is dead")
            member = self.membership.validate_member(member_id, group_instance_id)
            if generation_id != self.generation_id:
                raise IllegalGeneration(f"generation {generation_id} != {self.generation_id}")
        except KafkaError as exc:
            return exc.code
        if self.state is GroupState.EMPTY:
            return ErrorCode.unknown_member_id
        member.touch(now_ms)
        if self.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return _NONE

    def leave(
        self, now_ms: int, leaving: Sequence[tuple[str, str | None]]
    ) -> tuple[list[ErrorCode], list[Output]]:
        """LeaveGroup for (member id, instance id) pairs; one error per pair.

        An empty member id with an instance id is the admin API removing a static member.
        """
        out: list[Output] = []
        errors: list[ErrorCode] = []
        if self.state is GroupState.DEAD:
            raise CoordinatorNotAvailable(f"group {self.group_id} is dead")
        for member_id, instance_id in leaving:
            try:
                if member_id == UNKNOWN_MEMBER_ID:
                    current = self.membership.static_members.get(instance_id or "")
                    if instance_id is None or current is None:
                        raise UnknownMemberId(f"no static member {instance_id!r}")
                    self._remove_member(now_ms, self.members[current], out)
                elif member_id in self.membership.pending_members:
                    del self.membership.pending_members[member_id]
                    self._maybe_complete_join(now_ms, out)
                else:
                    member = self.membership.validate_member(member_id, instance_id)
                    self._remove_member(now_ms, member, out)
                errors.append(_NONE)
            except KafkaError as exc:
                errors.append(exc.code)
        return errors, out

    def _remove_member(
        self, now_ms: int, member: Member, out: list[Output], rebalance: bool = True
    ) -> None:
        if member.join_token is not None:
            out.append(
                Reply(member.join_token, JoinResult(ErrorCode.unknown_member_id, member.member_id))
            )
            member.join_token = None
        if member.sync_token is not None:
            out.append(Reply(member.sync_token, SyncResult(ErrorCode.unknown_member_id)))
            member.sync_token = None
        self.membership.remove(member)
        if not rebalance:
            return
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(now_ms, out)
        elif self.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(now_ms, out)

    # ------------------------------------------------------------------ timers

    def next_deadline(self) -> int | None:
        # Asked after every request of the group, OffsetCommits included: a group with no
        # members (a simple committer's) answers without building anything.
        deadlines = [d for d in (self.join_deadline_ms, self.sync_deadline_ms) if d is not None]
        if self.membership.pending_members:
            deadlines += self.membership.pending_members.values()
        for member in self.members.values():
            if member.heartbeat_deadline_ms is not None:
                deadlines.append(member.heartbeat_deadline_ms)
        return min(deadlines, default=None)

    def poll(self, now_ms: int) -> list[Output]:
        """Fire every deadline at or before ``now_ms``."""
        out: list[Output] = []
        for member_id, pending_deadline in list(self.membership.pending_members.items()):
            if pending_deadline <= now_ms:
                del self.membership.pending_members[member_id]
                self._maybe_complete_join(now_ms, out)
        for member in list(self.members.values()):
            deadline = member.heartbeat_deadline_ms
            if deadline is None or deadline > now_ms or member.member_id not in self.members:
                continue
            if not member.is_new and (member.awaiting_join or member.awaiting_sync):
                member.heartbeat_deadline_ms = None  # parked requests count as liveness
            else:
                self._remove_member(now_ms, member, out)
        if self.join_deadline_ms is not None and self.join_deadline_ms <= now_ms:
            if self._initial_join and self._new_member_added and (
                self._initial_delay_remaining_ms > 0
            ):
                delay = min(self.config.initial_rebalance_delay_ms,
                            self._initial_delay_remaining_ms)
                self._initial_delay_remaining_ms -= delay
                self._new_member_added = False
                self.join_deadline_ms = now_ms + delay
            elif self.state is GroupState.PREPARING_REBALANCE:
                self._complete_join(now_ms, out)
            else:
                self.join_deadline_ms = None
        if self.sync_deadline_ms is not None and self.sync_deadline_ms <= now_ms:
            self.sync_deadline_ms = None
            late = [self.members[m] for m in self.membership.pending_sync if m in self.members]
            self.membership.pending_sync.clear()
            if self.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
                for member in late:
                    self._remove_member(now_ms, member, out, rebalance=False)
                if late:
                    self._maybe_prepare_rebalance(now_ms, out)
        return out

    # ------------------------------------------------------------------ unload / load

    def mark_dead(self, now_ms: int) -> list[Output]:
        replies: list[Output] = list(self.membership.pending_tokens())
        self._transition(GroupState.DEAD, now_ms)
        self.join_deadline_ms = self.sync_deadline_ms = None
        self.membership.pending_members.clear()
        return replies

    @classmethod
    def from_metadata(
        cls,
        group_id: str,
        value: GroupMetadataValue,
        config: GroupCoordinatorConfig,
        now_ms: int,
        new_uuid: Callable[[], str],
    ) -> Group:
        """Rebuild a group from its last metadata record (loading a partition); see
        :func:`~odradek.coordinator.group_metadata.load_group_metadata`."""
        group = cls(group_id, config, now_ms, new_uuid)
        load_group_metadata(group, value, now_ms)
        group.subscribed_topics = group.membership.subscribed_topics(
            group.protocol_type, group.protocol_name
        )
        return group


def _join_error(token: int, member_id: str, error: ErrorCode) -> Reply:
    return Reply(token, JoinResult(error, member_id))
