"""A BrokerCluster's SASL/SCRAM users: passwords from Secrets, credentials written through
the brokers (AlterUserScramCredentials), users dropped from the spec deleted.

Runs once Kafka answers; the plan is :func:`..decisions.users.plan_users`. A user whose Secret
is missing or incomplete is left as it is and reported (``Degraded``, reason
``SecretNotFound``/``SecretInvalid``): one bad Secret never blocks the other users or the
cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.client.admin import AsyncAdminClient
from odradek.client.errors import KafkaClientError

from ..decisions.users import DesiredUser, plan_users
from ..errors import TemporaryReconcileError
from ..kube.api import KubeApi
from ..spec import BrokerClusterSpec
from .secrets import read_secret

__all__ = ["UsersOutcome", "reconcile_users"]


@dataclass
class UsersOutcome:
    applied: dict[str, dict[str, str]]
    problems: list[tuple[str, str]] = field(default_factory=list)  # (reason, message)
    events: list[str] = field(default_factory=list)


async def reconcile_users(api: KubeApi, admin: AsyncAdminClient, namespace: str,
                          spec: BrokerClusterSpec, applied: Mapping[str, Any] | None
                          ) -> UsersOutcome:
    desired: list[DesiredUser] = []
    passwords: dict[str, str] = {}
    kept: list[str] = []
    problems: list[tuple[str, str]] = []
    for user in spec.authentication.users:
        try:
            secret = await read_secret(api, namespace, user.password.name,
                                       [user.password.key], f"user {user.name}")
        except TemporaryReconcileError as exc:
            problems.append((exc.reason, str(exc)))
            kept.append(user.name)
            continue
        desired.append(DesiredUser(user.name, user.mechanism, secret.resource_version))
        passwords[user.name] = secret.data[user.password.key]
    if not desired and not applied:
        return UsersOutcome({}, problems)
    try:  # every user: asking for named ones fails for a name with no credential yet
        existing = [(c.user, c.mechanism) for c in
                    await admin.describe_user_scram_credentials(None)]
    except KafkaClientError as exc:
        problems.append(("UsersNotApplied", f"cannot read the cluster's SCRAM users: {exc}"))
        return UsersOutcome(dict(applied or {}), problems)
    plan = plan_users(desired, applied, existing, kept=kept)
    if plan.empty:
        return UsersOutcome(plan.applied, problems)
    mechanisms = {u.name: u.mechanism for u in desired}
    try:
        await admin.alter_user_scram_credentials(
            upsert=[(name, mechanisms[name], passwords[name]) for name in plan.upsert],
            delete=plan.delete)
    except KafkaClientError as exc:
        problems.append(("UsersNotApplied", f"AlterUserScramCredentials failed: {exc}"))
        return UsersOutcome(dict(applied or {}), problems)
    events = []
    if plan.upsert:
        events.append(f"SCRAM credentials written for {', '.join(plan.upsert)}")
    if plan.delete:
        events.append("SCRAM credentials deleted for "
                      + ", ".join(f"{u} ({m})" for u, m in plan.delete))
    return UsersOutcome(plan.applied, problems, events)
