"""Broker-side changes through the admin protocol: live config and partition moves."""

from __future__ import annotations

from collections.abc import Mapping

from odradek.client.admin import RESOURCE_BROKER, AsyncAdminClient
from odradek.client.errors import ConnectionFailed, KafkaClientError
from odradek.client.metadata import TopicPartition

from ..decisions.config_change import DynamicConfigPlan

__all__ = ["CLUSTER_DEFAULT", "apply_dynamic_config", "reassign"]

#: The BROKER resource name that addresses the cluster-wide default (every broker).
CLUSTER_DEFAULT = ""


async def apply_dynamic_config(admin: AsyncAdminClient, plan: DynamicConfigPlan) -> bool:
    """Apply ``plan`` to the cluster default; False when the cluster refuses dynamic broker
    configs (the caller then falls back to a rolling restart). Connection loss propagates:
    that is "try again", not "unsupported"."""
    if plan.empty:
        return True
    try:
        await admin.incremental_alter_configs(RESOURCE_BROKER, CLUSTER_DEFAULT, plan.operations)
    except ConnectionFailed:
        raise
    except (KafkaClientError, ValueError):
        return False
    return True


async def reassign(admin: AsyncAdminClient,
                   moves: Mapping[tuple[str, int], tuple[int, ...]]) -> None:
    await admin.alter_partition_reassignments(
        {TopicPartition(t, p): list(r) for (t, p), r in moves.items()})
