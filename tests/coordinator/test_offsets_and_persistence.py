"""Offset commits, fetches, expiry, and rebuilding a shard from its log."""

import asyncio
import struct
from dataclasses import replace

from odradek.coordinator.coordinator import GroupCoordinator
from odradek.coordinator.group_metadata import metadata_value
from odradek.coordinator.group_state import GroupState
from odradek.coordinator.offsets import OffsetCommitEntry
from odradek.coordinator.offsets_log import InMemoryOffsetsLog
from odradek.coordinator.shard import CoordinatorShard
from odradek.protocol.errors import ErrorCode, NotLeaderOrFollower
from odradek.types import TopicPartition

from .helpers import CONFIG, GROUP, Driver, join_request

NONE = ErrorCode.none


def commit(driver: Driver, member: str, generation: int, *entries: OffsetCommitEntry,
           instance: str | None = None) -> dict:
    plan = driver.shard.prepare_offset_commit(driver.now, GROUP, member, instance, generation,
                                              entries)
    driver.shard.replay(plan.records, driver.now, loading=False)
    return plan.errors


def test_simple_commit_creates_a_group_without_protocol() -> None:
    driver = Driver()
    errors = commit(driver, "", -1, OffsetCommitEntry("t", 0, 42, metadata="m"))
    assert errors == {("t", 0): NONE}
    assert driver.group.protocol_type is None
    [fetched] = driver.shard.fetch_offsets(GROUP, None)
    assert (fetched.topic, fetched.partition, fetched.offset, fetched.metadata) == ("t", 0, 42, "m")
    [unknown] = driver.shard.fetch_offsets(GROUP, [TopicPartition("t", 9)])
    assert unknown.offset == -1


def test_group_commit_checks_generation_and_member() -> None:
    driver = Driver()
    (a,), generation = driver.form_group(1)
    entry = OffsetCommitEntry("t", 0, 5)
    assert commit(driver, a, generation, entry) == {("t", 0): NONE}
    assert commit(driver, a, generation + 1, entry) == {("t", 0): ErrorCode.illegal_generation}
    assert commit(driver, "x", generation, entry) == {("t", 0): ErrorCode.unknown_member_id}
    assert commit(driver, "", -1, entry) == {("t", 0): ErrorCode.unknown_member_id}
    # Unknown group with a generation: a zombie.
    plan = driver.shard.prepare_offset_commit(driver.now, "other", a, None, 3, [entry])
    assert plan.errors == {("t", 0): ErrorCode.illegal_generation}


def test_commit_while_completing_rebalance_is_rebalance_in_progress() -> None:
    driver = Driver()
    a = driver.new_member()
    driver.join(join_request(a))
    assert driver.group.state is GroupState.COMPLETING_REBALANCE
    errors = commit(driver, a, 1, OffsetCommitEntry("t", 0, 1))
    assert errors == {("t", 0): ErrorCode.rebalance_in_progress}


def test_metadata_too_large_fails_only_that_partition() -> None:
    driver = Driver(config=replace(CONFIG, offset_metadata_max_bytes=4))
    errors = commit(driver, "", -1, OffsetCommitEntry("t", 0, 1, metadata="12345"),
                    OffsetCommitEntry("t", 1, 2, metadata="1234"))
    assert errors == {("t", 0): ErrorCode.offset_metadata_too_large, ("t", 1): NONE}
    assert [o.offset for o in driver.shard.fetch_offsets(GROUP, None)] == [2]


def test_offsets_of_empty_group_expire_after_retention_then_group_goes() -> None:
    driver = Driver(config=replace(CONFIG, offsets_retention_ms=60_000))
    (a,), generation = driver.form_group(1)
    commit(driver, a, generation, OffsetCommitEntry("t", 0, 1))
    for _ in range(13):
        driver.advance(9_000)
        assert driver.heartbeat(a, generation) is NONE
    assert driver.shard.expire_offsets(driver.now) == [], "live groups keep offsets"
    driver.leave((a, None))
    driver.advance(59_999)
    assert driver.shard.expire_offsets(driver.now) == []
    driver.advance(1)
    tombstones = driver.shard.expire_offsets(driver.now)
    assert [r.value for r in tombstones] == [None, None]  # the offset, then the group
    assert driver.shard.group(GROUP) is None


def test_stable_consumer_group_expires_offsets_of_unsubscribed_topics_only() -> None:
    driver = Driver(config=replace(CONFIG, offsets_retention_ms=60_000))
    subscription = struct.pack(">hih", 0, 1, 1) + b"t" + b"\xff\xff\xff\xff"
    a = driver.new_member()
    driver.join(join_request(a, metadata=subscription))
    driver.sync(a, 1, {a: b""})
    commit(driver, a, 1, OffsetCommitEntry("t", 0, 1), OffsetCommitEntry("old", 0, 1))
    for _ in range(7):
        driver.advance(9_000)
        driver.heartbeat(a, 1)
    expired = driver.shard.expire_offsets(driver.now)
    assert len(expired) == 1
    assert [o.topic for o in driver.shard.fetch_offsets(GROUP, None)] == ["t"]


