"""One KIP-848 consumer group (``group.protocol=consumer``), sans-IO.

The group is driven by one request, ConsumerGroupHeartbeat, and by time. Its data, as in
Kafka's ``ConsumerGroup``:

* the **group epoch**, bumped whenever what the assignment depends on changes: a member
  joins or leaves, a subscription changes, or a subscribed topic's partitions change (which
  also covers a new topic matching a member's regular expression);
* the **target assignment** and its **assignment epoch**: recomputed by the group's
  server-side assignor (:mod:`odradek.coordinator.assignors`) whenever the group epoch is
  ahead of it;
* per member, its **current assignment** with its member epoch, previous epoch and state,
  moved towards the target one heartbeat at a time by
  :mod:`odradek.coordinator.reconciliation`, which never hands out a partition that
  another member still owns (``owners`` indexes who holds each partition).

Time is data: every member has a session deadline (``group.consumer.session.timeout.ms``
after its last heartbeat) and, while it must revoke partitions, a rebalance deadline (its
``rebalance.timeout.ms``). :meth:`ConsumerGroup.next_deadline` tells the caller when to
call :meth:`ConsumerGroup.poll`, which removes the members that missed theirs.

Static members (``group.instance.id``) leave with epoch -2 and keep their assignment for
the session timeout; a new member with the same instance id takes over that entry, while
the instance is still in use it is refused with UNRELEASED_INSTANCE_ID.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from odradek.config_sections import GroupCoordinatorConfig
from odradek.protocol.errors import ErrorCode, InvalidRequest, KafkaError
from odradek.topic_name import INTERNAL_TOPICS
from odradek.types import TopicPartition

from .assignors import ASSIGNORS, AssignmentSpec, assignor_names
from .errors import (
    FencedMemberEpoch,
    GroupMaxSizeReached,
    IllegalGeneration,
    InvalidRegularExpression,
    StaleMemberEpoch,
    UnknownMemberId,
    UnreleasedInstanceId,
    UnsupportedAssignor,
)
from .member import Protocols
from .reconciliation import MemberAssignment, MemberState, Partitions, next_assignment

__all__ = [
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
    "ClassicMetadata",
    "ConsumerGroup",
    "ConsumerGroupState",
    "ConsumerHeartbeat",
    "ConsumerMember",
    "HeartbeatResult",
    "validate_first_heartbeat",
]

JOIN_EPOCH: Final = 0
LEAVE_EPOCH: Final = -1
STATIC_LEAVE_EPOCH: Final = -2
_NO_PARTITIONS: Partitions = frozenset()


class ConsumerGroupState(enum.Enum):
    """Kafka's names, sent by ListGroups and ConsumerGroupDescribe."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeat:
    """A ConsumerGroupHeartbeat with topic ids already resolved to names. A None field did
    not change since the member's previous heartbeat."""

    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Partitions | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None  # None: unchanged, not sent


@dataclass(frozen=True, slots=True)
class ClassicMetadata:
    """What a member speaking the classic protocol (JoinGroup/SyncGroup) inside a consumer
    group also has (Kafka's ``ClassicMemberMetadata``): its JoinGroup's session timeout and
    protocols, each protocol's metadata being a ConsumerProtocolSubscription."""

    session_timeout_ms: int
    protocols: Protocols


