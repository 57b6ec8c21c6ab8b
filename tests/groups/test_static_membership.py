"""Static membership (KIP-345): a member that restarts under the same ``group.instance.id``
within its session timeout gets its partitions back without a rebalance of the group."""

from __future__ import annotations

import time
import uuid

from odradek.local_cluster import BrokerProcess, wait_until

from .helpers import (
    SESSION_MS,
    MemberFactory,
    create_topic,
    produce,
    wait_for_stable_assignment,
    wait_for_values,
)


def test_static_member_rejoins_without_a_rebalance(
    group_broker: BrokerProcess, members: MemberFactory
) -> None:
    bootstrap = group_broker.bootstrap
    partitions = 4
    topic = create_topic(bootstrap, partitions)
    group_id = f"static-{uuid.uuid4().hex[:8]}"
    leader = members("confluent", bootstrap, topic, group_id, instance_id="static-a",
                     name="static-a")
    wait_until(lambda: leader.assignment() is not None, 30, "the first member's assignment")
    follower = members("confluent", bootstrap, topic, group_id, instance_id="static-b",
                       name="static-b")
    wait_for_stable_assignment([leader, follower], partitions)
    before = produce(bootstrap, topic, partitions, 5, tag="before")
    wait_for_values([leader, follower], before, 30, "the first batch")
    follower_partitions = follower.assignment()
    leader_assignments = leader.assignments()

    follower.kill()
    killed_at = time.monotonic()
    restarted = members("confluent", bootstrap, topic, group_id, instance_id="static-b",
                        name="static-b-again")
    wait_until(lambda: restarted.assignment() is not None, SESSION_MS / 1000,
               "the restarted static member's assignment (within the session timeout)")
    assert restarted.assignment() == follower_partitions

    after = produce(bootstrap, topic, partitions, 5, tag="after")
    wait_for_values([leader, restarted], after, 30, "the batch produced after the restart")
    restarted_offsets = {r["p"]: r["o"] for r in restarted.records()}
    assert min(restarted_offsets.values()) >= 5, "the restarted member re-read committed data"

    # The old incarnation's session must not expire into a rebalance either: watch the other
    # member for one session timeout after the kill (the property under test is an absence).
    deadline = killed_at + SESSION_MS / 1000 + 1
    while time.monotonic() < deadline:
        assert leader.assignments() == leader_assignments, "the group rebalanced"
        time.sleep(0.2)
    assert leader.assignments() == leader_assignments, "the group rebalanced"
