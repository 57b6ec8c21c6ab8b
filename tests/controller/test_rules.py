"""The controller's pure rules: reassignment lists, preferred/controlled-shutdown elections,
rebalance choice, stray logs."""

from __future__ import annotations

import uuid

import pytest

from odradek.broker.stray_logs import stray_partitions
from odradek.cluster.election import (
    decide,
    preferred_leader_and_isr,
    reassignment_complete_leader_and_isr,
)
from odradek.cluster.model import NO_LEADER, PartitionRegistration, TopicMetadata, TopicPartition
from odradek.cluster.preferred import partitions_to_rebalance
from odradek.cluster.reassignment import ReplicaAssignment, validate_target
from odradek.cluster.znodes import decode_ongoing_reassignment, encode_topic_assignment
from odradek.protocol.errors import InvalidReplicaAssignment


def st(leader: int, isr: tuple[int, ...], replicas: tuple[int, ...], epoch: int = 5
       ) -> PartitionRegistration:
    return PartitionRegistration(leader, epoch, isr, replicas, 1, 3)


def test_reassignment_lists_follow_kafka_target_first_union() -> None:
    moving = ReplicaAssignment((1, 2, 3)).reassign_to((4, 5, 1))
    assert moving == ReplicaAssignment((4, 5, 1, 2, 3), (4, 5), (2, 3))
    assert moving.target == (4, 5, 1) and moving.original == (1, 2, 3)
    assert moving.completed() == ReplicaAssignment((4, 5, 1))
    assert moving.cancelled() == ReplicaAssignment((1, 2, 3))
    # A new request is computed from the original replicas; 4 and 5 are no longer needed.
    again = moving.reassign_to((6, 1))
    assert again == ReplicaAssignment((6, 1, 2, 3), (6,), (2, 3))
    assert moving.unneeded_by(again) == (4, 5)


def test_topic_znode_round_trips_ongoing_reassignment() -> None:
    import uuid

    data = encode_topic_assignment(uuid.uuid4(), {0: [4, 1, 2]}, {0: [4]}, {0: [2], 1: []})
    assert decode_ongoing_reassignment(data) == ({0: (4,)}, {0: (2,)})


@pytest.mark.parametrize("target", [(), (1, 1), (1, 9)])
def test_invalid_targets_are_refused(target: tuple[int, ...]) -> None:
    with pytest.raises(InvalidReplicaAssignment):
        validate_target(target, {1, 2, 3})


def test_reassignment_completes_only_with_every_target_in_isr() -> None:
    current = st(1, (1, 2, 3), (4, 1, 2, 3))
    assert reassignment_complete_leader_and_isr(current, (4, 1), {1, 2, 3, 4}) is None
    current = st(2, (1, 2, 3, 4), (4, 1, 2, 3))
    done = reassignment_complete_leader_and_isr(current, (4, 1), {1, 2, 3, 4})
    assert done is not None and done.leader == 4 and done.isr == (1, 4) and done.leader_epoch == 6
    current = st(1, (1, 2, 4), (4, 1, 2))
    kept = reassignment_complete_leader_and_isr(current, (4, 1), {1, 2, 4})
    assert kept is not None and kept.leader == 1


def test_controlled_shutdown_moves_leadership_and_drops_the_broker_from_isr() -> None:
    moved = decide(st(1, (1, 2, 3), (1, 2, 3)), {1, 2, 3}, {1})
    assert moved is not None and moved.leader == 2 and moved.isr == (2, 3)
    follower = decide(st(2, (1, 2, 3), (1, 2, 3)), {1, 2, 3}, {1})
    assert follower is not None and follower.leader == 2 and follower.isr == (2, 3)
    # Nobody else in sync: the leader stays rather than taking the partition offline.
    assert decide(st(1, (1,), (1, 2)), {1, 2}, {1}) is None
    assert decide(st(1, (1,), (1,)), {1}, {1}) is None


def test_preferred_election_needs_the_preferred_replica_in_sync() -> None:
    assert preferred_leader_and_isr(st(2, (1, 2), (1, 2)), {1, 2}) is not None
    assert preferred_leader_and_isr(st(2, (2,), (1, 2)), {1, 2}) is None
    assert preferred_leader_and_isr(st(2, (1, 2), (1, 2)), {2}) is None
    assert preferred_leader_and_isr(st(1, (1, 2), (1, 2)), {1, 2}) is None
    assert preferred_leader_and_isr(st(2, (1, 2), (1, 2)), {1, 2}, {1}) is None


def test_rebalance_picks_partitions_of_imbalanced_brokers_only() -> None:
    states = {
        TopicPartition("t", 0): st(2, (1, 2), (1, 2)),
        TopicPartition("t", 1): st(2, (1, 2), (2, 1)),
        TopicPartition("t", 2): st(NO_LEADER, (1,), (3, 1)),  # 3 out of sync
    }
    assert partitions_to_rebalance(states, {1, 2, 3}, 10) == [TopicPartition("t", 0)]
    assert partitions_to_rebalance(states, {1, 2, 3}, 100) == []
    assert partitions_to_rebalance(states, {2, 3}, 10) == []


def test_stray_logs_are_unknown_topics_partitions_and_non_replicas() -> None:
    topics = {"kept": TopicMetadata("kept", uuid.uuid4(), partitions={
        0: PartitionRegistration(1, 0, (1, 2), (1, 2), 0),
        1: PartitionRegistration(2, 0, (2, 3), (2, 3), 0),
    })}
    local = [("kept", 0), ("kept", 1), ("kept", 7), ("gone", 0)]
    assert stray_partitions(local, topics, 1) == [("gone", 0), ("kept", 1), ("kept", 7)]
