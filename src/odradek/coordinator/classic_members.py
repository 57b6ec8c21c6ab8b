"""Classic members of a consumer group: JoinGroup, SyncGroup and Heartbeat (sans-IO).

While a group migrates, some of its members still speak the classic protocol. Kafka serves
them inside the consumer group (``classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup``) and so does
this module:

* **JoinGroup** is the classic member's heartbeat with a full subscription: the topics and
  the partitions it still owns come from the consumer protocol's subscription embedded in
  its first protocol's metadata. The member is reconciled exactly as a consumer-protocol
  member (:meth:`~odradek.coordinator.consumer_group.ConsumerGroup.advance`), and the answer
  is immediate — no group-wide barrier: generation = its member epoch, protocol = its first
  protocol, no leader, no member list (it is always a follower; the server assigns).
* **SyncGroup** hands back the member's assigned partitions as a consumer protocol
  assignment. A cooperative member then revokes what it no longer has and rejoins; an eager
  one revoked everything before its JoinGroup.
* **Heartbeat** answers REBALANCE_IN_PROGRESS when the member must rejoin: the group epoch
  moved past its member epoch, it has partitions to revoke, or partitions it waited for
  were released. From then on it has its rebalance timeout to rejoin (Kafka's join
  timeout), or it is removed.

Generations are the member epochs, so OffsetCommit from a classic member is checked like any
member's. A classic member cannot subscribe by regular expression (the classic
subscription holds topic names only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from odradek.protocol.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    MalformedConsumerProtocol,
    decode_subscription,
    encode_assignment,
)
from odradek.protocol.errors import ErrorCode, KafkaError

from .consumer_group import ClassicMetadata, ConsumerGroup, ConsumerMember
from .errors import (
    FencedInstanceId,
    GroupMaxSizeReached,
    IllegalGeneration,
    InconsistentGroupProtocol,
    InvalidSessionTimeout,
    UnknownMemberId,
)
from .member import JoinRequest
from .reconciliation import MemberState
from .results import JoinResult, SyncResult

__all__ = [
    "classic_heartbeat",
    "classic_join",
    "classic_sync",
    "leaving_members",
    "validate_classic_member",
]


def classic_join(group: ConsumerGroup, now_ms: int, request: JoinRequest, new_member_id: str,
                 topics: Mapping[str, int]) -> JoinResult:
    """A JoinGroup to a consumer group with members; ``new_member_id`` is the id a member
    joining without one gets. The result goes out once the group's records are written."""
    try:
        return _join(group, now_ms, request, new_member_id, topics)
    except KafkaError as exc:
        return JoinResult(exc.code, request.member_id)


def _join(group: ConsumerGroup, now_ms: int, request: JoinRequest, new_member_id: str,
          topics: Mapping[str, int]) -> JoinResult:
    config = group.config
    if not config.min_session_timeout_ms <= request.session_timeout_ms <= (
            config.max_session_timeout_ms):
        raise InvalidSessionTimeout(f"session timeout {request.session_timeout_ms} ms")
    member_id = request.member_id or new_member_id
    known = group.members.get(member_id)
    if known is None and len(group.members) >= config.consumer_max_size:
        raise GroupMaxSizeReached(f"The consumer group has reached its maximum capacity of "
                                  f"{config.consumer_max_size} members.")
    _check_protocols(group, request, member_id)
    if not request.member_id and request.group_instance_id is None and (
            request.require_known_member_id):
        return JoinResult(ErrorCode.member_id_required, member_id)
    try:
        subscription = decode_subscription(request.protocols[0][1])
    except MalformedConsumerProtocol as exc:
        raise InconsistentGroupProtocol(f"unreadable consumer subscription: {exc}") from exc
    member = _member(group, now_ms, request, member_id)
    names = tuple(sorted(set(subscription.topics)))
    changed = (names != member.subscribed_topic_names
               or member.subscribed_topic_regex is not None
               or (member.assignment.member_epoch == 0 and not member.assignment.owned))
    member.subscribed_topic_names, member.subscribed_topic_regex = names, None
    member.server_assignor = None
    member.rebalance_timeout_ms = request.rebalance_timeout_ms
    member.client_id, member.client_host = request.client_id, request.client_host
    member.classic = ClassicMetadata(request.session_timeout_ms, request.protocols)
    _, after = group.advance(now_ms, member, frozenset(subscription.owned_partitions),
                             topics, changed)
    return JoinResult(
        ErrorCode.none, member_id, after.member_epoch, CONSUMER_PROTOCOL_TYPE,
        request.protocols[0][0],
    )


