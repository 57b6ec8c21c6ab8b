"""The coordinator's settings, under Kafka's broker property names and defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GroupCoordinatorConfig"]


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    max_group_size: int = 2**31 - 1  # group.max.size
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions
    offsets_retention_ms: int = 10_080 * 60_000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4_096  # offset.metadata.max.bytes
    offset_commit_timeout_ms: int = 5_000  # offsets.commit.timeout.ms
    # Not configurable in Kafka either (GroupCoordinator.NewMemberJoinTimeoutMs): a member
    # that joined without a member id and vanished must not hold up rebalances forever.
    new_member_join_timeout_ms: int = 300_000

    @classmethod
    def from_broker_config(cls, config: Mapping[str, Any]) -> GroupCoordinatorConfig:
        """Read the Kafka property names that are present; keep defaults for the rest."""
        defaults = cls()

        def get(name: str, default: int) -> int:
            value = config.get(name)
            return default if value is None else int(value)

        retention_minutes = config.get("offsets.retention.minutes")
        return cls(
            min_session_timeout_ms=get("group.min.session.timeout.ms", 6_000),
            max_session_timeout_ms=get("group.max.session.timeout.ms", 1_800_000),
            initial_rebalance_delay_ms=get("group.initial.rebalance.delay.ms", 3_000),
            max_group_size=get("group.max.size", defaults.max_group_size),
            offsets_topic_num_partitions=get("offsets.topic.num.partitions", 50),
            offsets_retention_ms=(
                defaults.offsets_retention_ms
                if retention_minutes is None
                else int(retention_minutes) * 60_000
            ),
            offsets_retention_check_interval_ms=get(
                "offsets.retention.check.interval.ms", 600_000
            ),
            offset_metadata_max_bytes=get("offset.metadata.max.bytes", 4_096),
            offset_commit_timeout_ms=get("offsets.commit.timeout.ms", 5_000),
        )
