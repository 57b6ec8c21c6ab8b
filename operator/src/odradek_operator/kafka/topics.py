"""Bringing one Kafka topic to its Topic spec: observe, plan (pure), apply, observe again."""

from __future__ import annotations

import re
from dataclasses import dataclass

from odradek.client.admin import RESOURCE_TOPIC, AsyncAdminClient, NewTopic
from odradek.client.errors import BrokerResponseError, KafkaClientError
from odradek.client.metadata import TopicPartition

from ..decisions.topic_plan import ObservedTopic, TopicPlan, plan_topic
from ..errors import PermanentReconcileError
from ..spec import TopicSpec
from .observe import observe_topic

__all__ = ["TopicOutcome", "delete_topic", "sync_topic"]

# Kafka error codes that mean the request itself is wrong: waiting will not fix them.
_PERMANENT_CODES = {
    17: "InvalidTopicName",  # INVALID_TOPIC_EXCEPTION
    37: "InvalidPartitions",  # INVALID_PARTITIONS
    38: "InvalidReplicationFactor",  # INVALID_REPLICATION_FACTOR
    40: "InvalidConfig",  # INVALID_CONFIG
    42: "InvalidRequest",  # INVALID_REQUEST
    29: "AuthorizationFailed",  # TOPIC_AUTHORIZATION_FAILED
}


@dataclass(frozen=True)
class TopicOutcome:
    plan: TopicPlan
    topic: ObservedTopic | None  # after the changes

    @property
    def reassigning(self) -> bool:
        return bool(self.plan.reassignment) or bool(self.topic and self.topic.reassigning)


async def sync_topic(admin: AsyncAdminClient, spec: TopicSpec) -> TopicOutcome:
    metadata = await admin.describe_cluster()
    brokers = frozenset(metadata.brokers)
    observed = await observe_topic(admin, spec.topic_name)
    if observed is not None:
        config_names = observed.config_names
    else:
        existing = sorted(name for name, info in metadata.topics.items() if info.error_code == 0)
        config_names = await topic_config_names(admin, existing[0] if existing else None)
    plan = plan_topic(spec, observed, brokers, config_names)
    try:
        await _apply(admin, spec, plan)
    except KafkaClientError as exc:
        reason = permanent_reason(exc)
        if reason:
            raise PermanentReconcileError(str(exc), reason=reason) from exc
        raise
    after = await observe_topic(admin, spec.topic_name) if not plan.in_sync else observed
    return TopicOutcome(plan, after)


async def topic_config_names(admin: AsyncAdminClient, topic: str | None) -> frozenset[str]:
    """Every topic config name the cluster knows, from DescribeConfigs of an existing topic
    (which lists defaults too): how a topic still to be created learns which of its keys are
    unknown. Empty when there is no topic to ask (Kafka's refusal then names the first)."""
    if topic is None:
        return frozenset()
    try:
        described = await admin.describe_topic_configs([topic])
    except BrokerResponseError:  # deleted meanwhile, or not ours to describe: Kafka decides
        return frozenset()
    return frozenset(name for entries in described.values() for name in entries)


def permanent_reason(exc: KafkaClientError) -> str | None:
    """The condition reason when ``exc`` carries an error code that waiting cannot fix. The
    admin client reports per-entity failures as text (``NAME [code]``), so codes are read
    from there as well as from a single BrokerResponseError."""
    codes = {int(exc.code)} if hasattr(exc, "code") else set()
    codes |= {int(c) for c in re.findall(r"\[(\d+)\]", str(exc))}
    return next((_PERMANENT_CODES[c] for c in sorted(codes) if c in _PERMANENT_CODES), None)


async def _apply(admin: AsyncAdminClient, spec: TopicSpec, plan: TopicPlan) -> None:
    if plan.create:
        await admin.create_topics([NewTopic(spec.topic_name, spec.partitions,
                                            spec.replication_factor, dict(spec.config))])
        return
    if plan.config_changes:
        await admin.incremental_alter_configs(RESOURCE_TOPIC, spec.topic_name,
                                              plan.config_changes)
    if plan.grow_to:
        await admin.create_partitions({spec.topic_name: plan.grow_to})
    if plan.reassignment:
        await admin.alter_partition_reassignments(
            {TopicPartition(t, p): r for (t, p), r in plan.reassignment.items()})


async def delete_topic(admin: AsyncAdminClient, name: str) -> bool:
    """Delete ``name``; False when it did not exist."""
    try:
        await admin.delete_topics([name])
    except KafkaClientError as exc:
        if "UNKNOWN_TOPIC_OR_PARTITION" in str(exc):
            return False
        raise
    return True
