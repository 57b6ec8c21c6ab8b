"""Migration through the asyncio adapter: the order of writes in ``__consumer_offsets``
(what a coordinator failover replays) and the replies that wait for them."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

from odradek.coordinator import GroupCoordinator, InMemoryOffsetsLog
from odradek.coordinator.consumer_group import ConsumerHeartbeat, HeartbeatResult
from odradek.coordinator.group_state import GroupState
from odradek.protocol.consumer_protocol import (
    Subscription,
    encode_assignment,
    encode_subscription,
)
from odradek.protocol.errors import ErrorCode, NotEnoughReplicas
from odradek.types import TopicPartition

from .helpers import CONFIG, join_request

TOPICS = {"t": 2}
TOPIC_IDS = {"t": uuid.UUID(int=7)}
PROTOCOLS = (("range", encode_subscription(Subscription(["t"]))),)
EVERYTHING = encode_assignment([TopicPartition("t", 0), TopicPartition("t", 1)])


def coordinator_on(log: InMemoryOffsetsLog) -> GroupCoordinator:
    return GroupCoordinator(CONFIG, log, topic_ids=lambda: TOPIC_IDS,
                            partition_counts=lambda: TOPICS)


async def heartbeat(coordinator: GroupCoordinator, request: ConsumerHeartbeat) -> HeartbeatResult:
    result = coordinator.consumer_group_heartbeat("g", request, TOPICS, TOPIC_IDS)
    return result if isinstance(result, HeartbeatResult) else await result


def join(member: str) -> ConsumerHeartbeat:
    return ConsumerHeartbeat(member, 0, rebalance_timeout_ms=30_000,
                             subscribed_topic_names=("t",), owned=frozenset())


def test_an_upgrade_racing_the_classic_groups_last_write_is_replayed_as_a_consumer_group(
) -> None:
    """The leader's SyncGroup writes the classic group's metadata; a consumer-protocol
    member's heartbeat upgrades the group before that write's task has run. The log must
    hold the metadata record before the upgrade's tombstone, or a reload resurrects the
    classic group beside the consumer group."""
    async def scenario() -> None:
        log = InMemoryOffsetsLog()
        coordinator = coordinator_on(log)
        await coordinator.on_become_leader(0)
        joined = await coordinator.join_group(
            "g", replace(join_request(client_id="a", require_known=False), protocols=PROTOCOLS))
        assert joined.error is ErrorCode.none and joined.leader == joined.member_id
        sync = asyncio.create_task(coordinator.sync_group(
            "g", joined.member_id, None, joined.generation_id, {joined.member_id: EVERYTHING}))
        await asyncio.sleep(0)  # the SyncGroup ran up to its wait; its write is under way
        upgraded = await heartbeat(coordinator, join("new"))
        assert upgraded.error is ErrorCode.none, upgraded
        assert (await sync).error is ErrorCode.none
        await coordinator.close()

        successor = coordinator_on(log)
        await successor.on_become_leader(0)
        error, group = successor.describe_consumer_group("g")
        assert error is ErrorCode.none and group is not None
        assert set(group.members) == {joined.member_id, "new"}
        assert successor.describe_group("g").members == ()
        await successor.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_classic_member_joins_a_consumer_group_and_its_leave_downgrades_it() -> None:
    async def scenario() -> None:
        log = InMemoryOffsetsLog()
        coordinator = coordinator_on(log)
        await coordinator.on_become_leader(0)
        first = await heartbeat(coordinator, join("new"))
        classic = await coordinator.join_group(
            "g", replace(join_request(client_id="k", require_known=False), protocols=PROTOCOLS))
        assert classic.error is ErrorCode.none and classic.leader == ""
        assert classic.generation_id == first.member_epoch + 1
        # The consumer-protocol member leaves: only a classic member is left, so the group
        # turns classic, with its committed state written before the answer.
        left = await heartbeat(coordinator, ConsumerHeartbeat("new", -1))
        assert left.error is ErrorCode.none
        assert coordinator.describe_consumer_group("g")[0] is ErrorCode.group_id_not_found
        described = coordinator.describe_group("g")
        assert described.state == GroupState.PREPARING_REBALANCE.value
        assert [m.member_id for m in described.members] == [classic.member_id]
        await coordinator.close()

        successor = coordinator_on(log)
        await successor.on_become_leader(0)
        assert successor.describe_consumer_group("g")[0] is ErrorCode.group_id_not_found
        assert [m.member_id for m in successor.describe_group("g").members] == [
            classic.member_id]
        await successor.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_classic_members_leave_from_a_consumer_group_is_answered_once_written() -> None:
    """Kafka's classicGroupLeaveToConsumerGroup answers with the records' write: a member
    told it left must not come back with a coordinator failover, and a failed write is the
    answer's error."""
    async def scenario() -> None:
        log = InMemoryOffsetsLog()
        coordinator = coordinator_on(log)
        await coordinator.on_become_leader(0)
        assert (await heartbeat(coordinator, join("new"))).error is ErrorCode.none
        joins = [await coordinator.join_group("g", replace(
            join_request(client_id=name, require_known=False), protocols=PROTOCOLS))
            for name in ("k", "m")]
        k, m = (joined.member_id for joined in joins)

        log.fail_next.append(NotEnoughReplicas("isr below min.insync.replicas"))
        failed = coordinator.leave_group("g", [(k, None)])
        assert not isinstance(failed, tuple), "a consumer group's leave waits for its write"
        assert await failed == (ErrorCode.coordinator_not_available,
                                [ErrorCode.coordinator_not_available])

        left = coordinator.leave_group("g", [(m, None)])
        assert not isinstance(left, tuple)
        assert await left == (ErrorCode.none, [ErrorCode.none])
        await coordinator.close()

        successor = coordinator_on(log)
        await successor.on_become_leader(0)
        error, group = successor.describe_consumer_group("g")
        assert error is ErrorCode.none and group is not None
        assert m not in group.members and "new" in group.members
        await successor.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))