def test_delete_group_and_offset_delete() -> None:
    driver = Driver()
    (a,), generation = driver.form_group(1)
    commit(driver, a, generation, OffsetCommitEntry("t", 0, 1))
    assert driver.shard.delete_group(driver.now, GROUP)[0] is ErrorCode.non_empty_group
    top, errors, _ = driver.shard.delete_offsets(driver.now, GROUP, [TopicPartition("x", 0)])
    assert top is NONE and errors == {("x", 0): NONE}
    driver.leave((a, None))
    error, records = driver.shard.delete_group(driver.now, GROUP)
    assert error is NONE and len(records) == 2 and all(r.value is None for r in records)
    assert driver.shard.delete_group(driver.now, GROUP)[0] is ErrorCode.group_id_not_found


def test_reload_from_log_reproduces_groups_and_offsets() -> None:
    driver = Driver()
    ids, generation = driver.form_group(3)
    records = driver.stored_records
    plan = driver.shard.prepare_offset_commit(
        driver.now, GROUP, ids[0], None, generation,
        [OffsetCommitEntry("t", p, 10 * p, leader_epoch=2, metadata=f"m{p}") for p in range(3)])
    records += plan.records
    driver.shard.replay(plan.records, driver.now, loading=False)
    # A deleted simple group in the same partition must stay deleted.
    simple = driver.shard.prepare_offset_commit(driver.now, "s", "", None, -1,
                                                [OffsetCommitEntry("t", 0, 1)])
    driver.shard.replay(simple.records, driver.now, loading=False)
    _, tombstones = driver.shard.delete_group(driver.now, "s")
    records += simple.records + tombstones

    reloaded = CoordinatorShard(0, CONFIG, lambda: "x")
    reloaded.replay(records, driver.now, loading=True)
    original, loaded = driver.group, reloaded.group(GROUP)
    assert loaded is not None and reloaded.group("s") is None
    assert metadata_value(loaded) == metadata_value(original)
    assert loaded.offsets == original.offsets
    assert loaded.state is GroupState.STABLE
    assert loaded.heartbeat(driver.now, ids[1], None, generation) is NONE


def test_coordinator_persists_and_a_new_leader_loads() -> None:
    async def scenario() -> None:
        config = replace(CONFIG, min_session_timeout_ms=10)
        log = InMemoryOffsetsLog()
        coordinator = GroupCoordinator(config, log)
        assert coordinator.fetch_offsets(GROUP, None)[0] is ErrorCode.not_coordinator
        await coordinator.on_become_leader(0)
        request = join_request(session_ms=5_000, rebalance_ms=1_000)
        first = await coordinator.join_group(GROUP, request)
        assert first.error is ErrorCode.member_id_required
        joined = await coordinator.join_group(GROUP, replace(request, member_id=first.member_id))
        assert joined.error is NONE and joined.leader == joined.member_id
        synced = await coordinator.sync_group(GROUP, joined.member_id, None, 1,
                                              {joined.member_id: b"A"})
        assert synced.assignment == b"A"
        errors = await coordinator.commit_offsets(GROUP, joined.member_id, None, 1,
                                                  [OffsetCommitEntry("t", 0, 7)])
        assert errors == {("t", 0): NONE}
        log.fail_next.append(NotLeaderOrFollower())
        failed = await coordinator.commit_offsets(GROUP, joined.member_id, None, 1,
                                                  [OffsetCommitEntry("t", 0, 8)])
        assert failed == {("t", 0): ErrorCode.not_coordinator}
        coordinator.on_resign(0)
        assert coordinator.heartbeat(GROUP, joined.member_id, None, 1) is (
            ErrorCode.not_coordinator)

        successor = GroupCoordinator(config, log)
        await successor.on_become_leader(0)
        assert successor.fetch_offsets(GROUP, [TopicPartition("t", 0)])[1][0].offset == 7
        described = successor.describe_group(GROUP)
        assert (described.state, described.protocol) == ("Stable", "range")
        assert [m.assignment for m in described.members] == [b"A"]
        assert successor.list_groups(["stable"])[1][0].group_id == GROUP
        assert successor.list_groups(["empty"])[1] == []
        await coordinator.close()
        await successor.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_coordinator_parks_join_until_rebalance_completes() -> None:
    async def scenario() -> None:
        config = replace(CONFIG, min_session_timeout_ms=10)
        coordinator = GroupCoordinator(config, InMemoryOffsetsLog())
        await coordinator.on_become_leader(0)
        request = join_request(session_ms=5_000, rebalance_ms=200, require_known=False)
        a = await coordinator.join_group(GROUP, request)
        await coordinator.sync_group(GROUP, a.member_id, None, 1, {})
        # A second member parks everyone; a does not rejoin, so the rebalance timeout
        # (a timer, not a sleep) completes it without a.
        second = await coordinator.join_group(GROUP, replace(request, client_id="b"))
        assert second.error is NONE and second.generation_id == 2
        assert coordinator.describe_group(GROUP).state == "CompletingRebalance"
        assert [m.member_id for m in coordinator.describe_group(GROUP).members] == [
            second.member_id]
        await coordinator.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_applying_a_commit_plan_equals_replaying_its_records() -> None:
    entries = (OffsetCommitEntry("t", 0, 7, leader_epoch=3, metadata="m"),
               OffsetCommitEntry("t", 1, 9, metadata=None, expire_timestamp_ms=123_456),
               OffsetCommitEntry("u", 0, 1, metadata="x" * (CONFIG.offset_metadata_max_bytes + 1)))
    applied, replayed = Driver(), Driver()
    for driver in (applied, replayed):
        driver.shard.groups.pop(GROUP, None)
    plan = applied.shard.prepare_offset_commit(applied.now, GROUP, "", None, -1, entries)
    applied.shard.apply_offset_commit(plan, applied.now)
    twin = replayed.shard.prepare_offset_commit(replayed.now, GROUP, "", None, -1, entries)
    replayed.shard.replay(twin.records, replayed.now, loading=False)
    assert applied.shard.groups[GROUP].offsets == replayed.shard.groups[GROUP].offsets
    assert sorted(applied.shard.groups[GROUP].offsets) == [("t", 0), ("t", 1)]


