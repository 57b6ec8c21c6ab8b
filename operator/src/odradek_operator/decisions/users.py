"""Which SCRAM credentials to write or delete so the cluster's users match the spec (pure).

The operator owns only the users it wrote: ``applied`` (kept in status) records each one's
mechanism and the resourceVersion of the Secret its password came from. A user is upserted
when it is new, its Secret changed, its mechanism changed, or its credential is gone from the
cluster (deleted behind the operator's back); a user dropped from the spec is deleted.
Users someone else created (``odradek users``, ``kafka-configs``) are never touched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DesiredUser", "UserPlan", "plan_users"]


@dataclass(frozen=True)
class DesiredUser:
    name: str
    mechanism: str
    secret_version: str


@dataclass(frozen=True)
class UserPlan:
    upsert: tuple[str, ...] = ()  # user names whose credential to write
    delete: tuple[tuple[str, str], ...] = ()  # (user, mechanism)
    #: The status record after the plan is carried out.
    applied: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.upsert and not self.delete


def plan_users(desired: Iterable[DesiredUser], applied: Mapping[str, Any] | None,
               existing: Iterable[tuple[str, str]], *, kept: Iterable[str] = ()) -> UserPlan:
    """``existing``: the (user, mechanism) credentials the cluster has now; ``kept``: users
    still in the spec whose Secret cannot be read: left as they are, neither written nor
    deleted."""
    applied = {str(k): dict(v) for k, v in (applied or {}).items() if isinstance(v, Mapping)}
    have = set(existing)
    kept_names = set(kept)
    upsert: list[str] = []
    delete: list[tuple[str, str]] = []
    record: dict[str, dict[str, str]] = {}
    wanted = {user.name: user for user in desired}
    for user in sorted(wanted.values(), key=lambda u: u.name):
        before = applied.get(user.name) or {}
        entry = {"mechanism": user.mechanism, "secretVersion": user.secret_version}
        if before != entry or (user.name, user.mechanism) not in have:
            upsert.append(user.name)
        old_mechanism = before.get("mechanism")
        if old_mechanism and old_mechanism != user.mechanism \
                and (user.name, old_mechanism) in have:
            delete.append((user.name, old_mechanism))
        record[user.name] = entry
    for name in sorted(set(applied) - set(wanted)):
        if name in kept_names:
            record[name] = applied[name]
            continue
        mechanism = applied[name].get("mechanism")
        if mechanism and (name, mechanism) in have:
            delete.append((name, mechanism))
    return UserPlan(tuple(upsert), tuple(delete), record)
