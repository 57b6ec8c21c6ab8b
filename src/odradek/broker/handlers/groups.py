"""Group membership: JoinGroup (v0-v7), SyncGroup (v0-v5), Heartbeat (v0-v4), LeaveGroup
(v0-v4).

Thin translations between kio's per-version messages and the
:class:`~odradek.coordinator.GroupCoordinator`, which makes every decision. What differs by
version is handled here, once:

* JoinGroup v0 has no rebalance timeout: the session timeout serves as both, as in Kafka.
  From v4 a first join without a member id is answered MEMBER_ID_REQUIRED (KIP-394).
  ``client_host`` is shown the way Kafka's tools print it: ``/`` + the peer's address.
* SyncGroup passes protocol type/name only from v5 (older clients do not send them).
* LeaveGroup v0-v2 name a single member and carry its error at the top level; v3+ batch
  members (KIP-345) with per-member errors.
* Heartbeat, which every member sends every few seconds, is laid out directly
  (:mod:`odradek.protocol.heartbeat_response`).

Each needs READ on the group, else it is answered GROUP_AUTHORIZATION_FAILED (Kafka's rule).
JoinGroup and SyncGroup park until the rest of the group arrives; the coordinator bounds
every such wait, and the connection keeps later responses in order behind them.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.coordinator import JoinRequest
from odradek.coordinator.coordinator import LeaveAnswer
from odradek.coordinator.results import JoinResult, SyncResult
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, millis, response_module
from odradek.protocol.fetch_response import EncodedResponse
from odradek.protocol.heartbeat_response import encode_heartbeat_response
from odradek.protocol.heartbeat_response import throttle_offset as heartbeat_throttle_offset
from odradek.security.acl import Operation, ResourceType

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import (
        HeartbeatRequest,
        JoinGroupRequest,
        LeaveGroupRequest,
        SyncGroupRequest,
    )

__all__ = [
    "client_host",
    "handle_heartbeat",
    "handle_join_group",
    "handle_leave_group",
    "handle_sync_group",
]


def client_host(peer: str) -> str:
    """Kafka prints a member's host as ``/`` + its IP address (``InetAddress.toString``)."""
    host = peer.rpartition(":")[0]  # the channel formats peers as "<ip>:<port>"
    return "/" + (host or peer)


def _may_read(
    ctx: RequestContext,
    request: JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest,
) -> bool:
    return ctx.authorize(Operation.READ, ResourceType.GROUP, str(request.group_id))


_DENIED = ErrorCode.group_authorization_failed


async def handle_join_group(ctx: RequestContext, request: JoinGroupRequest) -> ResponsePayload:
    version = ctx.api_version
    session_timeout_ms = millis(request.session_timeout)
    # mypy does not narrow the kio union by ``version``: the ignores below read fields only
    # the versions past each check have.
    rebalance_timeout_ms = (
        millis(request.rebalance_timeout) if version >= 1 else session_timeout_ms  # type: ignore[union-attr]
    )
    join = JoinRequest(
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx.peer),
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in request.protocols),
        require_known_member_id=version >= 4,
    )
    if _may_read(ctx, request):
        result = await ctx.services.group_coordinator.join_group(str(request.group_id), join)
    else:
        result = JoinResult(_DENIED)
    module = response_module(ApiKey.JOIN_GROUP, version)
    protocol_name = result.protocol_name
    if version < 7 and protocol_name is None:
        protocol_name = ""  # not nullable before v7
    return build_response(
        module.JoinGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader,
        member_id=result.member_id,
        members=tuple(
            build(module.JoinGroupResponseMember, member_id=m.member_id,
                  group_instance_id=m.group_instance_id, metadata=m.metadata)
            for m in result.members
        ),
    )


async def handle_sync_group(ctx: RequestContext, request: SyncGroupRequest) -> ResponsePayload:
    version = ctx.api_version
    if not _may_read(ctx, request):
        result = SyncResult(_DENIED)
    else:
        result = await ctx.services.group_coordinator.sync_group(
            str(request.group_id),
            request.member_id,
            getattr(request, "group_instance_id", None),
            int(request.generation_id),
            {a.member_id: bytes(a.assignment) for a in request.assignments},
            getattr(request, "protocol_type", None) if version >= 5 else None,
            getattr(request, "protocol_name", None) if version >= 5 else None,
        )
    module = response_module(ApiKey.SYNC_GROUP, version)
    return build_response(
        module.SyncGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


def handle_heartbeat(ctx: RequestContext, request: HeartbeatRequest) -> EncodedResponse:
    """Laid out directly, byte-identical to kio (:mod:`odradek.protocol.heartbeat_response`)."""
    error = ctx.services.group_coordinator.heartbeat(
        str(request.group_id),
        request.member_id,
        getattr(request, "group_instance_id", None),
        int(request.generation_id),
    ) if _may_read(ctx, request) else _DENIED
    version = ctx.api_version
    frame = encode_heartbeat_response(version, ctx.header.correlation_id, error)
    offset = heartbeat_throttle_offset(version)
    return EncodedResponse([frame], (error,) if error else (),
                           throttle_at=None if offset is None else (0, offset))


def handle_leave_group(
    ctx: RequestContext, request: LeaveGroupRequest
) -> ResponsePayload | Awaitable[ResponsePayload]:
    version = ctx.api_version
    if version < 3:
        members: list[tuple[str, str | None]] = [(request.member_id, None)]  # type: ignore[union-attr]
    else:
        members = [(m.member_id, m.group_instance_id) for m in request.members]  # type: ignore[union-attr]
    if not _may_read(ctx, request):
        return _leave_response(version, members, (_DENIED, []))
    answer = ctx.services.group_coordinator.leave_group(str(request.group_id), members)
    if isinstance(answer, tuple):
        return _leave_response(version, members, answer)
    return _leave_response_later(version, members, answer)


async def _leave_response_later(version: int, members: list[tuple[str, str | None]],
                                answer: Awaitable[LeaveAnswer]) -> ResponsePayload:
    return _leave_response(version, members, await answer)


def _leave_response(version: int, members: list[tuple[str, str | None]],
                    answer: LeaveAnswer) -> ResponsePayload:
    top, errors = answer
    module = response_module(ApiKey.LEAVE_GROUP, version)
    if version < 3:
        single = top if top != ErrorCode.none else errors[0]
        return build_response(module.LeaveGroupResponse,
                              throttle_time=NO_THROTTLE, error_code=single)
    return build_response(
        module.LeaveGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=top,
        members=tuple(
            build(module.MemberResponse, member_id=member_id, group_instance_id=instance_id,
                  error_code=error)
            for (member_id, instance_id), error in zip(members, errors, strict=False)
        )
        if top == ErrorCode.none
        else (),
    )
