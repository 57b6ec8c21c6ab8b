"""Real clients' group management against odradek: ownership, failover, at-least-once.

Every member is a subprocess running the client's own consumer (subscribe + rebalance
listener + synchronous commits). The tests read what the members report: which partitions
the client handed to the application, and every record consumed.
"""

from __future__ import annotations

import time
import uuid

import pytest

from odradek.local_cluster import BrokerProcess, wait_until

from .helpers import (
    SESSION_MS,
    MemberFactory,
    committed_offsets,
    consumed_values,
    create_topic,
    produce,
    wait_for_stable_assignment,
    wait_for_values,
)

CLIENTS = ["confluent", "kafka-python", "aiokafka"]


@pytest.mark.parametrize(
    ("client", "size", "partitions"),
    [
        ("confluent", 1, 1),
        ("confluent", 6, 12),
        ("kafka-python", 3, 6),
        ("aiokafka", 2, 5),
    ],
)
def test_every_partition_is_owned_by_exactly_one_member(
    group_broker: BrokerProcess, members: MemberFactory, client: str, size: int,
    partitions: int,
) -> None:
    bootstrap = group_broker.bootstrap
    topic = create_topic(bootstrap, partitions)
    group_id = f"own-{uuid.uuid4().hex[:8]}"
    group = [members(client, bootstrap, topic, group_id) for _ in range(size)]
    owners = wait_for_stable_assignment(group, partitions)
    assert {m.process.name for m in owners.values()} == {m.process.name for m in group}, (
        "every member of a group no larger than the partition count gets partitions"
    )

    expected = produce(bootstrap, topic, partitions, 5)
    wait_for_values(group, expected, 30, "the group to consume every record")
    for member in group:
        for record in member.records():
            assert owners[record["p"]] is member, (
                f"{member.process.name} consumed partition {record['p']} it does not own"
            )
    seen = [r["v"] for m in group for r in m.records()]
    assert len(seen) == len(set(seen)), "a stable group consumed some record twice"


@pytest.mark.parametrize("client", CLIENTS)
def test_killed_member_partitions_move_and_resume_from_commit(
    group_broker: BrokerProcess, members: MemberFactory, client: str
) -> None:
    bootstrap = group_broker.bootstrap
    partitions = 6
    topic = create_topic(bootstrap, partitions)
    group_id = f"kill-{uuid.uuid4().hex[:8]}"
    group = [members(client, bootstrap, topic, group_id) for _ in range(3)]
    owners = wait_for_stable_assignment(group, partitions)
    first = produce(bootstrap, topic, partitions, 10, tag="before")
    wait_for_values(group, first, 30, "the first batch to be consumed")

    victim = owners[0]
    victim_partitions = sorted(p for p, m in owners.items() if m is victim)
    last_seen = {p: max(r["o"] for r in victim.records() if r["p"] == p)
                 for p in victim_partitions}

    # The victim commits after writing each record; wait until its commits are durable
    # so the expected resume point is exact.
    def victim_committed() -> bool:
        offsets = committed_offsets(bootstrap, group_id, topic, partitions)
        return all(offsets[p] == last_seen[p] + 1 for p in victim_partitions)

    wait_until(victim_committed, 20, "the victim's commits", interval=0.2)

    killed_at = time.monotonic()
    victim.kill()
    survivors = [m for m in group if m is not victim]
    second = produce(bootstrap, topic, partitions, 10, tag="after")
    wait_for_values(survivors, second, SESSION_MS / 1000 + 25,
                    "the survivors to consume everything produced after the kill")
    moved_in = time.monotonic() - killed_at
    new_owners = wait_for_stable_assignment(survivors, partitions, timeout=5)
    assert all(new_owners[p] is not victim for p in victim_partitions)
    assert moved_in < SESSION_MS / 1000 + 20, f"rebalance after the kill took {moved_in:.1f}s"

    for partition in victim_partitions:
        taken_over = [r["o"] for m in survivors for r in m.records() if r["p"] == partition]
        assert taken_over, f"nobody resumed partition {partition}"
        assert min(taken_over) == last_seen[partition] + 1, (
            f"partition {partition} resumed at {min(taken_over)}, last committed "
            f"{last_seen[partition] + 1}"
        )
    assert first | second <= consumed_values(group), "a record was lost"
