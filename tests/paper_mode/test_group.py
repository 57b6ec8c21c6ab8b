"""Paper-mode consumer groups against a real odradek broker and real ZooKeeper."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import NewPartitions, NewTopic
from kazoo.client import KazooClient

from odradek.client import RebalanceFailed, ZooKeeperConsumer
from odradek.client.consumer import ConsumerRecord
from odradek.client.metadata import TopicPartition
from odradek.client.zk_registry import assign_paper, owner_path
from tests.groups.helpers import admin

from .conftest import (
    SESSION_MS,
    Member,
    MemberFactory,
    PaperCluster,
    create_topic,
    owners,
    produce,
    registered,
    registry_offsets,
    wait_for,
)

FAST: dict[str, Any] = {"rebalance_backoff_ms": 200, "rebalance_max_retries": 20,
                        "fetch_max_wait_ms": 100, "zookeeper_session_timeout_ms": SESSION_MS}


@pytest.fixture
def in_process(paper_cluster: PaperCluster) -> Iterator[list[ZooKeeperConsumer]]:
    """Consumers made in this process; closed at teardown."""
    made: list[ZooKeeperConsumer] = []
    yield made
    for consumer in made:
        consumer.close()


def new_consumer(made: list[ZooKeeperConsumer], cluster: PaperCluster, group: str,
                 topic: str, **settings: Any) -> ZooKeeperConsumer:
    consumer = ZooKeeperConsumer(cluster.zk_connect, group, [topic],
                                 bootstrap_servers=cluster.bootstrap, **{**FAST, **settings})
    made.append(consumer)
    return consumer


def poll_until(consumers: list[ZooKeeperConsumer], count: int,
               timeout: float = 30) -> list[ConsumerRecord]:
    """Poll the consumers in turn until they returned ``count`` records in all."""
    got: list[ConsumerRecord] = []

    def enough() -> bool:
        for consumer in consumers:
            got.extend(consumer.poll(100))
        return len(got) >= count

    wait_for(enough, f"{count} records", timeout, lambda: f"{len(got)} records")
    return got


def expected_owners(live: list[Member], topic: str, partitions: int) -> dict[int, str]:
    table = assign_paper({m.consumer_id: {topic: 1} for m in live}, {topic: partitions})
    return {tp.partition: thread for thread, tps in table.items() for tp in tps}


def consumed(group: list[Member]) -> list[dict[str, Any]]:
    return [record for member in group for record in member.records()]


def test_three_consumers_own_each_partition_once_and_consume_everything(
        members: MemberFactory, paper_cluster: PaperCluster, zk: KazooClient,
        group: str) -> None:
    topic = create_topic(paper_cluster.bootstrap, 6)
    crew = [members(group, topic, f"c{i}") for i in range(3)]
    want = expected_owners(crew, topic, 6)
    assert sorted(Counter(want.values()).values()) == [2, 2, 2]
    wait_for(lambda: owners(zk, group, topic) == want, "Algorithm 1's table in the owners "
             "registry", describe=lambda: f"{owners(zk, group, topic)}")
    assert registered(zk, group) == sorted(m.consumer_id for m in crew)

    values = produce(paper_cluster.bootstrap, topic, 6, 25, "a")
    wait_for(lambda: {r["v"] for r in consumed(crew)} >= values, "every message consumed",
             describe=lambda: f"{len(values - {r['v'] for r in consumed(crew)})} missing")
    for member in crew:  # each consumer read exactly its own partitions
        mine = {p for p, thread in want.items() if thread == member.thread_id}
        assert {r["p"] for r in member.records()} == mine, member.name
    counts = Counter(str(r["v"]) for r in consumed(crew))
    assert max(counts.values()) == 1, "no failure happened, so nothing may come twice"
    # Auto-commit reaches the end of every partition.
    wait_for(lambda: registry_offsets(zk, group, topic, 6) == dict.fromkeys(range(6), 25),
             "offsets registry at the end of every partition",
             describe=lambda: f"{registry_offsets(zk, group, topic, 6)}")

    for member in crew:  # SIGTERM: close() deletes the ephemeral nodes itself
        assert member.process.stop(20) == 0, member.process.log_tail()
    assert registered(zk, group) == []
    assert owners(zk, group, topic) == {}


def test_killed_consumer_partitions_move_and_resume_from_the_offset_registry(
        members: MemberFactory, paper_cluster: PaperCluster, zk: KazooClient,
        group: str) -> None:
    topic = create_topic(paper_cluster.bootstrap, 6)
    crew = [members(group, topic, f"c{i}") for i in range(3)]
    wait_for(lambda: owners(zk, group, topic) == expected_owners(crew, topic, 6),
             "initial ownership", describe=lambda: f"{owners(zk, group, topic)}")
    values = produce(paper_cluster.bootstrap, topic, 6, 20, "a")
    wait_for(lambda: registry_offsets(zk, group, topic, 6) == dict.fromkeys(range(6), 20),
             "phase-1 offsets committed",
             describe=lambda: f"{registry_offsets(zk, group, topic, 6)}")
    values |= produce(paper_cluster.bootstrap, topic, 6, 20, "b")
    wait_for(lambda: {r["v"] for r in consumed(crew)} >= values, "phase 2 consumed")

    victim, survivors = crew[1], [crew[0], crew[2]]
    moved = {p for p, t in owners(zk, group, topic).items() if t == victim.thread_id}
    assert moved, "the victim owned nothing"
    victim.process.kill()
    # The victim's last commits are final now; nobody else owns its partitions yet.
    committed_at_kill = registry_offsets(zk, group, topic, 6)
    before_kill = {(r["p"], r["o"]) for r in victim.records()}
    values |= produce(paper_cluster.bootstrap, topic, 6, 20, "c")

    wait_for(lambda: victim.consumer_id not in registered(zk, group),
             "the victim's registration to expire", timeout=SESSION_MS / 1000 * 2 + 10)
    want = expected_owners(survivors, topic, 6)
    wait_for(lambda: owners(zk, group, topic) == want, "the survivors owning every partition",
             describe=lambda: f"{owners(zk, group, topic)}")
    assert victim.thread_id not in owners(zk, group, topic).values()
    wait_for(lambda: {r["v"] for r in consumed(survivors)} | {r["v"] for r in
                                                               victim.records()} >= values,
             "every message of every phase consumed",
             describe=lambda: f"{len(values - {r['v'] for r in consumed(crew)})} missing")

    # At least once: a message comes twice only if it was past the last committed offset.
    seen = Counter((r["p"], r["o"]) for r in consumed(survivors))
    seen.update(before_kill)
    duplicates = {key for key, n in seen.items() if n > 1}
    early = {(p, o) for p, o in duplicates if o < (committed_at_kill[p] or 0)}
    assert not early, f"re-delivered before the committed offset: {sorted(early)[:10]}"
    for p in moved:  # the new owner started exactly where the victim's commit said
        first = min(r["o"] for r in consumed(survivors) if r["p"] == p)
        assert first == committed_at_kill[p], (p, first, committed_at_kill[p])


def test_two_groups_each_get_every_message(
        in_process: list[ZooKeeperConsumer], paper_cluster: PaperCluster, zk: KazooClient
        ) -> None:
    topic = create_topic(paper_cluster.bootstrap, 3)
    group_a, group_b = f"ga-{uuid.uuid4().hex[:6]}", f"gb-{uuid.uuid4().hex[:6]}"
    a1 = new_consumer(in_process, paper_cluster, group_a, topic, auto_offset_reset="smallest")
    a2 = new_consumer(in_process, paper_cluster, group_a, topic, auto_offset_reset="smallest")
    # Group B finds the brokers through the broker registry, as the paper's consumers do.
    b1 = ZooKeeperConsumer(paper_cluster.zk_connect, group_b, topic,
                           auto_offset_reset="smallest", **FAST)
    in_process.append(b1)
    wait_for(lambda: a1.assignment() | a2.assignment() == {TopicPartition(topic, p)
                                                            for p in range(3)},
             "group A to split the topic",
             describe=lambda: f"{a1.assignment()} / {a2.assignment()}")
    assert not a1.assignment() & a2.assignment()
    assert b1.assignment() == {TopicPartition(topic, p) for p in range(3)}
    values = produce(paper_cluster.bootstrap, topic, 3, 10, "x")

    got_a = poll_until([a1, a2], len(values))
    got_b = poll_until([b1], len(values))
    assert sorted(r.value.decode() for r in got_a) == sorted(values)  # type: ignore[union-attr]
    assert sorted(r.value.decode() for r in got_b) == sorted(values)  # type: ignore[union-attr]


def test_new_group_with_largest_starts_at_the_end_and_resumes_from_its_commit(
        in_process: list[ZooKeeperConsumer], paper_cluster: PaperCluster, zk: KazooClient,
        group: str) -> None:
    topic = create_topic(paper_cluster.bootstrap, 3)
    produce(paper_cluster.bootstrap, topic, 3, 5, "old")
    consumer = new_consumer(in_process, paper_cluster, group, topic,
                            auto_offset_reset="largest", auto_commit_enable=False)
    # The reset position is in the registry as soon as the consumer owns the partitions.
    assert registry_offsets(zk, group, topic, 3) == {0: 5, 1: 5, 2: 5}
    fresh = produce(paper_cluster.bootstrap, topic, 3, 4, "new")
    got = poll_until([consumer], len(fresh))
    assert sorted(r.value.decode() for r in got) == sorted(fresh)  # type: ignore[union-attr]
    assert consumer.poll(300) == []
    consumer.commit()
    assert registry_offsets(zk, group, topic, 3) == {0: 9, 1: 9, 2: 9}
    consumer.close()
    assert registered(zk, group) == [] and owners(zk, group, topic) == {}

    # A later member of the group starts at the group's offsets, not at smallest.
    later = new_consumer(in_process, paper_cluster, group, topic, auto_offset_reset="smallest")
    last = produce(paper_cluster.bootstrap, topic, 3, 1, "last")
    got = poll_until([later], len(last))
    assert sorted(r.value.decode() for r in got) == sorted(last)  # type: ignore[union-attr]


def test_a_partition_held_by_another_consumer_fails_after_bounded_retries_then_is_claimed(
        in_process: list[ZooKeeperConsumer], paper_cluster: PaperCluster, zk: KazooClient,
        group: str) -> None:
    topic = create_topic(paper_cluster.bootstrap, 2)
    squatter = owner_path(group, TopicPartition(topic, 1))
    zk.create(squatter, b"someone-else-0", ephemeral=True, makepath=True)
    with pytest.raises(RebalanceFailed, match=r"still owned by someone-else-0"):
        new_consumer(in_process, paper_cluster, group, topic, rebalance_max_retries=2,
                     rebalance_backoff_ms=50)
    assert registered(zk, group) == [], "a consumer that failed to start must leave"

    # With retries left, the consumer claims the partition once the holder releases it.
    result: list[object] = []
    starter = threading.Thread(daemon=True, target=lambda: result.append(
        new_consumer(in_process, paper_cluster, group, topic, rebalance_max_retries=50,
                     rebalance_backoff_ms=1000)))
    starter.start()
    wait_for(lambda: registered(zk, group), "the second consumer to register")
    zk.delete(squatter)
    starter.join(30)
    assert result and isinstance(result[0], ZooKeeperConsumer), "still not started"
    assert result[0].assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}


def test_topic_creation_and_new_partitions_trigger_a_rebalance(
        in_process: list[ZooKeeperConsumer], paper_cluster: PaperCluster, group: str) -> None:
    topic = f"later-{uuid.uuid4().hex[:8]}"
    consumer = new_consumer(in_process, paper_cluster, group, topic,
                            auto_offset_reset="smallest")
    assert consumer.assignment() == set(), "the topic does not exist yet"
    client = admin(paper_cluster.bootstrap)
    client.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    wait_for(lambda: consumer.assignment() == {TopicPartition(topic, p) for p in range(2)},
             "the new topic's partitions", describe=lambda: f"{consumer.assignment()}")
    client.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    wait_for(lambda: consumer.assignment() == {TopicPartition(topic, p) for p in range(3)},
             "the added partition", describe=lambda: f"{consumer.assignment()}")
    values = produce(paper_cluster.bootstrap, topic, 3, 2, "y")
    got = poll_until([consumer], len(values))
    assert sorted(r.value.decode() for r in got) == sorted(values)  # type: ignore[union-attr]
