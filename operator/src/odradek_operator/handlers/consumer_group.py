"""ConsumerGroup: observe a live consumer group (never own it) and run declarative resets.

Groups are created by their consumers; this resource reports the group's type (classic, or
consumer for KIP-848's protocol, with its group epoch, target assignment epoch and assignor),
state, members (a consumer-type group's with their member epoch and their current against
their target assignment), per-partition committed/end offsets and lag on a timer, and
executes ``spec.reset`` once per reset id, only while the group has no active members (a
Blocked condition says who is still consuming). Deleting the resource leaves the group alone.
"""

from __future__ import annotations

from typing import Any

import kopf

from odradek.client.consumer_groups import ConsumerGroupMember

from ..conditions import BLOCKED, READY, Condition, now_rfc3339
from ..kafka.groups import GroupOutcome, sync_group
from ..kafka.session import admin_session
from ..manifests.common import API_GROUP, CRD_VERSION
from ..metrics import METRICS
from ..runtime import kube
from ..spec import ConsumerGroupSpec
from .common import ReconcileResult, reconcile_guarded, resolve_access, sync_time

__all__ = ["OBSERVE_INTERVAL_S", "group_result"]

GROUP, VERSION, PLURAL = API_GROUP, CRD_VERSION, "consumergroups"
OBSERVE_INTERVAL_S = 30.0


def group_result(spec: ConsumerGroupSpec, outcome: GroupOutcome) -> ReconcileResult:
    """Status, conditions and Events for one observation (pure)."""
    group = outcome.group
    consumer = group.consumer
    members = []
    for m in group.members:
        member: dict[str, Any] = {
            "memberId": m.member_id, "clientId": m.client_id, "host": m.client_host,
            "assignments": [f"{tp.topic}-{tp.partition}" for tp in m.assignment]}
        if isinstance(m, ConsumerGroupMember):
            member["memberEpoch"] = m.member_epoch
            member["targetAssignments"] = [f"{tp.topic}-{tp.partition}"
                                           for tp in m.target_assignment]
        if m.group_instance_id:
            member["instanceId"] = m.group_instance_id
        members.append(member)
    result = ReconcileResult({
        "groupId": spec.group_id,
        **({"type": group.group_type} if group.group_type else {}),
        "state": group.state,
        **({"groupEpoch": consumer.group_epoch, "assignmentEpoch": consumer.assignment_epoch,
            "assignor": consumer.assignor} if consumer is not None else {}),
        "memberCount": len(members),
        "members": members,
        "partitions": [{k: v for k, v in {
            "topic": row.topic, "partition": row.partition, "committedOffset": row.committed,
            "endOffset": row.end, "lag": row.lag}.items() if v is not None}
            for row in outcome.lag],
        "totalLag": outcome.total_lag,
        "lastSyncTime": sync_time(),
    })
    result.conditions.append(Condition(READY, True, "Observed",
                                       f"group {spec.group_id} is {group.state}"))
    reset = spec.reset
    if outcome.blocked and reset is not None:
        result.conditions.append(Condition(BLOCKED, True, "GroupActive"
                                           if group.has_active_members else "ResetFailed",
                                           outcome.blocked))
        result.event("ResetBlocked", outcome.blocked, warning=True)
    else:
        result.conditions.append(Condition(BLOCKED, False, "NotBlocked", ""))
    if outcome.reset_moves is not None and reset is not None:
        result.status["lastReset"] = {
            "id": reset.id, "strategy": reset.strategy, "dryRun": reset.dry_run,
            "executedAt": now_rfc3339(),
            "offsets": [{k: v for k, v in {"topic": m.topic, "partition": m.partition,
                                           "from": m.current, "to": m.target}.items()
                         if v is not None} for m in outcome.reset_moves]}
        verb = "computed (dry run)" if reset.dry_run else "executed"
        result.event("Reset", f"reset {reset.id!r} ({reset.strategy}) {verb} on "
                              f"{len(outcome.reset_moves)} partition(s)")
    return result


async def _reconcile(body: kopf.Body, namespace: str, name: str) -> ReconcileResult:
    spec = ConsumerGroupSpec.parse(body.spec, name)
    access = await resolve_access(kube(), namespace, spec.cluster)
    last_reset = (body.get("status") or {}).get("lastReset")
    async with admin_session(access.bootstrap_servers,
                             security=access.settings) as admin:
        outcome = await sync_group(admin, spec, last_reset)
    METRICS.group_lag_observed(namespace, name, spec.group_id, outcome.total_lag)
    return group_result(spec, outcome)


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
async def reconcile_consumer_group(**kwargs: Any) -> None:
    await reconcile_guarded("ConsumerGroup", kwargs, _reconcile)


@kopf.timer(GROUP, VERSION, PLURAL, interval=OBSERVE_INTERVAL_S,
            initial_delay=OBSERVE_INTERVAL_S, idle=OBSERVE_INTERVAL_S / 2)
async def observe_consumer_group(**kwargs: Any) -> None:
    await reconcile_guarded("ConsumerGroup", kwargs, _reconcile)


@kopf.on.delete(GROUP, VERSION, PLURAL, optional=True)
def forget_consumer_group(*, namespace: str | None, name: str, body: kopf.Body,
                          **_: Any) -> None:
    """The group itself is the consumers'; only the lag series goes."""
    group_id = (body.get("spec") or {}).get("groupId") or name
    METRICS.group_forgotten(namespace or "", name, group_id)