@dataclass(eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assignment: MemberAssignment = field(default_factory=MemberAssignment)
    session_deadline_ms: int = 0
    rebalance_deadline_ms: int | None = None
    # The member epoch at which each owned partition came to this member (KIP-1251): an
    # offset commit carrying an epoch at least that old is still the owner's.
    assignment_epochs: dict[TopicPartition, int] = field(default_factory=dict)
    classic: ClassicMetadata | None = None  # None: the member speaks the consumer protocol

    def session_timeout_ms(self, config: GroupCoordinatorConfig) -> int:
        return (self.classic.session_timeout_ms if self.classic is not None
                else config.consumer_session_timeout_ms)

    def subscribed_topics(self, topics: Iterable[str]) -> frozenset[str]:
        """The existing topics this member subscribes to, by name or by its expression."""
        pattern = _compile(self.subscribed_topic_regex) if self.subscribed_topic_regex else None
        return frozenset(
            t for t in topics
            if t in self.subscribed_topic_names
            or (pattern is not None and t not in INTERNAL_TOPICS and pattern.fullmatch(t))
        )


class ConsumerGroup:
    def __init__(self, group_id: str, config: GroupCoordinatorConfig) -> None:
        self.group_id = group_id
        self.config = config
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.target: dict[str, Partitions] = {}
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.owners: dict[TopicPartition, str] = {}  # partition -> member holding it
        self.partition_counts: dict[str, int] = {}  # subscribed topics at the last epoch
        # False after a load from the log (which does not hold the counts): the first
        # heartbeat adopts them rather than bumping the epoch for an unchanged cluster.
        self.partition_counts_known = True
        self.assignors = assignor_names(config.consumer_assignors)
        self.assignor = self.assignors[0]

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            a = member.assignment
            if a.member_epoch != self.assignment_epoch or a.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(self, now_ms: int, request: ConsumerHeartbeat,
                  topics: Mapping[str, int]) -> HeartbeatResult:
        """``topics``: partition count of every topic of the cluster."""
        try:
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(request)
            member, subscription_changed = self._member_for(now_ms, request)
        except KafkaError as exc:
            return HeartbeatResult(exc.code, str(exc) or None)
        member.classic = None  # a classic member that rolled to the consumer protocol
        before, after = self.advance(now_ms, member, request.owned, topics,
                                     subscription_changed)
        send = (request.member_epoch == JOIN_EPOCH or after.assigned != before.assigned
                or after.member_epoch != before.member_epoch
                or (request.owned is not None and request.owned != after.assigned))
        return HeartbeatResult(
            member_id=member.member_id,
            member_epoch=after.member_epoch,
            heartbeat_interval_ms=self.config.consumer_heartbeat_interval_ms,
            assignment=after.assigned if send else None,
        )

    def advance(self, now_ms: int, member: ConsumerMember, owned: Partitions | None,
                topics: Mapping[str, int], subscription_changed: bool,
                ) -> tuple[MemberAssignment, MemberAssignment]:
        """One step of the protocol for ``member`` (a heartbeat, or a classic member's
        JoinGroup): bump the group epoch if what the assignment depends on changed, compute
        the target if it is behind, move the member towards it; (before, after)."""
        counts = self._subscribed_partition_counts(topics)
        if not self.partition_counts_known:
            self.partition_counts, self.partition_counts_known = counts, True
        if subscription_changed or counts != self.partition_counts:
            self.group_epoch += 1
            self.partition_counts = counts
        if self.group_epoch > self.assignment_epoch:
            self._compute_target()
        before = member.assignment
        after = next_assignment(before, self.assignment_epoch,
                                self.target.get(member.member_id, _NO_PARTITIONS),
                                owned, self.owners.get, member.member_id)
        self._set_assignment(member, after)
        member.session_deadline_ms = now_ms + member.session_timeout_ms(self.config)
        if after.state is not MemberState.UNREVOKED_PARTITIONS:
            member.rebalance_deadline_ms = None
        elif before.state is not MemberState.UNREVOKED_PARTITIONS or before != after:
            member.rebalance_deadline_ms = now_ms + member.rebalance_timeout_ms
        return before, after

    def waiting_on_unreleased(self, member: ConsumerMember) -> bool:
        """Whether a partition of the member's target is still held by another member."""
        target = self.target.get(member.member_id, _NO_PARTITIONS)
        return any(self.owners.get(tp, member.member_id) != member.member_id
                   for tp in target - member.assignment.assigned)

    @property
    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def _member_for(self, now_ms: int,
                    request: ConsumerHeartbeat) -> tuple[ConsumerMember, bool]:
        """The member the heartbeat is from (created or taken over on a join), after the
        epoch checks; and whether its subscription changed."""
        if request.server_assignor is not None and request.server_assignor not in self.assignors:
            raise UnsupportedAssignor(
                f"ServerAssignor {request.server_assignor} is not supported. Supported "
                f"assignors: {', '.join(self.assignors)}.")
        if request.subscribed_topic_regex:
            _check_regex(request.subscribed_topic_regex)
        member = self.members.get(request.member_id)
        if request.member_epoch == JOIN_EPOCH:
            if member is None:
                member = self._join(now_ms, request)
        elif member is None:
            raise UnknownMemberId(f"Member {request.member_id} is not a member of group "
                                  f"{self.group_id}.")
        else:
            _check_epoch(member, request)
        return member, self._update_subscription(member, request)

    def _join(self, now_ms: int, request: ConsumerHeartbeat) -> ConsumerMember:
        member = ConsumerMember(
            request.member_id, request.instance_id, request.rack_id, request.client_id,
            request.client_host, request.rebalance_timeout_ms,
            session_deadline_ms=now_ms + self.config.consumer_session_timeout_ms,
        )
        return self.add_member(member)

    def add_member(self, member: ConsumerMember, *, take_over: bool = False) -> ConsumerMember:
        """A joining member, or the static member it replaces (then with that one's place).
        ``take_over``: a classic static member replaces its instance's entry even while that
        one is in use (the classic protocol fences the old id instead of refusing).

        :raises UnreleasedInstanceId: the static instance is still in use.
        :raises GroupMaxSizeReached: ``group.consumer.max.size`` members already.
        """
        previous_id = (self.static_members.get(member.instance_id)
                       if member.instance_id is not None else None)
        if previous_id is not None:
            previous = self.members[previous_id]
            left = previous.assignment.member_epoch == STATIC_LEAVE_EPOCH
            if not left and not take_over:
                raise UnreleasedInstanceId(
                    f"Static member {previous_id} with instance id {member.instance_id} "
                    f"is not released yet.")
            # The restarted instance takes over its old entry: same target, same partitions.
            member.subscribed_topic_names = previous.subscribed_topic_names
            member.subscribed_topic_regex = previous.subscribed_topic_regex
            member.server_assignor = previous.server_assignor
            restored = (replace(previous.assignment,
                                member_epoch=previous.assignment.previous_member_epoch)
                        if left else previous.assignment)
            self.remove(previous_id, bump=False)
            self.target[member.member_id] = self.target.pop(previous_id, _NO_PARTITIONS)
            self.members[member.member_id] = member
            self._set_assignment(member, restored)
        else:
            if len(self.members) >= self.config.consumer_max_size:
                raise GroupMaxSizeReached(
                    f"The consumer group has reached its maximum capacity of "
                    f"{self.config.consumer_max_size} members.")
            self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        return member

    def _update_subscription(self, member: ConsumerMember, request: ConsumerHeartbeat) -> bool:
        changed = member.assignment.member_epoch == JOIN_EPOCH and not member.assignment.owned
        if request.rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        names = request.subscribed_topic_names
        if names is not None and tuple(sorted(names)) != member.subscribed_topic_names:
            member.subscribed_topic_names = tuple(sorted(names))
            changed = True
        regex = request.subscribed_topic_regex
        if regex is not None and (regex or None) != member.subscribed_topic_regex:
            member.subscribed_topic_regex = regex or None
            changed = True
        assignor = request.server_assignor
        if assignor is not None and assignor != member.server_assignor:
            member.server_assignor = assignor
            changed = True
        return changed

    def _leave(self, request: ConsumerHeartbeat) -> HeartbeatResult:
        member = self.members.get(request.member_id)
        if member is None:
            raise UnknownMemberId(f"Member {request.member_id} is not a member of group "
                                  f"{self.group_id}.")
        if request.member_epoch == STATIC_LEAVE_EPOCH and member.instance_id is not None:
            # The instance will be back: keep its partitions for the session timeout.
            member.assignment = replace(
                member.assignment, member_epoch=STATIC_LEAVE_EPOCH,
                previous_member_epoch=member.assignment.member_epoch)
            member.rebalance_deadline_ms = None
        else:
            self.remove(member.member_id, bump=True)
        return HeartbeatResult(member_id=member.member_id, member_epoch=request.member_epoch)

    # ------------------------------------------------------------------ assignment

    def _subscribed_partition_counts(self, topics: Mapping[str, int]) -> dict[str, int]:
        subscribed: set[str] = set()
        for member in self.members.values():
            subscribed |= member.subscribed_topics(topics)
        return {t: topics[t] for t in sorted(subscribed)}

    def _compute_target(self) -> None:
        votes = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        if votes:
            self.assignor = max(sorted(votes), key=lambda name: votes[name])
        spec = AssignmentSpec(
            {m.member_id: m.subscribed_topics(self.partition_counts)
             for m in self.members.values()},
            self.partition_counts,
            self.target,
        )
        self.target = ASSIGNORS[self.assignor](spec)
        self.assignment_epoch = self.group_epoch

    def _set_assignment(self, member: ConsumerMember, assignment: MemberAssignment) -> None:
        """Replace a member's assignment and the partition index with it. Giving a member a
        partition someone else holds is a bug in reconciliation: fail loudly."""
        for tp in member.assignment.owned - assignment.owned:
            if self.owners.get(tp) == member.member_id:
                del self.owners[tp]
        for tp in assignment.owned - member.assignment.owned:
            holder = self.owners.setdefault(tp, member.member_id)
            if holder != member.member_id:
                raise AssertionError(f"{tp} given to {member.member_id} while {holder} owns it")
        epochs = member.assignment_epochs
        for tp in set(epochs) - assignment.owned:
            del epochs[tp]
        for tp in assignment.owned - set(epochs):
            epochs[tp] = assignment.member_epoch
        member.assignment = assignment

    def remove(self, member_id: str, *, bump: bool) -> None:
        member = self.members.pop(member_id)
        for tp in member.assignment.owned:
            if self.owners.get(tp) == member_id:
                del self.owners[tp]
        if member.instance_id is not None and self.static_members.get(
                member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        if bump:
            self.target.pop(member_id, None)
            self.group_epoch += 1

    def rebuild_indexes(self) -> None:
        """Derive from the members what they do not hold themselves: who owns each
        partition, the static members, and since when each partition is owned (unknown
        after a load or a conversion: the member's epoch, the safe newest one)."""
        self.owners = {tp: m.member_id for m in self.members.values()
                       for tp in m.assignment.owned}
        self.static_members = {m.instance_id: m.member_id for m in self.members.values()
                               if m.instance_id is not None}
        for member in self.members.values():
            member.assignment_epochs = dict.fromkeys(member.assignment.owned,
                                                     member.assignment.member_epoch)

    # ------------------------------------------------------------------ time

    def next_deadline(self) -> int | None:
        deadlines = [d for m in self.members.values()
                     for d in (m.session_deadline_ms, m.rebalance_deadline_ms) if d is not None]
        return min(deadlines, default=None)

    def expired(self, now_ms: int) -> list[str]:
        """Members whose session expired or who did not revoke (or rejoin) in time."""
        return [m.member_id for m in self.members.values()
                if m.session_deadline_ms <= now_ms
                or (m.rebalance_deadline_ms is not None and m.rebalance_deadline_ms <= now_ms)]

    def poll(self, now_ms: int) -> list[str]:
        """Remove the :meth:`expired` members."""
        expired = self.expired(now_ms)
        for member_id in expired:
            self.remove(member_id, bump=True)
        return expired

    # ------------------------------------------------------------------ offsets

    def validate_offset_commit(self, member_id: str, member_epoch: int,
                               partitions: Iterable[TopicPartition]) -> set[TopicPartition]:
        """OffsetCommit from a member (Kafka's rules for consumer groups, with KIP-1251's
        assignment epochs); the partitions refused as STALE_MEMBER_EPOCH. An admin commit
        (no member, epoch -1) is allowed only while the group is empty; a newer epoch than
        the member's is a fenced zombie's; an older one is accepted for the partitions the
        member has owned since that epoch (a commit racing the heartbeat that moved the
        member on), and refused for the rest."""
        if not member_id and member_epoch < 0:
            if self.members:
                raise UnknownMemberId(f"group {self.group_id} is not empty")
            return set()
        member = self.members.get(member_id)
        if member is None:
            raise UnknownMemberId(f"Member {member_id} is not a member of group "
                                  f"{self.group_id}.")
        if member.classic is not None and member_epoch != member.assignment.member_epoch:
            # A classic client knows generations only (Kafka: ILLEGAL_GENERATION, it rejoins).
            raise IllegalGeneration(f"The generation {member_epoch} is not the member epoch "
                                    f"{member.assignment.member_epoch}.")
        if member_epoch > member.assignment.member_epoch:
            raise FencedMemberEpoch(f"The member epoch {member_epoch} is newer than "
                                    f"{member.assignment.member_epoch}.")
        if member_epoch == member.assignment.member_epoch:
            return set()
        since = member.assignment_epochs
        return {tp for tp in partitions if since.get(tp, member_epoch + 1) > member_epoch}

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """OffsetFetch v9+ (Kafka's ``ConsumerGroup.validateOffsetFetch``): a request with no
        member (an admin, or a client outside the group) reads freely; a member must be
        one of the group and send its current epoch exactly, else STALE_MEMBER_EPOCH makes
        it refresh its epoch before trusting what it reads."""
        if member_id is None and member_epoch < 0:
            return
        member = self.members.get(member_id or "")
        if member is None:
            raise UnknownMemberId(f"Member {member_id} is not a member of group "
                                  f"{self.group_id}.")
        if member_epoch != member.assignment.member_epoch:
            raise StaleMemberEpoch(f"The received member epoch {member_epoch} does not match "
                                   f"the expected member epoch "
                                   f"{member.assignment.member_epoch}.")


def _check_epoch(member: ConsumerMember, request: ConsumerHeartbeat) -> None:
    """Kafka's ``throwIfMemberEpochIsInvalid``: a member one epoch behind is accepted when it
    only missed our last answer (it owns no more than it was assigned)."""
    current = member.assignment
    if request.member_epoch > current.member_epoch:
        raise FencedMemberEpoch(f"The consumer group member has a greater member epoch "
                                f"({request.member_epoch}) than the one known by the group "
                                f"coordinator ({current.member_epoch}). The member must "
                                f"abandon all its partitions and rejoin.")
    if request.member_epoch < current.member_epoch and (
        request.member_epoch != current.previous_member_epoch
        or request.owned is None or not request.owned <= current.assigned
    ):
        raise FencedMemberEpoch(f"The consumer group member has a smaller member epoch "
                                f"({request.member_epoch}) than the one known by the group "
                                f"coordinator ({current.member_epoch}). The member must "
                                f"abandon all its partitions and rejoin.")


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def _compile(regex: str) -> re.Pattern[str]:
    pattern = _REGEX_CACHE.get(regex)
    if pattern is None:
        if len(_REGEX_CACHE) > 1000:
            _REGEX_CACHE.clear()
        pattern = _REGEX_CACHE[regex] = re.compile(regex)
    return pattern


def _check_regex(regex: str) -> None:
    try:
        _compile(regex)
    except re.error as exc:
        raise InvalidRegularExpression(f"SubscribedTopicRegex {regex} is invalid: {exc}") from exc


def validate_first_heartbeat(request: ConsumerHeartbeat) -> None:
    """INVALID_REQUEST for heartbeats Kafka refuses before looking at the group."""
    if not request.member_id:
        raise InvalidRequest("MemberId can't be empty.")
    if request.member_epoch == JOIN_EPOCH:
        if request.rebalance_timeout_ms < 0:
            raise InvalidRequest("RebalanceTimeoutMs must be provided in first request.")
        if request.owned:
            raise InvalidRequest("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise InvalidRequest(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif request.member_epoch == STATIC_LEAVE_EPOCH and request.instance_id is None:
        raise InvalidRequest("InstanceId can't be null.")
    elif request.member_epoch < STATIC_LEAVE_EPOCH:
        raise InvalidRequest(f"MemberEpoch {request.member_epoch} is invalid.")
