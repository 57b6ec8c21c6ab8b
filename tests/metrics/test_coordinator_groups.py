"""The broker's GroupSource over a real group coordinator: classic and consumer-type
(KIP-848) groups side by side, each with its own state, members, epoch and offsets."""

from __future__ import annotations

import asyncio
import uuid

from odradek.broker.metrics_sources import CoordinatorGroups
from odradek.coordinator import GroupCoordinator, InMemoryOffsetsLog, OffsetCommitEntry
from odradek.coordinator.consumer_group import ConsumerHeartbeat, HeartbeatResult
from odradek.metrics.lag import GroupOffsets
from odradek.protocol.errors import ErrorCode
from odradek.types import TopicPartition
from tests.coordinator.helpers import CONFIG

TOPICS = {"t": 2}
TOPIC_IDS = {"t": uuid.UUID(int=7)}


def test_consumer_type_groups_are_reported_with_their_state_members_and_epoch() -> None:
    async def scenario() -> list[GroupOffsets]:
        coordinator = GroupCoordinator(CONFIG, InMemoryOffsetsLog(),
                                       topic_ids=lambda: TOPIC_IDS)
        await coordinator.on_become_leader(0)
        for member in ("a", "b"):
            pending = coordinator.consumer_group_heartbeat(
                "kip848", ConsumerHeartbeat(member, 0, rebalance_timeout_ms=1_000,
                                            subscribed_topic_names=("t",),
                                            owned=frozenset()), TOPICS, TOPIC_IDS)
            if not isinstance(pending, HeartbeatResult):
                await pending
        errors = await coordinator.commit_offsets("kip848", "a", None, 1,
                                                  [OffsetCommitEntry("t", 0, 6)])
        assert set(errors.values()) == {ErrorCode.none}
        await coordinator.commit_offsets("classic", "", None, -1,
                                         [OffsetCommitEntry("t", 1, 9)])
        await coordinator.commit_offsets("empty-kip848", "", None, -1,
                                         [OffsetCommitEntry("t", 0, 4)])
        groups = sorted(CoordinatorGroups(coordinator).groups())
        await coordinator.close()
        return groups

    groups = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert [(g.group, g.group_type, g.state, g.members, g.epoch, dict(g.committed))
            for g in groups] == [
        ("classic", "classic", "Empty", 0, 0, {TopicPartition("t", 1): 9}),
        ("empty-kip848", "classic", "Empty", 0, 0, {TopicPartition("t", 0): 4}),
        ("kip848", "consumer", "Reconciling", 2, 2, {TopicPartition("t", 0): 6}),
    ]
