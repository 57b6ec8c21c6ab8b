"""Managing ACLs through a broker (CreateAcls, DescribeAcls, DeleteAcls), as ``kafka-acls``
and Kafka's AdminClient do. Bindings and filters are :mod:`odradek.security.acl`'s types."""

from __future__ import annotations

from collections.abc import Iterable

from odradek.protocol.api_versions import ApiKey
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)

from .cluster_client import ClusterClient
from .errors import raise_for_code

__all__ = ["create_acls", "delete_acls", "describe_acls"]


async def create_acls(client: ClusterClient, bindings: Iterable[AclBinding]) -> None:
    """Raises :class:`BrokerResponseError` for the first binding the broker refused."""
    bindings = list(bindings)
    creations = [{"resource_type": int(b.pattern.resource_type),
                  "resource_name": b.pattern.name,
                  "resource_pattern_type": int(b.pattern.pattern_type),
                  "principal": b.entry.principal, "host": b.entry.host,
                  "operation": int(b.entry.operation),
                  "permission_type": int(b.entry.permission)} for b in bindings]
    response = await client.send(None, ApiKey.CREATE_ACLS, {"creations": creations})
    for binding, result in zip(bindings, response.results, strict=False):
        raise_for_code(result.error_code, f"ACL {binding}", result.error_message)


def _filter_fields(acl_filter: AclFilter) -> dict[str, object]:
    return {"resource_type_filter": int(acl_filter.resource_type),
            "resource_name_filter": acl_filter.name,
            "pattern_type_filter": int(acl_filter.pattern_type),
            "principal_filter": acl_filter.principal, "host_filter": acl_filter.host,
            "operation": int(acl_filter.operation),
            "permission_type": int(acl_filter.permission)}


def _binding(kind: int, name: str, pattern: int, principal: str, host: str, operation: int,
             permission: int) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType(kind), name, PatternType(pattern)),
                      AccessControlEntry(principal, host, Operation(operation),
                                         Permission(permission)))


async def describe_acls(client: ClusterClient, acl_filter: AclFilter) -> list[AclBinding]:
    response = await client.send(None, ApiKey.DESCRIBE_ACLS, _filter_fields(acl_filter))
    raise_for_code(response.error_code, "DescribeAcls", response.error_message)
    return [_binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host,
                     a.operation, a.permission_type)
            for r in response.resources for a in r.acls]


async def delete_acls(client: ClusterClient, filters: Iterable[AclFilter]) -> list[AclBinding]:
    """Delete what the filters match; returns the deleted bindings."""
    response = await client.send(None, ApiKey.DELETE_ACLS,
                                 {"filters": [_filter_fields(f) for f in filters]})
    deleted = []
    for result in response.filter_results:
        raise_for_code(result.error_code, "DeleteAcls", result.error_message)
        for m in result.matching_acls:
            raise_for_code(m.error_code, "DeleteAcls", m.error_message)
            deleted.append(_binding(m.resource_type, m.resource_name, m.pattern_type,
                                    m.principal, m.host, m.operation, m.permission_type))
    return deleted
