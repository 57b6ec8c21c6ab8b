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
    InvalidRegularExpression,
    UnknownMemberId,
    UnreleasedInstanceId,
    UnsupportedAssignor,
)
from .reconciliation import MemberAssignment, MemberState, Partitions, next_assignment

__all__ = [
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
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
                                request.owned, self.owners.get, member.member_id)
        self._set_assignment(member, after)
        member.session_deadline_ms = now_ms + self.config.consumer_session_timeout_ms
        if after.state is not MemberState.UNREVOKED_PARTITIONS:
            member.rebalance_deadline_ms = None
        elif before.state is not MemberState.UNREVOKED_PARTITIONS or before != after:
            member.rebalance_deadline_ms = now_ms + member.rebalance_timeout_ms
        send = (request.member_epoch == JOIN_EPOCH or after.assigned != before.assigned
                or after.member_epoch != before.member_epoch
                or (request.owned is not None and request.owned != after.assigned))
        return HeartbeatResult(
            member_id=member.member_id,
            member_epoch=after.member_epoch,
            heartbeat_interval_ms=self.config.consumer_heartbeat_interval_ms,
            assignment=after.assigned if send else None,
        )

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
        previous_id = (self.static_members.get(request.instance_id)
                       if request.instance_id is not None else None)
        if previous_id is not None:
            previous = self.members[previous_id]
            if previous.assignment.member_epoch != STATIC_LEAVE_EPOCH:
                raise UnreleasedInstanceId(
                    f"Static member {previous_id} with instance id {request.instance_id} "
                    f"is not released yet.")
            # The restarted instance takes over its old entry: same target, same partitions.
            member.subscribed_topic_names = previous.subscribed_topic_names
            member.subscribed_topic_regex = previous.subscribed_topic_regex
            member.server_assignor = previous.server_assignor
            restored = replace(previous.assignment,
                               member_epoch=previous.assignment.previous_member_epoch)
            self._remove(previous_id, bump=False)
            self.target[member.member_id] = self.target.pop(previous_id, _NO_PARTITIONS)
            self.members[member.member_id] = member
            self._set_assignment(member, restored)
        else:
            if len(self.members) >= self.config.consumer_max_size:
                raise GroupMaxSizeReached(
                    f"The consumer group has reached its maximum capacity of "
                    f"{self.config.consumer_max_size} members.")
            self.members[member.member_id] = member
        if request.instance_id is not None:
            self.static_members[request.instance_id] = member.member_id
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
            self._remove(member.member_id, bump=True)
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

    def _remove(self, member_id: str, *, bump: bool) -> None:
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

    # ------------------------------------------------------------------ time

    def next_deadline(self) -> int | None:
        deadlines = [d for m in self.members.values()
                     for d in (m.session_deadline_ms, m.rebalance_deadline_ms) if d is not None]
        return min(deadlines, default=None)

    def poll(self, now_ms: int) -> list[str]:
        """Remove members whose session expired or who did not revoke in time."""
        expired = [m.member_id for m in self.members.values()
                   if m.session_deadline_ms <= now_ms
                   or (m.rebalance_deadline_ms is not None and m.rebalance_deadline_ms <= now_ms)]
        for member_id in expired:
            self._remove(member_id, bump=True)
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
        if member_epoch > member.assignment.member_epoch:
            raise FencedMemberEpoch(f"The member epoch {member_epoch} is newer than "
                                    f"{member.assignment.member_epoch}.")
        if member_epoch == member.assignment.member_epoch:
            return set()
        since = member.assignment_epochs
        return {tp for tp in partitions if since.get(tp, member_epoch + 1) > member_epoch}


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
