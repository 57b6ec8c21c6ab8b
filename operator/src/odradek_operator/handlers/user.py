"""User: a Kafka user as a resource (Strimzi: KafkaUser) — SCRAM credentials, the ACLs of its
principal and its client quotas.

The password comes from ``spec.authentication.password.valueFrom.secretKeyRef``, or is
generated once into a Secret named after the resource (keys ``password`` and
``sasl.jaas.config``, owned by the User so it goes with it); a Secret of that name that this
User did not create is never overwritten. Rotating means changing the referenced Secret (or
deleting the generated one): its new resourceVersion rewrites the credential.

Triggers: create/update/resume, and a timer that repairs drift (an ACL granted or a quota set
by hand for this principal is removed; a deleted credential is rewritten). Deletion, through
kopf's finalizer, removes the principal's ACLs, the user's quotas and the credential the
operator wrote. The plan is :mod:`..decisions.user_access`.
"""

from __future__ import annotations

import secrets
from typing import Any

import kopf

from ..conditions import DEGRADED, READY, Condition
from ..decisions.user_access import principal
from ..errors import ClusterUnreachable, PermanentReconcileError, TemporaryReconcileError
from ..kafka.session import admin_session
from ..kafka.user_access import UserOutcome, remove_user, sync_user
from ..kube.api import KubeApi
from ..manifests.common import API_GROUP, CRD_VERSION, MANAGED_BY, Owner
from ..runtime import kube
from ..spec import UserSpec
from .common import ReconcileResult, reconcile_guarded, resolve_access, sync_time
from .secrets import SecretData, read_secret, secret_values

__all__ = ["SYNC_INTERVAL_S", "password_secret", "user_password", "user_result"]

GROUP, VERSION, PLURAL = API_GROUP, CRD_VERSION, "users"
SYNC_INTERVAL_S = 60.0


def password_secret(name: str, namespace: str, uid: str, user: str, password: str
                    ) -> dict[str, Any]:
    """The generated password's Secret: what clients mount (``sasl.jaas.config`` ready for a
    Java client, ``password`` for the others)."""
    jaas = ("org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";')
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": MANAGED_BY,
                                    "odradek.dev/user": name},
                         "ownerReferences": [Owner(name, namespace, uid, "User").reference()]},
            "stringData": {"password": password, "sasl.jaas.config": jaas}}


async def user_password(api: KubeApi, namespace: str, name: str, uid: str, spec: UserSpec
                        ) -> SecretData:
    """The password and its Secret's version: referenced, or generated once."""
    what = f"user {spec.user_name}"
    if spec.password_ref is not None:
        secret_name, key = spec.password_ref
        found = await read_secret(api, namespace, secret_name, [key], what)
        return SecretData(found.name, {"password": found.data[key]}, found.resource_version)
    existing = await api.get("Secret", namespace, name)
    if existing is not None:
        owners = [o.get("uid") for o in existing["metadata"].get("ownerReferences") or ()]
        if uid not in owners:
            raise PermanentReconcileError(
                f"Secret {namespace}/{name} exists and was not generated for this User; "
                "reference it with spec.authentication.password.valueFrom.secretKeyRef or "
                "delete it", reason="SecretConflict")
        try:
            return secret_values(existing, name, namespace, ["password"], what)
        except TemporaryReconcileError:
            pass  # emptied by hand: generate a new password
    created = await api.apply(password_secret(name, namespace, uid, spec.user_name,
                                              secrets.token_urlsafe(24)))
    return secret_values(created, name, namespace, ["password"], what)


def user_result(spec: UserSpec, outcome: UserOutcome, secret: str | None) -> ReconcileResult:
    """Status, conditions and Events for one sync (pure)."""
    plan = outcome.plan
    result = ReconcileResult({"username": spec.user_name, "principal": principal(spec.user_name),
                              "secret": secret, "acls": outcome.acls,
                              "applied": plan.applied, "lastSyncTime": sync_time()})
    changed = []
    if plan.write_credential:
        changed.append(f"{spec.mechanism} credential written")
    if plan.delete_mechanisms:
        changed.append(f"{', '.join(plan.delete_mechanisms)} credential deleted")
    if plan.create_acls or plan.delete_acls:
        changed.append(f"ACLs: {len(plan.create_acls)} added, {len(plan.delete_acls)} removed")
    if plan.quota_changes:
        changed.append("quotas: " + ", ".join(
            f"{k}={'removed' if v is None else f'{v:g}'}"
            for k, v in sorted(plan.quota_changes.items())))
    if changed:
        result.event("Synced", f"user {spec.user_name}: {'; '.join(changed)}")
    if outcome.problems:
        reason, message = outcome.problems[0]
        result.conditions += [Condition(READY, False, reason, message),
                              Condition(DEGRADED, True, reason, message)]
        result.event(reason, message, warning=True)
    else:
        result.conditions += [Condition(READY, True, "Synced",
                                        f"user {spec.user_name} matches the spec"),
                              Condition(DEGRADED, False, "Synced", "")]
    return result


async def _reconcile(body: kopf.Body, namespace: str, name: str) -> ReconcileResult:
    spec = UserSpec.parse(body.spec, name)
    api = kube()
    access = await resolve_access(api, namespace, spec.cluster)
    password = None
    if spec.mechanism is not None:
        password = await user_password(api, namespace, name, str(body.metadata.get("uid")),
                                       spec)
    applied = (body.get("status") or {}).get("applied")
    async with admin_session(access.bootstrap_servers, security=access.settings) as admin:
        outcome = await sync_user(admin, spec, password.data["password"] if password else None,
                                  password.resource_version if password else None, applied)
    return user_result(spec, outcome, password.name if password else None)


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
async def reconcile_user(**kwargs: Any) -> None:
    await reconcile_guarded("User", kwargs, _reconcile)


@kopf.timer(GROUP, VERSION, PLURAL, interval=SYNC_INTERVAL_S, initial_delay=SYNC_INTERVAL_S,
            idle=SYNC_INTERVAL_S / 2)
async def repair_user_drift(**kwargs: Any) -> None:
    if kwargs["body"].metadata.get("deletionTimestamp"):
        return
    await reconcile_guarded("User", kwargs, _reconcile)


@kopf.on.delete(GROUP, VERSION, PLURAL)
async def delete_kafka_user(*, body: kopf.Body, namespace: str | None, name: str, retry: int,
                            logger: Any, **_: Any) -> None:
    """Remove the user's ACLs, quotas and credential before the resource goes. A cluster that
    no longer exists has nothing to remove; an unreachable one is retried."""
    spec = UserSpec.parse(body.spec, name)
    try:
        access = await resolve_access(kube(), namespace or "", spec.cluster)
    except TemporaryReconcileError as exc:
        if exc.reason == "ClusterNotFound":
            logger.info(f"cluster gone; nothing to remove for user {spec.user_name}")
            return
        raise
    try:
        async with admin_session(access.bootstrap_servers, security=access.settings) as admin:
            removed = await remove_user(admin, spec.user_name,
                                        (body.get("status") or {}).get("applied"))
    except ClusterUnreachable as exc:
        raise kopf.TemporaryError(str(exc), delay=min(300, 10 * (retry + 1))) from exc
    if removed:
        kopf.info(body, reason="Deleted",
                  message=f"user {spec.user_name}: removed {', '.join(removed)}")
