"""The KIP-848 consumer group core (sans-IO): joins, reconciliation, fencing, timeouts."""

from __future__ import annotations

from typing import Any

from odradek.config_sections import GroupCoordinatorConfig
from odradek.coordinator.assignors import AssignmentSpec, range_assign, uniform_assign
from odradek.coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupState,
    ConsumerHeartbeat,
    HeartbeatResult,
    validate_first_heartbeat,
)
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.types import TopicPartition

CONFIG = GroupCoordinatorConfig(consumer_session_timeout_ms=10_000,
                                consumer_heartbeat_interval_ms=1_000)
TOPICS = {"t": 4, "u": 2}


def tps(*pairs: tuple[str, int]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t, p) for t, p in pairs)


def join(group: ConsumerGroup, member: str, now: int = 0, topics: tuple[str, ...] = ("t",),
         **kw: Any) -> HeartbeatResult:
    return group.heartbeat(now, ConsumerHeartbeat(member, 0, rebalance_timeout_ms=5_000,
                                                  subscribed_topic_names=topics,
                                                  owned=frozenset(), **kw), TOPICS)


def test_first_member_gets_every_partition_at_epoch_one() -> None:
    group = ConsumerGroup("g", CONFIG)
    result = join(group, "a")
    assert result.error == ErrorCode.none
    assert result.member_epoch == 1
    assert result.assignment == tps(("t", 0), ("t", 1), ("t", 2), ("t", 3))
    assert group.state is ConsumerGroupState.STABLE


def test_partitions_move_only_after_the_owner_revokes_them() -> None:
    group = ConsumerGroup("g", CONFIG)
    a_all = join(group, "a").assignment
    b = join(group, "b")
    # a still owns everything: b joins at the new epoch with nothing yet.
    assert b.member_epoch == 2 and b.assignment == frozenset()
    assert group.state is ConsumerGroupState.RECONCILING
    a = group.heartbeat(1, ConsumerHeartbeat("a", 1, owned=a_all), TOPICS)
    assert a.member_epoch == 1 and a.assignment is not None and len(a.assignment) == 2
    # b asks again: the partitions a must give up are still a's.
    assert group.heartbeat(2, ConsumerHeartbeat("b", 2, owned=frozenset()), TOPICS).assignment \
        is None
    a = group.heartbeat(3, ConsumerHeartbeat("a", 1, owned=a.assignment), TOPICS)
    assert a.member_epoch == 2
    b = group.heartbeat(4, ConsumerHeartbeat("b", 2, owned=frozenset()), TOPICS)
    assert a_all is not None and a.assignment is not None
    assert b.assignment == a_all - a.assignment
    assert group.state is ConsumerGroupState.STABLE


def test_stale_or_future_epoch_is_fenced() -> None:
    group = ConsumerGroup("g", CONFIG)
    join(group, "a")
    future = group.heartbeat(1, ConsumerHeartbeat("a", 7, owned=frozenset()), TOPICS)
    assert future.error == ErrorCode.fenced_member_epoch
    unknown = group.heartbeat(1, ConsumerHeartbeat("zz", 1), TOPICS)
    assert unknown.error == ErrorCode.unknown_member_id


def test_session_timeout_removes_the_member_and_frees_its_partitions() -> None:
    group = ConsumerGroup("g", CONFIG)
    join(group, "a")
    join(group, "b", now=100)
    assert group.next_deadline() == 10_000
    assert group.poll(10_000) == ["a"]
    b = group.heartbeat(10_001, ConsumerHeartbeat("b", 2, owned=frozenset()), TOPICS)
    assert b.member_epoch == 3 and b.assignment is not None and len(b.assignment) == 4


def test_unsupported_assignor_and_group_size() -> None:
    group = ConsumerGroup("g", GroupCoordinatorConfig(consumer_max_size=1))
    assert join(group, "a", server_assignor="sticky").error is ErrorCode.unsupported_assignor
    join(group, "a")
    assert join(group, "b").error == ErrorCode.group_max_size_reached


