"""The ACL decision against a straightforward model of Kafka's AclAuthorizer, and the
ZooKeeper encoding of ACLs (Kafka's spellings)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.cluster import acl_znodes
from odradek.config_security import parse_super_users, validate_authorizer
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    decide,
)

NAMES = ["orders", "orders-eu", "ord", "payments", "*"]
PRINCIPALS = ["User:alice", "User:bob", "User:*"]
HOSTS = ["*", "10.0.0.1", "10.0.0.2"]
KINDS = [ResourceType.TOPIC, ResourceType.GROUP]
OPERATIONS = [op for op in Operation if op > Operation.ANY]

bindings = st.builds(
    lambda kind, name, prefixed, principal, host, op, allow: AclBinding(
        ResourcePattern(kind, name, PatternType.PREFIXED if prefixed and name != "*"
                        else PatternType.LITERAL),
        AccessControlEntry(principal, host, op, Permission.ALLOW if allow else Permission.DENY)),
    st.sampled_from(KINDS), st.sampled_from(NAMES), st.booleans(), st.sampled_from(PRINCIPALS),
    st.sampled_from(HOSTS), st.sampled_from(OPERATIONS), st.booleans())


def model(acls: list[AclBinding], principal: str, host: str, op: Operation,
          kind: ResourceType, name: str, allow_if_none: bool) -> bool:
    """Kafka's rule written out the long way, one ACL at a time."""
    def covers(pattern: ResourcePattern) -> bool:
        if pattern.resource_type != kind:
            return False
        if pattern.pattern_type is PatternType.PREFIXED:
            return name[:len(pattern.name)] == pattern.name
        return pattern.name == name or pattern.name == "*"

    relevant = [b for b in acls if covers(b.pattern)]
    if not relevant:
        return allow_if_none
    mine = [b.entry for b in relevant
            if (b.entry.principal == principal or b.entry.principal == "User:*")
            and (b.entry.host == host or b.entry.host == "*")]
    for e in mine:
        if e.permission is Permission.DENY and (e.operation == op or e.operation == Operation.ALL):
            return False
    implied = {op}
    if op == Operation.DESCRIBE:
        implied |= {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    if op == Operation.DESCRIBE_CONFIGS:
        implied |= {Operation.ALTER_CONFIGS}
    return any(e.permission is Permission.ALLOW
               and (e.operation in implied or e.operation == Operation.ALL) for e in mine)


def table(acls: list[AclBinding]) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
    grouped: dict[ResourcePattern, set[AccessControlEntry]] = defaultdict(set)
    for binding in acls:
        grouped[binding.pattern].add(binding.entry)
    return {p: frozenset(e) for p, e in grouped.items()}


@settings(max_examples=400, deadline=None)
@given(st.lists(bindings, max_size=8), st.sampled_from(PRINCIPALS[:2]),
       st.sampled_from(HOSTS[1:]), st.sampled_from(OPERATIONS), st.sampled_from(KINDS),
       st.sampled_from(["orders", "orders-eu", "payments", "o"]), st.booleans())
def test_decide_agrees_with_the_model(acls: list[AclBinding], principal: str, host: str,
                                      op: Operation, kind: ResourceType, name: str,
                                      allow_if_none: bool) -> None:
    assert decide(table(acls), principal, host, op, kind, name,
                  allow_if_no_acl=allow_if_none) == model(acls, principal, host, op, kind,
                                                         name, allow_if_none)


def _entry(op: Operation, permission: Permission = Permission.ALLOW,
           principal: str = "User:alice", host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, permission)


def test_deny_wins_and_implications() -> None:
    topic = ResourcePattern(ResourceType.TOPIC, "orders")
    prefixed = ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED)
    acls = {topic: frozenset({_entry(Operation.READ)}),
            prefixed: frozenset({_entry(Operation.READ, Permission.DENY, "User:*")})}
    args = ("User:alice", "10.0.0.1")
    assert not decide(acls, *args, Operation.READ, ResourceType.TOPIC, "orders")
    # a DENY of READ does not deny DESCRIBE, which the READ ALLOW implies
    assert decide(acls, *args, Operation.DESCRIBE, ResourceType.TOPIC, "orders")
    assert not decide(acls, *args, Operation.WRITE, ResourceType.TOPIC, "orders")
    assert decide(acls, *args, Operation.WRITE, ResourceType.TOPIC, "orders",
                  super_user=True)
    configs = {topic: frozenset({_entry(Operation.ALTER_CONFIGS)})}
    assert decide(configs, *args, Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, "orders")
    assert not decide(configs, *args, Operation.DESCRIBE, ResourceType.TOPIC, "orders")
    # no ACL on the resource: allow.everyone.if.no.acl.found decides
    assert not decide(acls, *args, Operation.READ, ResourceType.TOPIC, "payments")
    assert decide(acls, *args, Operation.READ, ResourceType.TOPIC, "payments",
                  allow_if_no_acl=True)
    # host-specific ACLs apply only to that host
    by_host = {topic: frozenset({_entry(Operation.READ, host="10.0.0.1")})}
    assert decide(by_host, "User:alice", "10.0.0.1", Operation.READ, ResourceType.TOPIC,
                  "orders")
    assert not decide(by_host, "User:alice", "10.0.0.2", Operation.READ, ResourceType.TOPIC,
                      "orders")


