"""A User's access in the cluster: read what the principal has, carry out the plan, remove
it all when the User goes.

A broker without an authorizer (``authorizer.class.name`` unset) refuses the ACL calls with
SECURITY_DISABLED; credentials and quotas are still applied and the ACL part is reported as
a problem, not a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.client.admin import AsyncAdminClient
from odradek.client.errors import KafkaClientError
from odradek.security.acl import AclBinding, AclFilter

from ..decisions.user_access import (
    UserAccessPlan,
    desired_bindings,
    plan_user_access,
    principal,
)
from ..spec import UserSpec

__all__ = ["UserOutcome", "remove_user", "sync_user"]


@dataclass
class UserOutcome:
    plan: UserAccessPlan
    acls: int  # the principal's ACL bindings once synced (0: none could be written)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (reason, message)


def _exact(binding: AclBinding) -> AclFilter:
    p, e = binding.pattern, binding.entry
    return AclFilter(p.resource_type, p.name, p.pattern_type, e.principal, e.host,
                     e.operation, e.permission)


async def _acls(admin: AsyncAdminClient, user: str) -> list[AclBinding]:
    return await admin.describe_acls(AclFilter(principal=principal(user)))


async def _mechanisms(admin: AsyncAdminClient, user: str) -> set[str]:
    # Every user: asking for a named one fails when it has no credential yet.
    return {c.mechanism for c in await admin.describe_user_scram_credentials(None)
            if c.user == user}


async def sync_user(admin: AsyncAdminClient, spec: UserSpec, password: str | None,
                    password_version: str | None, applied: Mapping[str, Any] | None
                    ) -> UserOutcome:
    problems: list[tuple[str, str]] = []
    try:
        acls = await _acls(admin, spec.user_name)
    except KafkaClientError as exc:
        acls = None
        if spec.acls:
            problems.append(("AclsNotApplied", f"cannot read the principal's ACLs: {exc}"))
    plan = plan_user_access(spec, password_version, applied, acls=acls or (),
                            quotas=await admin.describe_user_quotas(spec.user_name),
                            mechanisms=await _mechanisms(admin, spec.user_name))
    if plan.write_credential or plan.delete_mechanisms:
        upsert = [(spec.user_name, spec.mechanism, password)] \
            if plan.write_credential and spec.mechanism and password else []
        await admin.alter_user_scram_credentials(
            upsert=upsert, delete=[(spec.user_name, m) for m in plan.delete_mechanisms])
    await admin.alter_user_quotas(spec.user_name, plan.quota_changes)
    if acls is not None:
        try:
            if plan.delete_acls:
                await admin.delete_acls([_exact(b) for b in plan.delete_acls])
            if plan.create_acls:
                await admin.create_acls(plan.create_acls)
        except KafkaClientError as exc:
            problems.append(("AclsNotApplied", f"ACLs not written: {exc}"))
    written = acls is not None and not problems
    return UserOutcome(plan, len(desired_bindings(spec)) if written else 0, problems)


async def remove_user(admin: AsyncAdminClient, user: str, applied: Mapping[str, Any] | None
                      ) -> list[str]:
    """Delete the principal's ACLs, the user's quotas and the credential the operator wrote;
    returns what was removed, for the Event."""
    removed: list[str] = []
    try:
        deleted = await admin.delete_acls([AclFilter(principal=principal(user))])
        if deleted:
            removed.append(f"{len(deleted)} ACL(s)")
    except KafkaClientError:
        pass  # no authorizer: there are no ACLs to remove
    quotas = await admin.describe_user_quotas(user)
    if quotas:
        await admin.alter_user_quotas(user, dict.fromkeys(quotas))
        removed.append("quotas " + ", ".join(sorted(quotas)))
    mechanism = str((applied or {}).get("mechanism") or "")
    if mechanism and mechanism in await _mechanisms(admin, user):
        await admin.alter_user_scram_credentials(delete=[(user, mechanism)])
        removed.append(f"{mechanism} credential")
    return removed