def test_static_member_rejoins_with_its_partitions_and_an_unreleased_id_is_refused() -> None:
    group = ConsumerGroup("g", CONFIG)
    first = join(group, "a", instance_id="i1")
    assert join(group, "a2", instance_id="i1").error == ErrorCode.unreleased_instance_id
    left = group.heartbeat(1, ConsumerHeartbeat("a", -2, instance_id="i1"), TOPICS)
    assert left.member_epoch == -2
    again = join(group, "a2", instance_id="i1")
    assert again.assignment == first.assignment
    assert again.member_epoch == first.member_epoch
    assert set(group.members) == {"a2"}


def test_regex_subscription_picks_up_new_matching_topics() -> None:
    group = ConsumerGroup("g", CONFIG)
    group.heartbeat(0, ConsumerHeartbeat("a", 0, rebalance_timeout_ms=1,
                                         subscribed_topic_regex="t.*", owned=frozenset()),
                    {"t1": 1, "x": 1})
    result = group.heartbeat(1, ConsumerHeartbeat("a", 1, owned=tps(("t1", 0))),
                             {"t1": 1, "t2": 2, "x": 1})
    assert result.member_epoch == 2
    assert result.assignment == tps(("t1", 0), ("t2", 0), ("t2", 1))


def test_malformed_first_heartbeats_are_invalid_requests() -> None:
    for request in (ConsumerHeartbeat("", 0, rebalance_timeout_ms=1, subscribed_topic_names=()),
                    ConsumerHeartbeat("a", 0, subscribed_topic_names=("t",)),
                    ConsumerHeartbeat("a", 0, rebalance_timeout_ms=1)):
        try:
            validate_first_heartbeat(request)
        except KafkaError as exc:
            assert exc.code == ErrorCode.invalid_request
        else:
            raise AssertionError(f"{request} accepted")


def test_offset_commit_epochs() -> None:
    group = ConsumerGroup("g", CONFIG)
    owned = join(group, "a").assignment
    assert owned is not None
    assert group.validate_offset_commit("a", 1, owned) == set()
    try:
        group.validate_offset_commit("a", 2, owned)
    except KafkaError as exc:
        assert exc.code == ErrorCode.fenced_member_epoch
    else:
        raise AssertionError("a future epoch was accepted")
    # b joins: a moves to epoch 2 keeping t-0 and t-1 (owned since epoch 1) and revokes the
    # rest. A commit still carrying epoch 1 (it raced that heartbeat) is a's for what a has
    # owned since then (KIP-1251), stale for what it gave up.
    join(group, "b")
    kept = group.heartbeat(1, ConsumerHeartbeat("a", 1, owned=owned), TOPICS).assignment
    kept = group.heartbeat(2, ConsumerHeartbeat("a", 1, owned=kept), TOPICS).assignment
    assert kept is not None and group.members["a"].assignment.member_epoch == 2
    assert group.validate_offset_commit("a", 1, owned) == owned - kept
    assert group.validate_offset_commit("a", 0, kept) == kept


def test_configured_assignors_accept_kafka_class_names_and_skip_unknown_ones() -> None:
    config = GroupCoordinatorConfig(consumer_assignors=(
        "com.example.Custom", "org.apache.kafka.coordinator.group.assignor.RangeAssignor"))
    group = ConsumerGroup("g", config)
    assert group.assignors == ("range",)
    assert join(group, "a", server_assignor="uniform").error is ErrorCode.unsupported_assignor
    assert join(group, "a").member_epoch == 1 and group.assignor == "range"
    assert ConsumerGroup("g", GroupCoordinatorConfig(consumer_assignors=())).assignor == (
        "uniform")


def test_assignors_balance_and_range_is_contiguous() -> None:
    spec = AssignmentSpec({"a": frozenset({"t"}), "b": frozenset({"t"}), "c": frozenset({"t"})},
                          {"t": 7}, {})
    assert sorted(len(v) for v in uniform_assign(spec).values()) == [2, 2, 3]
    ranges = range_assign(spec)
    assert ranges["a"] == tps(("t", 0), ("t", 1), ("t", 2))
    assert ranges["c"] == tps(("t", 5), ("t", 6))
    sticky = uniform_assign(AssignmentSpec(spec.subscriptions, {"t": 7},
                                           {"a": tps(("t", 6), ("t", 5))}))
    assert tps(("t", 6), ("t", 5)) <= sticky["a"]