def _check_protocols(group: ConsumerGroup, request: JoinRequest, member_id: str) -> None:
    """Kafka's ``supportsClassicProtocols``: the consumer protocol type, and a protocol
    every other classic member supports."""
    names = {name for name, _ in request.protocols}
    if request.protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
        raise InconsistentGroupProtocol("the group runs the consumer protocol type")
    for other in group.classic_members:
        if other.member_id != member_id and other.classic is not None and not (
                names & {name for name, _ in other.classic.protocols}):
            raise InconsistentGroupProtocol("no protocol in common with the group")


def _member(group: ConsumerGroup, now_ms: int, request: JoinRequest,
            member_id: str) -> ConsumerMember:
    """The joining member: known, new, or a static instance taking its old place over (a
    classic instance rejoining without its id fences the old id, as in classic groups)."""
    instance_id = request.group_instance_id
    if request.member_id:
        current = group.static_members.get(instance_id) if instance_id is not None else None
        if current is not None and current != member_id:
            raise FencedInstanceId(f"instance {instance_id} is now {current}")
        known = group.members.get(member_id)
        if known is not None:
            return known
    member = ConsumerMember(
        member_id, instance_id, None, request.client_id, request.client_host,
        request.rebalance_timeout_ms,
        session_deadline_ms=now_ms + request.session_timeout_ms,
    )
    return group.add_member(member, take_over=True)


def validate_classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None,
                            generation_id: int) -> ConsumerMember:
    """Kafka's checks of a classic member's SyncGroup, Heartbeat or OffsetCommit."""
    member = group.members.get(member_id)
    if member is None or member.classic is None:
        raise UnknownMemberId(f"Member {member_id} is not a classic member of group "
                              f"{group.group_id}.")
    if instance_id is not None and member.instance_id != instance_id:
        raise FencedInstanceId(f"instance {instance_id} is not member {member_id}")
    if generation_id != member.assignment.member_epoch:
        raise IllegalGeneration(f"generation {generation_id} is not the member epoch "
                                f"{member.assignment.member_epoch}")
    return member


def classic_sync(group: ConsumerGroup, now_ms: int, member_id: str, instance_id: str | None,
                 generation_id: int, protocol_type: str | None,
                 protocol_name: str | None) -> SyncResult:
    try:
        member = validate_classic_member(group, member_id, instance_id, generation_id)
        assert member.classic is not None
        name = member.classic.protocols[0][0]
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != name):
            raise InconsistentGroupProtocol("SyncGroup protocol differs from the member's")
    except KafkaError as exc:
        return SyncResult(exc.code)
    member.session_deadline_ms = now_ms + member.session_timeout_ms(group.config)
    return SyncResult(ErrorCode.none, encode_assignment(sorted(member.assignment.assigned)),
                      CONSUMER_PROTOCOL_TYPE, name)


def classic_heartbeat(group: ConsumerGroup, now_ms: int, member_id: str,
                      instance_id: str | None, generation_id: int) -> ErrorCode:
    try:
        member = validate_classic_member(group, member_id, instance_id, generation_id)
    except KafkaError as exc:
        return exc.code
    member.session_deadline_ms = now_ms + member.session_timeout_ms(group.config)
    state = member.assignment.state
    if (member.assignment.member_epoch < group.group_epoch
            or state is MemberState.UNREVOKED_PARTITIONS
            or (state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased(member))):
        if member.rebalance_deadline_ms is None:
            member.rebalance_deadline_ms = now_ms + member.rebalance_timeout_ms
        return ErrorCode.rebalance_in_progress
    return ErrorCode.none



def leaving_members(group: ConsumerGroup, members: Sequence[tuple[str, str | None]],
                    ) -> tuple[list[ErrorCode], list[str]]:
    """LeaveGroup in a consumer group (Kafka's ``classicGroupLeaveToConsumerGroup``): one
    error per (member id, instance id) — an empty member id names a static member, the
    admin's way of removing one — and the ids of the members found."""
    errors: list[ErrorCode] = []
    leaving: list[str] = []
    for member_id, instance_id in members:
        # By member id only a classic member can leave (Kafka's
        # throwIfMemberDoesNotUseClassicProtocol); by instance id any static member can.
        found = (group.static_members.get(instance_id or "") if not member_id
                 else member_id if member_id in group.members
                 and group.members[member_id].classic is not None else None)
        if found is None:
            errors.append(ErrorCode.unknown_member_id)
        elif instance_id is not None and group.members[found].instance_id != instance_id:
            errors.append(ErrorCode.fenced_instance_id)
        else:
            errors.append(ErrorCode.none)
            leaving.append(found)
    return errors, leaving
