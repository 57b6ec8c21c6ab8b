"""Kafka's ACL model and its authorization rule, without I/O.

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED) to an entry (principal,
host, operation, ALLOW/DENY). The codes are Kafka's wire codes (CreateAcls and friends
carry them as int8), the names Kafka's ZooKeeper spellings (``Topic``, ``Read``,
``Allow``): :mod:`odradek.cluster.acls` stores bindings exactly as Kafka's AclAuthorizer
does, so a cluster can move between the two with its ACLs.

:func:`decide` is the rule of Kafka's AclAuthorizer: a super user may do anything; a
resource no ACL matches is open only with ``allow.everyone.if.no.acl.found``; a matching
DENY wins over any ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE and an
ALLOW of ALTER_CONFIGS implies DESCRIBE_CONFIGS (denies imply nothing).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CLUSTER_NAME",
    "WILDCARD",
    "AccessControlEntry",
    "AclBinding",
    "AclFilter",
    "Operation",
    "PatternType",
    "Permission",
    "ResourcePattern",
    "ResourceType",
    "decide",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class _Named(enum.IntEnum):
    """An enum of Kafka's wire codes whose ZooKeeper/tool spelling is the name in camel
    case (``DESCRIBE_CONFIGS`` -> ``DescribeConfigs``)."""

    @property
    def spelling(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_spelling(cls, text: str) -> Self:
        """Kafka's name (``Read``), the enum form (``READ``), any case, ``_`` or ``-``."""
        key = text.replace("_", "").replace("-", "").lower()
        for member in cls:
            if member.name.replace("_", "").lower() == key:
                return member
        raise ValueError(f"unknown {cls.__name__}: {text!r}")


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class Permission(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


STORED_RESOURCE_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                         ResourceType.TRANSACTIONAL_ID, ResourceType.DELEGATION_TOKEN)

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
"""An ``authorized_operations`` field the request did not ask for (Kafka's Int.MinValue)."""

# Which operations each resource type has (Kafka's supported operations: what
# ``authorized_operations`` bit sets report).
SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DELETE,
                         Operation.ALTER, Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS,
                         Operation.ALTER_CONFIGS),
    ResourceType.GROUP: (Operation.READ, Operation.DESCRIBE, Operation.DELETE),
    ResourceType.CLUSTER: (Operation.CREATE, Operation.CLUSTER_ACTION,
                           Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS,
                           Operation.IDEMPOTENT_WRITE, Operation.ALTER, Operation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE),
}

_IMPLIED_BY: Mapping[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.DESCRIBE, Operation.READ, Operation.WRITE,
                                   Operation.DELETE, Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS,
                                           Operation.ALTER_CONFIGS}),
}


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __post_init__(self) -> None:
        if self.resource_type not in STORED_RESOURCE_TYPES:
            raise ValueError(f"resource type {self.resource_type.name} cannot have ACLs")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise ValueError(f"pattern type {self.pattern_type.name} cannot have ACLs")
        if not self.name:
            raise ValueError("a resource name must not be empty")

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this pattern covers the concrete resource ``(resource_type, name)``."""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def __post_init__(self) -> None:
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"principal {self.principal!r} is not <type>:<name>")
        if not self.host:
            raise ValueError("host must not be empty ('*' for any host)")
        if self.operation <= Operation.ANY:
            raise ValueError(f"operation {self.operation.name} cannot be stored")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise ValueError(f"permission {self.permission.name} cannot be stored")

    def applies_to(self, principal: str, host: str) -> bool:
        return (self.principal in (principal, WILDCARD_PRINCIPAL)
                and self.host in (host, WILDCARD))


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


def _matching_entries(acls: Mapping[ResourcePattern, frozenset[AccessControlEntry]],
                      resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
    """The entries of every pattern covering the resource, by lookups rather than a scan:
    the literal name, the wildcard and each prefix of the name (what Kafka's index does)."""
    entries: list[AccessControlEntry] = []
    keys = [_key(resource_type, name, PatternType.LITERAL),
            _key(resource_type, WILDCARD, PatternType.LITERAL)]
    keys.extend(_key(resource_type, name[:end], PatternType.PREFIXED)
                for end in range(1, len(name) + 1))
    for key in keys:
        found = acls.get(key)
        if found:
            entries.extend(found)
    return entries


def _key(resource_type: ResourceType, name: str, pattern_type: PatternType) -> ResourcePattern:
    """A pattern for lookups only (no validation: the hot path builds many)."""
    key = object.__new__(ResourcePattern)
    object.__setattr__(key, "resource_type", resource_type)
    object.__setattr__(key, "name", name)
    object.__setattr__(key, "pattern_type", pattern_type)
    return key


def decide(acls: Mapping[ResourcePattern, frozenset[AccessControlEntry]], principal: str,
           host: str, operation: Operation, resource_type: ResourceType, name: str, *,
           super_user: bool = False, allow_if_no_acl: bool = False) -> bool:
    """Kafka's AclAuthorizer decision for one action (see the module docstring)."""
    if super_user:
        return True
    entries = _matching_entries(acls, resource_type, name)
    if not entries:
        return allow_if_no_acl
    for entry in entries:
        if (entry.permission is Permission.DENY and entry.applies_to(principal, host)
                and entry.operation in (operation, Operation.ALL)):
            return False
    allowed = _IMPLIED_BY.get(operation, frozenset({operation}))
    return any(entry.permission is Permission.ALLOW and entry.applies_to(principal, host)
               and (entry.operation is Operation.ALL or entry.operation in allowed)
               for entry in entries)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select: None (or ANY) fields match everything;
    pattern type MATCH selects every stored pattern that would cover the named resource."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def validate(self) -> None:
        """Raise ValueError for a filter Kafka rejects (UNKNOWN anywhere)."""
        for value in (self.resource_type, self.pattern_type, self.operation, self.permission):
            if value.name == "UNKNOWN":
                raise ValueError(f"filter has an unknown {type(value).__name__}")

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type is not ResourceType.ANY and \
                pattern.resource_type != self.resource_type:
            return False
        if self.pattern_type is PatternType.MATCH:
            if self.name is None:
                return True
            if pattern.pattern_type is PatternType.PREFIXED:
                return self.name.startswith(pattern.name)
            return pattern.name in (self.name, WILDCARD)
        if self.pattern_type is not PatternType.ANY and \
                pattern.pattern_type != self.pattern_type:
            return False
        return self.name is None or pattern.name == self.name

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or entry.principal == self.principal)
                and (self.host is None or entry.host == self.host)
                and (self.operation is Operation.ANY or entry.operation == self.operation)
                and (self.permission is Permission.ANY or entry.permission == self.permission))

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)