def test_znode_encoding_uses_kafkas_spellings() -> None:
    entries = frozenset({_entry(Operation.DESCRIBE_CONFIGS),
                         _entry(Operation.ALL, Permission.DENY, "User:bob", "10.0.0.9")})
    data = json.loads(acl_znodes.encode_acls(entries))
    assert data["version"] == 1
    assert {"principal": "User:bob", "permissionType": "Deny", "operation": "All",
            "host": "10.0.0.9"} in data["acls"]
    assert {"principal": "User:alice", "permissionType": "Allow",
            "operation": "DescribeConfigs", "host": "*"} in data["acls"]
    assert acl_znodes.decode_acls(acl_znodes.encode_acls(entries)) == entries
    literal = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-1")
    prefixed = ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED)
    assert acl_znodes.resource_path(literal) == "/kafka-acl/TransactionalId/tx-1"
    assert acl_znodes.resource_path(prefixed) == "/kafka-acl-extended/prefixed/Topic/ord"
    assert acl_znodes.encode_change(literal) == b"TRANSACTIONAL_ID:tx-1"
    assert json.loads(acl_znodes.encode_change(prefixed)) == {
        "version": 1, "resourceType": "TOPIC", "name": "ord", "patternType": "PREFIXED"}
    for pattern in (literal, prefixed):
        change = acl_znodes.encode_change(pattern)
        assert acl_znodes.decode_change(change, pattern.pattern_type is PatternType.PREFIXED) \
            == pattern


def test_filters_match_like_kafka() -> None:
    prefixed = AclBinding(ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED),
                          _entry(Operation.READ))
    wildcard = AclBinding(ResourcePattern(ResourceType.TOPIC, "*"), _entry(Operation.WRITE))
    other = AclBinding(ResourcePattern(ResourceType.GROUP, "orders"), _entry(Operation.READ))
    match = AclFilter(ResourceType.TOPIC, "orders", PatternType.MATCH)
    assert [b for b in (prefixed, wildcard, other) if match.matches(b)] == [prefixed, wildcard]
    literal = AclFilter(ResourceType.ANY, "ord", PatternType.LITERAL)
    assert not literal.matches(prefixed)
    assert AclFilter(principal="User:alice", operation=Operation.READ).matches(other)
    with pytest.raises(ValueError):
        AclFilter(pattern_type=PatternType.UNKNOWN).validate()


def test_config_checks() -> None:
    assert parse_super_users("User:admin; User:broker;") == {"User:admin", "User:broker"}
    with pytest.raises(ValueError):
        parse_super_users("admin")
    validate_authorizer("kafka.security.authorizer.AclAuthorizer", "")
    validate_authorizer("kafka.security.auth.SimpleAclAuthorizer", "User:a")
    with pytest.raises(ValueError):
        validate_authorizer("org.example.Custom", "")