def test_offset_delete_of_the_last_offset_removes_an_empty_group() -> None:
    """Kafka's cleanupGroupMetadata: an Empty group left with no offsets is Dead and
    unlisted, and its tombstone is written so a reload does not bring it back."""
    driver = Driver()
    commit(driver, "", -1, OffsetCommitEntry("t", 0, 1), OffsetCommitEntry("t", 1, 2))
    top, _, records = driver.shard.delete_offsets(driver.now, GROUP, [TopicPartition("t", 0)])
    assert top is NONE and len(records) == 1
    assert GROUP in {g.group_id for g in driver.shard.list_groups()}, "one offset is left"
    top, _, records = driver.shard.delete_offsets(driver.now, GROUP, [TopicPartition("t", 1)])
    assert top is NONE and [r.value for r in records] == [None, None]  # offset, then group
    assert driver.shard.group(GROUP) is None
    assert GROUP not in {g.group_id for g in driver.shard.list_groups()}
    assert driver.shard.delete_offsets(driver.now, GROUP, [TopicPartition("t", 1)])[0] is (
        ErrorCode.group_id_not_found)


def test_transactional_offsets_wait_for_the_marker_and_survive_failover() -> None:
    """TxnOffsetCommit offsets stay pending until the transaction's marker: COMMIT installs
    them, ABORT drops them; a successor loading the log gets the open ones as pending."""

    async def scenario() -> None:
        log = InMemoryOffsetsLog()
        coordinator = GroupCoordinator(CONFIG, log)
        await coordinator.on_become_leader(0)
        tp = TopicPartition("t", 0)
        for producer, offset in ((7, 5), (8, 9)):
            errors = await coordinator.commit_txn_offsets(GROUP, (producer, 0), "", None, -1,
                                                          [OffsetCommitEntry("t", 0, offset)])
            assert errors == {tp: NONE}
        assert coordinator.fetch_offsets(GROUP, [tp])[1][0].offset == -1  # pending only
        assert coordinator.unstable_offsets(GROUP) == {tp}  # require_stable must wait
        assert coordinator.unstable_offsets("other-group") == set()
        coordinator.complete_txn(0, 8, commit=False)
        coordinator.complete_txn(0, 7, commit=True)
        assert coordinator.fetch_offsets(GROUP, [tp])[1][0].offset == 5
        assert coordinator.unstable_offsets(GROUP) == set()
        errors = await coordinator.commit_txn_offsets(GROUP, (9, 0), "", None, -1,
                                                      [OffsetCommitEntry("t", 0, 12)])
        await coordinator.close()
        successor = GroupCoordinator(CONFIG, log)
        await successor.on_become_leader(0)
        successor.complete_txn(0, 9, commit=True)  # the marker arrives after the move
        assert successor.fetch_offsets(GROUP, [tp])[1][0].offset == 12
        await successor.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))
