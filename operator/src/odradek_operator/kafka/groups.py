"""Observing a consumer group and running its declarative reset, safely.

A reset commits offsets on the group's behalf, which Kafka allows only while the group has no
active members; the check here is the polite one (a Blocked condition that says who is still
consuming), and the coordinator's refusal (UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, ...) when
a consumer joins between the check and the commit is the safe one — reported the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from odradek.client.admin import AsyncAdminClient
from odradek.client.errors import KafkaClientError
from odradek.client.metadata import TopicPartition

from ..decisions.offsets import (
    PartitionLag,
    ResetMove,
    compute_lag,
    compute_reset,
    reset_partitions,
)
from ..spec import ConsumerGroupSpec, ResetSpec
from .observe import ObservedGroup, observe_group

__all__ = ["GroupOutcome", "reset_already_done", "sync_group"]

_ACTIVE_GROUP_ERRORS = ("UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION",
                        "NON_EMPTY_GROUP")


@dataclass(frozen=True)
class GroupOutcome:
    group: ObservedGroup
    lag: list[PartitionLag]
    total_lag: int
    reset_moves: list[ResetMove] | None = None  # the reset executed (or dry-run) this time
    blocked: str | None = None  # why the requested reset did not run


def reset_already_done(reset: ResetSpec, last_reset: Mapping[str, Any] | None) -> bool:
    """Once per id: a real run of this id happened, or a dry run of it when dry-running."""
    if not last_reset or last_reset.get("id") != reset.id:
        return False
    return not last_reset.get("dryRun", False) or reset.dry_run


async def sync_group(admin: AsyncAdminClient, spec: ConsumerGroupSpec,
                     last_reset: Mapping[str, Any] | None) -> GroupOutcome:
    group = await observe_group(admin, spec.group_id, spec.topics)
    moves: list[ResetMove] | None = None
    blocked = None
    reset = spec.reset
    if reset is not None and not reset_already_done(reset, last_reset):
        if group.has_active_members:
            members = group.members
            clients = sorted({m.client_id for m in members})
            blocked = (f"group {spec.group_id!r} has {len(members)} active member(s) "
                       f"(clients {', '.join(clients)}); stop its consumers, the reset "
                       f"{reset.id!r} runs as soon as the group is empty")
        else:
            moves, blocked = await _reset(admin, spec, reset, group)
            if moves is not None and not reset.dry_run:
                group = await observe_group(admin, spec.group_id, spec.topics)
    rows, total = compute_lag(group.committed, group.latest, spec.topics)
    return GroupOutcome(group, rows, total, moves, blocked)


async def _reset(admin: AsyncAdminClient, spec: ConsumerGroupSpec, reset: ResetSpec,
                 group: ObservedGroup) -> tuple[list[ResetMove] | None, str | None]:
    partitions = reset_partitions(reset, spec.topics, group.committed, group.topic_partitions)
    missing = sorted(set(reset.topics) - set(group.topic_partitions))
    if missing:
        # Named topics are looked up too (a reset may target a topic never consumed).
        extra = await observe_group(admin, spec.group_id, [*spec.topics, *reset.topics])
        group = extra
        partitions = reset_partitions(reset, spec.topics, group.committed,
                                      group.topic_partitions)
        missing = sorted(set(reset.topics) - set(group.topic_partitions))
    if missing:
        return None, f"reset {reset.id!r} names topics that do not exist: {', '.join(missing)}"
    by_timestamp = None
    if reset.strategy == "timestamp":
        assert reset.timestamp_ms is not None
        found = await admin.list_offsets(
            {TopicPartition(t, p): reset.timestamp_ms for t, p in partitions})
        by_timestamp = {(tp.topic, tp.partition): (v.offset if v else None)
                        for tp, v in found.items()}
    moves = compute_reset(reset, partitions, group.committed, group.earliest, group.latest,
                          by_timestamp)
    if reset.dry_run or not moves:
        return moves, None
    try:
        await admin.alter_group_offsets(
            spec.group_id, {TopicPartition(m.topic, m.partition): m.target for m in moves})
    except KafkaClientError as exc:
        if any(code in str(exc) for code in _ACTIVE_GROUP_ERRORS):
            return None, (f"the coordinator refused reset {reset.id!r} because the group "
                          f"became active: {exc}")
        raise
    return moves, None
