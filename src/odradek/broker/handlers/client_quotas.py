"""DescribeClientQuotas (v0-v1) and AlterClientQuotas (v0-v1): user and client-id quotas.

What ``kafka-configs --entity-type clients|users --alter/--describe --bootstrap-server``
sends. Quotas are stored in ZooKeeper (:mod:`odradek.cluster.client_quotas`) and every
broker applies them from its cluster view; Describe answers from this broker's view, and
Alter waits (briefly) until the view shows its write, so a Describe right after an Alter
sees it. Entity and value rules are Kafka's (:mod:`odradek.quota.entities`): unknown entity
types or keys, negative values and fractions of a byte rate are INVALID_REQUEST.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import (
    ClusterAuthorizationFailed,
    InvalidRequest,
    RequestTimedOut,
    response_error,
)
from odradek.quota.entities import (
    CLIENT_ID,
    DEFAULT,
    QUOTA_KEYS,
    USER,
    QuotaEntity,
    sanitize,
    validate_value,
)
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import (
        AlterClientQuotasRequest,
        ComponentData,
        DescribeClientQuotasRequest,
        EntryData,
        OpData,
    )

__all__ = ["handle_alter_client_quotas", "handle_describe_client_quotas"]

_EXACT, _DEFAULT, _SPECIFIED = 0, 1, 2
_VIEW_WAIT_S = 5.0

Filter = dict[str, tuple[int, str | None]]  # entity type -> (match type, sanitized name)


def _filter(components: Iterable[ComponentData]) -> Filter:
    wanted: Filter = {}
    for component in components:
        kind, match_type, match = component.entity_type, int(component.match_type), component.match
        if kind not in (USER, CLIENT_ID):
            raise InvalidRequest(f"Unsupported quota entity type {kind!r}")
        if kind in wanted:
            raise InvalidRequest(f"Duplicate {kind} filter component")
        if match_type == _EXACT and match is None:
            raise InvalidRequest(f"An exact {kind} filter needs a name")
        if match_type in (_DEFAULT, _SPECIFIED) and match is not None:
            raise InvalidRequest(f"A default or any-name {kind} filter takes no name")
        if match_type not in (_EXACT, _DEFAULT, _SPECIFIED):
            raise InvalidRequest(f"Unknown match type {match_type}")
        wanted[kind] = (match_type, sanitize(match) if match is not None else None)
    return wanted


def _matches(entity: QuotaEntity, wanted: Filter, strict: bool) -> bool:
    for kind, name in ((USER, entity.user), (CLIENT_ID, entity.client_id)):
        component = wanted.get(kind)
        if component is None:
            if strict and name is not None:
                return False
            continue
        match_type, match = component
        if name is None:
            return False
        if match_type == _EXACT and name != match:
            return False
        if match_type == _DEFAULT and name != DEFAULT:
            return False
        if match_type == _SPECIFIED and name == DEFAULT:
            return False
    return True


def _quota_values(config: Mapping[str, str]) -> list[tuple[str, float]]:
    values = []
    for key, raw in sorted(config.items()):
        if key in QUOTA_KEYS:
            with contextlib.suppress(ValueError):
                values.append((key, float(raw)))
    return values


def handle_describe_client_quotas(
    ctx: RequestContext, request: DescribeClientQuotasRequest
) -> ResponsePayload:
    module = response_module(ApiKey.DESCRIBE_CLIENT_QUOTAS, ctx.api_version)
    try:
        if not ctx.authorize(Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
            raise ClusterAuthorizationFailed
        wanted = _filter(request.components)
    except Exception as exc:
        code, message = response_error(exc, "describing client quotas")
        return build_response(module.DescribeClientQuotasResponse, throttle_time=NO_THROTTLE,
                              error_code=code, error_message=message, entries=None)
    strict = bool(request.strict)
    entries = []
    for entity, config in ctx.services.cluster.view.snapshot.client_quotas.items():
        values = _quota_values(config)
        if not values or not _matches(entity, wanted, strict):
            continue
        entries.append(build(
            module.EntryData,
            entity=tuple(build(module.EntityData, entity_type=kind, entity_name=name)
                         for kind, name in entity.to_protocol().items()),
            values=tuple(build(module.ValueData, key=key, value=value) for key, value in values),
        ))
    return build_response(module.DescribeClientQuotasResponse, throttle_time=NO_THROTTLE,
                          error_code=ErrorCode.none, error_message=None, entries=tuple(entries))


def _update(ops: Iterable[OpData], current: Mapping[str, str]) -> dict[str, str]:
    updated = dict(current)
    seen: set[str] = set()
    for op in ops:
        key = op.key
        if key in seen:
            raise InvalidRequest(f"Duplicate quota key {key}")
        seen.add(key)
        if op.remove:
            if key not in QUOTA_KEYS:
                raise InvalidRequest(f"Invalid configuration key {key}")
            updated.pop(key, None)
        else:
            updated[key] = validate_value(key, float(op.value))
    return updated


async def _alter(ctx: RequestContext, entry: EntryData, validate_only: bool) -> None:
    components: dict[str, str | None] = {}
    for part in entry.entity:
        if part.entity_type in components:
            raise InvalidRequest(f"Duplicate {part.entity_type} in a quota entity")
        components[part.entity_type] = part.entity_name
    entity = QuotaEntity.from_protocol(components)
    _update(entry.ops, {})  # validate before touching ZooKeeper
    stored = await ctx.services.cluster.alter_client_quotas(
        entity, lambda current: _update(entry.ops, current), validate_only)
    if validate_only:
        return
    with contextlib.suppress(RequestTimedOut):  # stored: every broker applies it soon
        await ctx.services.wait_for_view(
            lambda snapshot: dict(snapshot.client_quotas.get(entity, {})) == stored,
            _VIEW_WAIT_S)


async def handle_alter_client_quotas(
    ctx: RequestContext, request: AlterClientQuotasRequest
) -> ResponsePayload:
    module = response_module(ApiKey.ALTER_CLIENT_QUOTAS, ctx.api_version)
    validate_only = bool(request.validate_only)
    allowed = ctx.authorize(Operation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
    results = []
    for entry in request.entries:
        try:
            if not allowed:
                raise ClusterAuthorizationFailed
            await _alter(ctx, entry, validate_only)
            code, message = ErrorCode.none, None
        except Exception as exc:
            code, message = response_error(exc, "altering client quotas")
        results.append(build(
            module.EntryData, error_code=code, error_message=message,
            entity=tuple(build(module.EntityData, entity_type=part.entity_type,
                               entity_name=part.entity_name) for part in entry.entity)))
    return build_response(module.AlterClientQuotasResponse, throttle_time=NO_THROTTLE,
                          entries=tuple(results))
