"""Group administration: DescribeGroups (v0-v5), ListGroups (v0-v5), DeleteGroups (v0-v2).

Each broker answers for the groups it coordinates (ListGroups lists only those, which is why
admin tools ask every broker). DescribeGroups members carry their raw subscription metadata
and assignment bytes, which ``kafka-consumer-groups --describe`` decodes to show who owns
which partition. ListGroups v4 filters by state names (case-insensitive, as Kafka); v5 adds
each group's type (``classic`` or ``consumer``, KIP-848) and a filter by type.

Authorization (Kafka's): a group the client may not DESCRIBE (DescribeGroups) or DELETE
(DeleteGroups) is answered GROUP_AUTHORIZATION_FAILED; ListGroups lists every group to a
client that may DESCRIBE the cluster, else only the groups it may DESCRIBE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_NAME,
    Operation,
    ResourceType,
)

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import (
        DeleteGroupsRequest,
        DescribeGroupsRequest,
        ListGroupsRequest,
    )

__all__ = ["handle_delete_groups", "handle_describe_groups", "handle_list_groups"]



def handle_describe_groups(ctx: RequestContext, request: DescribeGroupsRequest) -> ResponsePayload:
    module = response_module(ApiKey.DESCRIBE_GROUPS, ctx.api_version)
    coordinator = ctx.services.group_coordinator
    with_operations = bool(getattr(request, "include_authorized_operations", False))
    described = []
    for group_id in request.groups:
        if not ctx.authorize(Operation.DESCRIBE, ResourceType.GROUP, str(group_id)):
            described.append(build(
                module.DescribedGroup, error_code=ErrorCode.group_authorization_failed,
                group_id=group_id, group_state="", protocol_type="", protocol_data="",
                members=(), authorized_operations=AUTHORIZED_OPERATIONS_OMITTED))
            continue
        group = coordinator.describe_group(str(group_id))
        operations = AUTHORIZED_OPERATIONS_OMITTED
        if with_operations and group.error == ErrorCode.none:
            operations = ctx.authorized_operations(ResourceType.GROUP, group.group_id)
        described.append(
            build(
                module.DescribedGroup,
                error_code=group.error,
                group_id=group.group_id,
                group_state=group.state,
                protocol_type=group.protocol_type,
                protocol_data=group.protocol,
                members=tuple(
                    build(
                        module.DescribedGroupMember,
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in group.members
                ),
                authorized_operations=operations,
            )
        )
    return build_response(module.DescribeGroupsResponse, throttle_time=NO_THROTTLE,
                          groups=tuple(described))


def handle_list_groups(ctx: RequestContext, request: ListGroupsRequest) -> ResponsePayload:
    module = response_module(ApiKey.LIST_GROUPS, ctx.api_version)
    states = [str(s) for s in getattr(request, "states_filter", ()) or ()]
    types = {str(t).lower() for t in getattr(request, "types_filter", ()) or ()}
    error, listings = ctx.services.group_coordinator.list_groups(states)
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        listings = [g for g in listings
                    if ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, g.group_id)]
    if types:
        listings = [g for g in listings if g.group_type in types]
    return build_response(
        module.ListGroupsResponse,
        throttle_time=NO_THROTTLE,
        error_code=error,
        groups=tuple(
            build(module.ListedGroup, group_id=g.group_id, protocol_type=g.protocol_type,
                  group_state=g.state.value, group_type=g.group_type)
            for g in listings
        ),
    )


async def handle_delete_groups(
    ctx: RequestContext, request: DeleteGroupsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.DELETE_GROUPS, ctx.api_version)
    names = [str(name) for name in request.groups_names]
    allowed = [name for name in names
               if ctx.authorize(Operation.DELETE, ResourceType.GROUP, name)]
    results = await ctx.services.group_coordinator.delete_groups(allowed) if allowed else {}
    for name in names:
        results.setdefault(name, ErrorCode.group_authorization_failed)
    return build_response(
        module.DeleteGroupsResponse,
        throttle_time=NO_THROTTLE,
        results=tuple(
            build(module.DeletableGroupResult, group_id=name, error_code=error)
            for name, error in results.items()
        ),
    )
