"""Consumer-type (KIP-848) groups beside classic ones in one coordinator: routing, offsets
with member epochs, listing, deletion, and timers driven by the asyncio adapter."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

from odradek.coordinator import GroupCoordinator, InMemoryOffsetsLog, OffsetCommitEntry
from odradek.coordinator.consumer_group import (
    ConsumerGroupState,
    ConsumerHeartbeat,
    HeartbeatResult,
)
from odradek.coordinator.shard import CoordinatorShard
from odradek.protocol.errors import ErrorCode
from odradek.types import TopicPartition

from .helpers import CONFIG, join_request

TOPICS = {"t": 2}
TOPIC_IDS = {"t": uuid.UUID(int=7)}
NONE = ErrorCode.none


def join(member: str) -> ConsumerHeartbeat:
    return ConsumerHeartbeat(member, 0, rebalance_timeout_ms=1_000,
                             subscribed_topic_names=("t",), owned=frozenset())


def shard() -> CoordinatorShard:
    return CoordinatorShard(0, CONFIG, lambda: "uuid")


def beat(s: CoordinatorShard, now: int, request: ConsumerHeartbeat) -> HeartbeatResult:
    return s.consumer_heartbeat(now, "g", request, TOPICS, TOPIC_IDS)[0]


def test_offset_commit_in_a_consumer_group_checks_the_member_epoch() -> None:
    s = shard()
    assert beat(s, 0, join("m")).member_epoch == 1
    entry = [OffsetCommitEntry("t", 0, 5)]
    assert s.prepare_offset_commit(1, "g", "m", None, 1, entry).errors == {("t", 0): NONE}
    assert s.prepare_offset_commit(1, "g", "m", None, 0, entry).errors == {
        ("t", 0): ErrorCode.stale_member_epoch}
    assert s.prepare_offset_commit(1, "g", "m", None, 2, entry).errors == {
        ("t", 0): ErrorCode.fenced_member_epoch}
    assert s.prepare_offset_commit(1, "g", "x", None, 1, entry).errors == {
        ("t", 0): ErrorCode.unknown_member_id}
    s.apply_offset_commit(s.prepare_offset_commit(1, "g", "m", None, 1, entry), 1)
    assert s.fetch_offsets("g", [TopicPartition("t", 0)])[0].offset == 5


def test_consumer_groups_are_listed_with_their_type_and_state() -> None:
    s = shard()
    beat(s, 0, join("m"))
    s.apply_offset_commit(s.prepare_offset_commit(1, "g", "m", None, 1,
                                                  [OffsetCommitEntry("t", 0, 5)]), 1)
    listed = s.list_groups()
    assert [(g.group_id, g.protocol_type, g.state) for g in listed] == [
        ("g", "consumer", ConsumerGroupState.STABLE)]


def test_classic_and_consumer_groups_do_not_share_an_id() -> None:
    s = shard()
    beat(s, 0, join("m"))
    out = s.join(1, 7, "g", join_request(require_known=False))
    assert out[0].result.error is ErrorCode.inconsistent_group_protocol  # type: ignore[union-attr]
    s.join(1, 8, "classic", join_request(require_known=False))
    assert s.consumer_heartbeat(1, "classic", join("m"), TOPICS, TOPIC_IDS)[0].error is (
        ErrorCode.group_id_not_found)


def test_a_consumer_group_is_deleted_only_when_empty() -> None:
    s = shard()
    beat(s, 0, join("m"))
    assert s.delete_group(1, "g")[0] is ErrorCode.non_empty_group
    beat(s, 1, ConsumerHeartbeat("m", -1))
    assert s.delete_group(2, "g")[0] is NONE
    assert s.list_groups() == []


def test_offset_delete_in_a_consumer_group_that_committed_nothing() -> None:
    # The group exists though it has no offsets: per-partition answers, as in Kafka, not
    # GROUP_ID_NOT_FOUND; its subscribed topic is refused while it has members.
    s = shard()
    beat(s, 0, join("m"))
    wanted = [TopicPartition("t", 0), TopicPartition("other", 1)]
    assert s.delete_offsets(1, "g", wanted) == (
        NONE, {("t", 0): ErrorCode.group_subscribed_to_topic, ("other", 1): NONE}, [])
    beat(s, 2, ConsumerHeartbeat("m", -1))
    assert s.delete_offsets(3, "g", wanted)[:2] == (NONE, {("t", 0): NONE, ("other", 1): NONE})
    assert s.delete_offsets(3, "unknown", wanted)[0] is ErrorCode.group_id_not_found


def test_the_adapter_expires_a_silent_member_by_its_session_timeout() -> None:
    async def scenario() -> None:
        config = replace(CONFIG, consumer_session_timeout_ms=50)
        log = InMemoryOffsetsLog()
        coordinator = GroupCoordinator(config, log, topic_ids=lambda: TOPIC_IDS)
        await coordinator.on_become_leader(0)
        result = await heartbeat(coordinator, join("m"))
        assert result.error is NONE and result.member_epoch == 1
        error, group = coordinator.describe_consumer_group("g")
        assert error is NONE and group is not None and set(group.members) == {"m"}
        await asyncio.sleep(0.2)
        assert group.members == {} and group.group_epoch == 2
        assert coordinator.describe_consumer_group("nope")[0] is ErrorCode.group_id_not_found
        late = await heartbeat(coordinator, ConsumerHeartbeat("m", 1))
        assert late.error is ErrorCode.unknown_member_id
        await coordinator.close()
        # The expiry was written: a new coordinator does not bring the member back.
        successor = GroupCoordinator(config, log, topic_ids=lambda: TOPIC_IDS)
        await successor.on_become_leader(0)
        _, reloaded = successor.describe_consumer_group("g")
        assert reloaded is not None and reloaded.members == {} and reloaded.group_epoch == 2
        await successor.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


async def heartbeat(coordinator: GroupCoordinator, request: ConsumerHeartbeat,
                    group: str = "g") -> HeartbeatResult:
    result = coordinator.consumer_group_heartbeat(group, request, TOPICS, TOPIC_IDS)
    return result if isinstance(result, HeartbeatResult) else await result


def test_a_consumer_group_survives_a_coordinator_failover_without_a_new_epoch() -> None:
    async def scenario() -> None:
        log = InMemoryOffsetsLog()
        coordinator = GroupCoordinator(CONFIG, log, topic_ids=lambda: TOPIC_IDS)
        await coordinator.on_become_leader(0)
        a = await heartbeat(coordinator, join("a"))
        b = await heartbeat(coordinator, join("b"))
        a = await heartbeat(coordinator, ConsumerHeartbeat("a", a.member_epoch,
                                                           owned=a.assignment))
        a = await heartbeat(coordinator, ConsumerHeartbeat("a", a.member_epoch,
                                                           owned=a.assignment))
        b = await heartbeat(coordinator, ConsumerHeartbeat("b", b.member_epoch,
                                                           owned=frozenset()))
        _, before = coordinator.describe_consumer_group("g")
        assert before is not None and before.state is ConsumerGroupState.STABLE
        await coordinator.close()

        successor = GroupCoordinator(CONFIG, log, topic_ids=lambda: TOPIC_IDS)
        await successor.on_become_leader(0)
        _, after = successor.describe_consumer_group("g")
        assert after is not None
        assert (after.group_epoch, after.assignment_epoch) == (
            before.group_epoch, before.assignment_epoch)
        assert after.target == before.target
        assert {m: x.assignment for m, x in after.members.items()} == {
            m: x.assignment for m, x in before.members.items()}
        assert after.owners == before.owners
        # Both members carry on at their epochs: no rejoin, no new group epoch.
        again = await heartbeat(successor, ConsumerHeartbeat("a", a.member_epoch,
                                                             owned=a.assignment))
        assert (again.error, again.member_epoch) == (NONE, a.member_epoch)
        assert after.group_epoch == before.group_epoch
        assert after.state is ConsumerGroupState.STABLE
        await successor.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_deleted_consumer_group_stays_deleted_after_a_reload() -> None:
    async def scenario() -> None:
        log = InMemoryOffsetsLog()
        coordinator = GroupCoordinator(CONFIG, log, topic_ids=lambda: TOPIC_IDS)
        await coordinator.on_become_leader(0)
        await heartbeat(coordinator, join("a"))
        await heartbeat(coordinator, ConsumerHeartbeat("a", -1))
        assert await coordinator.delete_groups(["g"]) == {"g": NONE}
        await coordinator.close()
        successor = GroupCoordinator(CONFIG, log, topic_ids=lambda: TOPIC_IDS)
        await successor.on_become_leader(0)
        assert successor.describe_consumer_group("g")[0] is ErrorCode.group_id_not_found
        await successor.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))
