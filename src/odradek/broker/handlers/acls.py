"""CreateAcls, DescribeAcls and DeleteAcls (v1-v3): what ``kafka-acls`` and AdminClient send.

Writes go to ZooKeeper in Kafka's layout (:mod:`odradek.cluster.acls`), one conditional
update per resource pattern, and are applied to this broker's cache before the answer, so
a DescribeAcls right after sees them; other brokers follow the change notifications.
Describe answers from the cache. Without an authorizer the three answer SECURITY_DISABLED,
as Kafka does. With one, CreateAcls and DeleteAcls need ALTER on the cluster and
DescribeAcls DESCRIBE, else every result is CLUSTER_AUTHORIZATION_FAILED (Kafka's rule).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.cluster.acls import alter_acls
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import ClusterAuthorizationFailed, response_error
from odradek.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)

from ..context import AccessPolicy, RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import (
        AclCreation,
        CreateAclsRequest,
        DeleteAclsFilter,
        DeleteAclsRequest,
        DescribeAclsRequest,
    )


__all__ = ["handle_create_acls", "handle_delete_acls", "handle_describe_acls"]


_E = TypeVar("_E", bound=enum.IntEnum)


def _enum(cls: type[_E], value: int) -> _E:
    try:
        return cls(int(value))
    except ValueError:
        return cls["UNKNOWN"]


def _binding(creation: AclCreation) -> AclBinding:
    """A binding from an AclCreation; ValueError says why Kafka would refuse it."""
    kind = _enum(ResourceType, creation.resource_type)
    pattern = ResourcePattern(kind, creation.resource_name,
                              _enum(PatternType, creation.resource_pattern_type))
    if kind is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise ValueError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    entry = AccessControlEntry(creation.principal, creation.host,
                               _enum(Operation, creation.operation),
                               _enum(Permission, creation.permission_type))
    return AclBinding(pattern, entry)


def _filter(item: DescribeAclsRequest | DeleteAclsFilter, name_field: str,
            pattern_field: str) -> AclFilter:
    acl_filter = AclFilter(
        resource_type=_enum(ResourceType, item.resource_type_filter),
        name=getattr(item, name_field),
        pattern_type=_enum(PatternType, getattr(item, pattern_field, PatternType.LITERAL)),
        principal=item.principal_filter, host=item.host_filter,
        operation=_enum(Operation, item.operation),
        permission=_enum(Permission, item.permission_type))
    acl_filter.validate()
    return acl_filter


def response(ctx: RequestContext) -> ModuleType:
    return response_module(ctx.header.api_key, ctx.api_version)


def _disabled(ctx: RequestContext) -> bool:
    return _authorizer(ctx) is None


def _refusal(ctx: RequestContext, operation: Operation) -> tuple[ErrorCode, str] | None:
    """CLUSTER_AUTHORIZATION_FAILED and its text, for a client not allowed ``operation``."""
    if ctx.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME):
        return None
    refusal = ClusterAuthorizationFailed()
    return refusal.code, str(refusal)


async def _alter(ctx: RequestContext, pattern: ResourcePattern,
                 update: Callable[..., frozenset[AccessControlEntry]]) -> None:
    """``update`` is an ACL :data:`~odradek.cluster.acls.Update`; the callers' lambdas bind
    their loop's values as defaults, hence the open parameter list."""
    cluster = ctx.services.cluster
    await cluster.session.call(alter_acls, cluster.session.client, pattern, update)


def _authorizer(ctx: RequestContext) -> AccessPolicy | None:
    return ctx.services.authorizer


async def _refreshed(ctx: RequestContext) -> None:
    authorizer = _authorizer(ctx)
    if authorizer is not None:  # called only with one (the handlers check _disabled first)
        await authorizer.cache.refresh_now()


_NO_AUTHORIZER = "No Authorizer is configured."  # Kafka's text (DescribeAcls has its own)


async def handle_create_acls(ctx: RequestContext, request: CreateAclsRequest) -> ResponsePayload:
    module = response(ctx)
    codes: list[tuple[ErrorCode, str | None]] = [(ErrorCode.none, None)] * len(request.creations)
    wanted: dict[ResourcePattern, list[tuple[int, AccessControlEntry]]] = defaultdict(list)
    refused = None if _disabled(ctx) else _refusal(ctx, Operation.ALTER)
    creations: Sequence[AclCreation] = request.creations
    for index, creation in enumerate(creations):
        if _disabled(ctx):
            codes[index] = (ErrorCode.security_disabled, _NO_AUTHORIZER)
            continue
        if refused is not None:
            codes[index] = refused
            continue
        try:
            binding = _binding(creation)
        except ValueError as exc:
            codes[index] = (ErrorCode.invalid_request, str(exc))
            continue
        wanted[binding.pattern].append((index, binding.entry))
    for pattern, items in wanted.items():
        entries = frozenset(entry for _, entry in items)
        try:
            await _alter(ctx, pattern, lambda current, add=entries: current | add)
        except Exception as exc:
            code = response_error(exc, f"CreateAcls for {pattern}")
            for index, _ in items:
                codes[index] = code
    if wanted:
        await _refreshed(ctx)
    return build_response(module.CreateAclsResponse, throttle_time=NO_THROTTLE, results=[
        build(module.AclCreationResult, error_code=code, error_message=message)
        for code, message in codes])


