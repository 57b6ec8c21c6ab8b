"""What to write so a Kafka user matches its User resource (pure).

The User resource owns its principal ``User:<name>`` completely, as Strimzi's User Operator
owns a KafkaUser's: every ACL of that principal that the spec does not list is deleted, and
every user-level client quota the spec does not set is removed — so an ACL granted by hand
with ``kafka-acls`` is drift, repaired on the next sync. SCRAM credentials are the exception:
only the mechanism the operator wrote (recorded in status as ``applied``) is ever deleted, so a
credential made with ``kafka-configs`` before the resource existed survives a spec without
``authentication``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)

from ..spec import UserSpec

__all__ = ["UserAccessPlan", "desired_bindings", "plan_user_access", "principal"]


def principal(user_name: str) -> str:
    return f"User:{user_name}"


def desired_bindings(spec: UserSpec) -> frozenset[AclBinding]:
    """One binding per (rule, operation) for the user's principal."""
    who = principal(spec.user_name)
    return frozenset(
        AclBinding(ResourcePattern(ResourceType.from_spelling(rule.resource_type), rule.name,
                                   PatternType.from_spelling(rule.pattern_type)),
                   AccessControlEntry(who, rule.host, Operation.from_spelling(operation),
                                      Permission.ALLOW if rule.allow else Permission.DENY))
        for rule in spec.acls for operation in rule.operations)


@dataclass(frozen=True)
class UserAccessPlan:
    create_acls: tuple[AclBinding, ...] = ()
    delete_acls: tuple[AclBinding, ...] = ()
    quota_changes: dict[str, float | None] = field(default_factory=dict)  # None: remove
    write_credential: bool = False
    delete_mechanisms: tuple[str, ...] = ()
    #: The status record once carried out: the mechanism written and its password's version.
    applied: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.create_acls or self.delete_acls or self.quota_changes
                    or self.write_credential or self.delete_mechanisms)


def _sorted(bindings: Iterable[AclBinding]) -> tuple[AclBinding, ...]:
    return tuple(sorted(bindings, key=str))


def plan_user_access(spec: UserSpec, password_version: str | None,
                     applied: Mapping[str, Any] | None, *, acls: Iterable[AclBinding],
                     quotas: Mapping[str, float], mechanisms: Iterable[str]) -> UserAccessPlan:
    """``acls``, ``quotas``, ``mechanisms``: what the cluster has for the user now;
    ``password_version``: the resourceVersion of the Secret the password comes from."""
    wanted, have = desired_bindings(spec), frozenset(acls)
    changes: dict[str, float | None] = {
        key: value for key, value in spec.quotas.items() if quotas.get(key) != value}
    changes.update({key: None for key in quotas if key not in spec.quotas})
    before = {str(k): str(v) for k, v in (applied or {}).items()}
    existing = set(mechanisms)
    record: dict[str, str] = {}
    write = False
    if spec.mechanism is not None:
        record = {"mechanism": spec.mechanism, "secretVersion": password_version or ""}
        write = before != record or spec.mechanism not in existing
    old = before.get("mechanism")
    delete = (old,) if old and old != spec.mechanism and old in existing else ()
    return UserAccessPlan(_sorted(wanted - have), _sorted(have - wanted), changes, write,
                          delete, record)
