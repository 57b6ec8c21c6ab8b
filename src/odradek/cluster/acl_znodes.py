"""Where and how ACLs sit in ZooKeeper: Kafka's AclAuthorizer layout, as pure functions.

* literal patterns: ``/kafka-acl/<ResourceType>/<name>``; prefixed patterns:
  ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``; each znode's data is
  ``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
  "operation":"Read","host":"*"}]}``.
* every change appends a sequential notification naming the resource:
  ``/kafka-acl-changes/acl_changes_<seq>`` (data ``TOPIC:orders``) for literal patterns,
  ``/kafka-acl-extended-changes/acl_changes_<seq>`` (data ``{"version":1,
  "resourceType":"TOPIC","name":"orders","patternType":"PREFIXED"}``) for prefixed ones:
  the Java enum names here, where the paths use ``Topic``; both are read in any case.
  Brokers (Kafka's and odradek's) watch both and re-read the named resource.
"""

from __future__ import annotations

import json
from typing import Any

from odradek.security.acl import (
    AccessControlEntry,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)

__all__ = [
    "CHANGE_PREFIX",
    "EXTENDED_CHANGES",
    "EXTENDED_ROOT",
    "LITERAL_CHANGES",
    "LITERAL_ROOT",
    "changes_dir",
    "decode_acls",
    "decode_change",
    "encode_acls",
    "encode_change",
    "resource_path",
]

LITERAL_ROOT = "/kafka-acl"
EXTENDED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"


def root_of(pattern_type: PatternType) -> str:
    return LITERAL_ROOT if pattern_type is PatternType.LITERAL else EXTENDED_ROOT


def resource_path(pattern: ResourcePattern) -> str:
    return f"{root_of(pattern.pattern_type)}/{pattern.resource_type.spelling}/{pattern.name}"


def changes_dir(pattern: ResourcePattern) -> str:
    return LITERAL_CHANGES if pattern.pattern_type is PatternType.LITERAL else EXTENDED_CHANGES


def encode_acls(entries: set[AccessControlEntry] | frozenset[AccessControlEntry]) -> bytes:
    acls = [{"principal": e.principal, "permissionType": e.permission.spelling,
             "operation": e.operation.spelling, "host": e.host}
            for e in sorted(entries, key=lambda e: (e.principal, e.host, e.operation,
                                                    e.permission))]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acls(data: bytes | None) -> frozenset[AccessControlEntry]:
    """The entries of a resource znode; raises ValueError for data Kafka would not write."""
    if not data:
        return frozenset()
    document: Any = json.loads(data)
    entries = set()
    for item in document.get("acls", ()):
        entries.add(AccessControlEntry(
            principal=str(item["principal"]),
            host=str(item["host"]),
            operation=Operation.from_spelling(str(item["operation"])),
            permission=Permission.from_spelling(str(item["permissionType"])),
        ))
    return frozenset(entries)


def encode_change(pattern: ResourcePattern) -> bytes:
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    return json.dumps({"version": 1, "resourceType": pattern.resource_type.name,
                       "name": pattern.name, "patternType": pattern.pattern_type.name},
                      separators=(",", ":")).encode()


def decode_change(data: bytes, extended: bool) -> ResourcePattern:
    """The resource a notification names; raises ValueError (or KeyError) when unreadable."""
    text = data.decode()
    if not extended:
        kind, _, name = text.partition(":")
        return ResourcePattern(ResourceType.from_spelling(kind), name)
    document = json.loads(text)
    return ResourcePattern(
        ResourceType.from_spelling(document["resourceType"]),
        document["name"],
        PatternType.from_spelling(document["patternType"]),
    )
