"""A KIP-848 group loaded by a new coordinator (after a failover) keeps its timers.

Kafka's ``GroupMetadataManager.onLoaded`` restarts every member's session timeout and, for a
member still revoking partitions (UNREVOKED_PARTITIONS), its rebalance timeout: a member that
keeps heartbeating but never gives its partitions up is removed when that runs out, as it
would have been on the old coordinator.
"""

from __future__ import annotations

import uuid

from odradek.config_sections import GroupCoordinatorConfig
from odradek.coordinator.consumer_group import ConsumerGroup, ConsumerHeartbeat
from odradek.coordinator.consumer_group_records import (
    changed_records,
    finish_load,
    replay_consumer_group_record,
    snapshot,
)
from odradek.coordinator.reconciliation import MemberState

CONFIG = GroupCoordinatorConfig(consumer_session_timeout_ms=10_000,
                                consumer_heartbeat_interval_ms=1_000)
TOPICS = {"t": 4}
TOPIC_IDS = {"t": uuid.UUID(int=7)}
REBALANCE_TIMEOUT_MS = 5_000


def join(group: ConsumerGroup, member: str, now: int) -> None:
    result = group.heartbeat(now, ConsumerHeartbeat(
        member, 0, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, subscribed_topic_names=("t",),
        owned=frozenset()), TOPICS)
    assert result.error == 0, result


def load(group: ConsumerGroup, now: int) -> ConsumerGroup:
    """What a new coordinator rebuilds from the group's records at ``now``."""
    records = changed_records("g", snapshot(None), snapshot(group), TOPIC_IDS, 0)
    groups: dict[str, ConsumerGroup] = {}
    names = {topic_id: name for name, topic_id in TOPIC_IDS.items()}
    for record in records:
        assert record.key is not None
        replay_consumer_group_record(groups, lambda g: ConsumerGroup(g, CONFIG), record.key,
                                     record.value, names, now)
    finish_load(groups.values())
    return groups["g"]


def test_a_member_revoking_across_a_failover_still_has_its_rebalance_timeout() -> None:
    group = ConsumerGroup("g", CONFIG)
    join(group, "a", 0)
    everything = group.members["a"].assignment.assigned
    join(group, "b", 100)
    group.heartbeat(200, ConsumerHeartbeat("a", 1, owned=everything), TOPICS)
    assert group.members["a"].assignment.state is MemberState.UNREVOKED_PARTITIONS

    loaded = load(group, now=1_000)
    assert loaded.next_deadline() == 1_000 + REBALANCE_TIMEOUT_MS
    # a heartbeats within its session but never acknowledges the revocation.
    for now in (2_000, 4_000, 5_900):
        result = loaded.heartbeat(now, ConsumerHeartbeat("a", 1, owned=everything), TOPICS)
        assert result.error == 0, result
        loaded.heartbeat(now, ConsumerHeartbeat("b", 2, owned=frozenset()), TOPICS)
    assert loaded.poll(1_000 + REBALANCE_TIMEOUT_MS) == ["a"]
    b = loaded.heartbeat(6_100, ConsumerHeartbeat("b", 2, owned=frozenset()), TOPICS)
    assert b.assignment == everything


def test_a_stable_member_gets_a_fresh_session_and_no_rebalance_timeout_on_load() -> None:
    group = ConsumerGroup("g", CONFIG)
    join(group, "a", 0)
    loaded = load(group, now=50_000)
    assert loaded.members["a"].rebalance_deadline_ms is None
    assert loaded.next_deadline() == 50_000 + CONFIG.consumer_session_timeout_ms
