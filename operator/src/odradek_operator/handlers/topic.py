"""Topic: create, alter and delete a Kafka topic through the admin protocol.

Triggers: create/update/resume of the resource, and a timer that repairs drift made outside
Kubernetes: a config set or removed with another tool is set back, a replication factor
changed by hand is reassigned back. Partitions added by hand cannot be repaired (Kafka cannot
remove partitions): the Topic reports a ``MorePartitionsThanSpec`` condition until
spec.partitions is raised to match. The annotation
``odradek.dev/managed: "false"`` detaches the resource: nothing is changed or deleted in Kafka.
Deletion goes through kopf's finalizer and honours ``spec.deletionPolicy``.
"""

from __future__ import annotations

from typing import Any

import kopf

from ..conditions import DEGRADED, READY, RECONCILING, Condition
from ..decisions.config_change import describe_config_changes
from ..errors import ClusterUnreachable, TemporaryReconcileError
from ..kafka.session import admin_session
from ..kafka.topics import TopicOutcome, delete_topic, sync_topic
from ..manifests.common import API_GROUP, CRD_VERSION
from ..runtime import kube
from ..spec import TopicSpec
from .common import ReconcileResult, is_managed, reconcile_guarded, resolve_access, sync_time

__all__ = ["DRIFT_INTERVAL_S", "topic_result"]

GROUP, VERSION, PLURAL = API_GROUP, CRD_VERSION, "topics"
DRIFT_INTERVAL_S = 60.0


def topic_result(spec: TopicSpec, outcome: TopicOutcome, generation: int | None
                 ) -> ReconcileResult:
    """Status, conditions and Events for one reconcile's outcome (pure)."""
    topic, plan = outcome.topic, outcome.plan
    result = ReconcileResult({"topicName": spec.topic_name, "lastSyncTime": sync_time()})
    if topic is not None:
        result.status.update({"topicId": topic.topic_id, "partitions": topic.partitions,
                              "replicationFactor": topic.replication_factor})
    if plan.create:
        result.event("Created", f"created topic {spec.topic_name} with {spec.partitions} "
                                f"partitions, replication factor {spec.replication_factor}")
    if plan.grow_to:
        result.event("PartitionsAdded", f"grew {spec.topic_name} to {plan.grow_to} partitions")
    if plan.config_changes:
        result.event("ConfigChanged", f"topic configs of {spec.topic_name}: "
                                      f"{describe_config_changes(plan.config_changes)}")
    if plan.reassignment:
        result.event("Reassigning", f"moving {len(plan.reassignment)} partition(s) to "
                                    f"replication factor {spec.replication_factor}")
    if plan.refusals:
        reason, message = plan.refusals[0]
        text = "; ".join(m for _, m in plan.refusals)
        result.conditions += [Condition(READY, False, reason, text),
                              Condition(DEGRADED, True, reason, text),
                              Condition(RECONCILING, False, reason, text)]
        result.event(reason, message, warning=True)
    elif outcome.reassigning:
        message = f"replication factor changing to {spec.replication_factor}"
        result.conditions += [Condition(READY, False, "Reassigning", message),
                              Condition(RECONCILING, True, "Reassigning", message),
                              Condition(DEGRADED, False, "Reassigning", "")]
        result.requeue_after, result.requeue_reason = 10.0, message
    else:
        result.conditions += [Condition(READY, True, "Synced",
                                        f"topic {spec.topic_name} matches the spec"),
                              Condition(RECONCILING, False, "Synced", ""),
                              Condition(DEGRADED, False, "Synced", "")]
    return result


async def _reconcile(body: kopf.Body, namespace: str, name: str) -> ReconcileResult:
    if not is_managed(body.metadata):
        return ReconcileResult(conditions=[Condition(
            READY, None, "Unmanaged", 'annotation odradek.dev/managed is "false": the topic '
                                      "is neither changed nor deleted")])
    spec = TopicSpec.parse(body.spec, name)
    access = await resolve_access(kube(), namespace, spec.cluster)
    async with admin_session(access.bootstrap_servers,
                             security=access.settings) as admin:
        outcome = await sync_topic(admin, spec)
    return topic_result(spec, outcome, body.metadata.get("generation"))


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
async def reconcile_topic(**kwargs: Any) -> None:
    await reconcile_guarded("Topic", kwargs, _reconcile)


@kopf.timer(GROUP, VERSION, PLURAL, interval=DRIFT_INTERVAL_S, initial_delay=DRIFT_INTERVAL_S,
            idle=DRIFT_INTERVAL_S / 2)
async def repair_topic_drift(**kwargs: Any) -> None:
    if kwargs["body"].metadata.get("deletionTimestamp"):
        return
    await reconcile_guarded("Topic", kwargs, _reconcile)


@kopf.on.delete(GROUP, VERSION, PLURAL)
async def delete_kafka_topic(*, body: kopf.Body, namespace: str | None, name: str, retry: int,
                             logger: Any, **_: Any) -> None:
    """Delete the Kafka topic (deletionPolicy Delete) before the resource goes away. A
    cluster that no longer exists has nothing to delete; an unreachable one is retried."""
    spec = TopicSpec.parse(body.spec, name)
    if spec.deletion_policy == "Retain" or not is_managed(body.metadata):
        logger.info(f"keeping Kafka topic {spec.topic_name} (deletionPolicy "
                    f"{spec.deletion_policy}, managed {is_managed(body.metadata)})")
        return
    try:
        access = await resolve_access(kube(), namespace or "", spec.cluster)
    except TemporaryReconcileError as exc:
        if exc.reason == "ClusterNotFound":
            logger.info(f"cluster gone; nothing to delete for {spec.topic_name}")
            return
        raise
    try:
        async with admin_session(access.bootstrap_servers,
                                 security=access.settings) as admin:
            deleted = await delete_topic(admin, spec.topic_name)
    except ClusterUnreachable as exc:
        raise kopf.TemporaryError(str(exc), delay=min(300, 10 * (retry + 1))) from exc
    if deleted:
        kopf.info(body, reason="Deleted", message=f"deleted Kafka topic {spec.topic_name}")