def _matching(ctx: RequestContext, acl_filter: AclFilter) -> list[AclBinding]:
    authorizer = _authorizer(ctx)
    table = authorizer.cache.acls if authorizer is not None else {}  # with one only
    return sorted((AclBinding(pattern, entry) for pattern, entries in table.items()
                   if acl_filter.matches_pattern(pattern)
                   for entry in entries if acl_filter.matches_entry(entry)),
                  key=_order)


def _order(binding: AclBinding) -> tuple[int | str, ...]:
    p, e = binding.pattern, binding.entry
    return (p.resource_type, p.pattern_type, p.name, e.principal, e.host, e.operation,
            e.permission)


def handle_describe_acls(ctx: RequestContext, request: DescribeAclsRequest) -> ResponsePayload:
    module = response(ctx)
    if _disabled(ctx):
        return build_response(module.DescribeAclsResponse, throttle_time=NO_THROTTLE,
                              error_code=ErrorCode.security_disabled,
                              error_message="No Authorizer is configured on the broker",
                              resources=[])
    refused = _refusal(ctx, Operation.DESCRIBE)
    if refused is not None:
        return build_response(module.DescribeAclsResponse, throttle_time=NO_THROTTLE,
                              error_code=refused[0], error_message=refused[1], resources=[])
    try:
        acl_filter = _filter(request, "resource_name_filter", "pattern_type_filter")
    except ValueError as exc:
        return build_response(module.DescribeAclsResponse, throttle_time=NO_THROTTLE,
                              error_code=ErrorCode.invalid_request, error_message=str(exc),
                              resources=[])
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
    for binding in _matching(ctx, acl_filter):
        grouped[binding.pattern].append(binding.entry)
    resources = [
        build(module.DescribeAclsResource, resource_type=int(p.resource_type),
              resource_name=p.name, pattern_type=int(p.pattern_type), acls=[
                  build(module.AclDescription, principal=e.principal, host=e.host,
                        operation=int(e.operation), permission_type=int(e.permission))
                  for e in entries])
        for p, entries in grouped.items()]
    return build_response(module.DescribeAclsResponse, throttle_time=NO_THROTTLE,
                          error_code=ErrorCode.none, error_message=None, resources=resources)


async def handle_delete_acls(ctx: RequestContext, request: DeleteAclsRequest) -> ResponsePayload:
    module = response(ctx)
    results = []
    refused = None if _disabled(ctx) else _refusal(ctx, Operation.ALTER)
    for item in request.filters:
        if _disabled(ctx):
            results.append(build(module.DeleteAclsFilterResult,
                                 error_code=ErrorCode.security_disabled,
                                 error_message=_NO_AUTHORIZER, matching_acls=[]))
            continue
        if refused is not None:
            results.append(build(module.DeleteAclsFilterResult, error_code=refused[0],
                                 error_message=refused[1], matching_acls=[]))
            continue
        try:
            acl_filter = _filter(item, "resource_name_filter", "pattern_type_filter")
        except ValueError as exc:
            results.append(build(module.DeleteAclsFilterResult,
                                 error_code=ErrorCode.invalid_request, error_message=str(exc),
                                 matching_acls=[]))
            continue
        matched = _matching(ctx, acl_filter)
        failed: dict[ResourcePattern, tuple[ErrorCode, str | None]] = {}
        for pattern in dict.fromkeys(b.pattern for b in matched):
            try:
                await _alter(ctx, pattern, lambda current, f=acl_filter: frozenset(
                    e for e in current if not f.matches_entry(e)))
            except Exception as exc:
                failed[pattern] = response_error(exc, f"DeleteAcls for {pattern}")
        results.append(build(module.DeleteAclsFilterResult, error_code=ErrorCode.none,
                             error_message=None, matching_acls=[
                                 _matching_acl(module, b, *failed.get(
                                     b.pattern, (ErrorCode.none, None))) for b in matched]))
    if not _disabled(ctx) and refused is None:
        await _refreshed(ctx)
    return build_response(module.DeleteAclsResponse,
                          throttle_time=NO_THROTTLE, filter_results=results)


def _matching_acl(module: ModuleType, binding: AclBinding, code: ErrorCode,
                  message: str | None) -> object:
    p, e = binding.pattern, binding.entry
    return build(module.DeleteAclsMatchingAcl, error_code=code, error_message=message,
                 resource_type=int(p.resource_type), resource_name=p.name,
                 pattern_type=int(p.pattern_type), principal=e.principal, host=e.host,
                 operation=int(e.operation), permission_type=int(e.permission))
