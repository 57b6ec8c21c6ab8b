"""Group consumers (classic protocol). odradek has no group coordinator yet: these run against
Apache Kafka only."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from odradek.client import AdminClient, Consumer, Producer, TopicPartition

from .conftest import Target, create_topic

PARTITIONS = 6


@pytest.fixture
def bootstrap(target: Target) -> str:
    return target.bootstrap


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_three_members_own_every_partition_once(bootstrap: str, strategy: str) -> None:
    topic = create_topic(bootstrap, f"g-{uuid.uuid4().hex[:8]}", PARTITIONS)
    group = f"grp-{uuid.uuid4().hex[:8]}"
    with Producer(bootstrap) as producer:
        for i in range(600):
            producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
    consumers = [Consumer(topic, bootstrap_servers=bootstrap, group_id=group,
                          auto_offset_reset="earliest", heartbeat_interval_ms=300,
                          partition_assignment_strategy=[strategy]) for _ in range(3)]
    seen: dict[int, set[tuple[int, int]]] = {i: set() for i in range(3)}
    stop = threading.Event()

    def run(i: int) -> None:
        while not stop.is_set():
            for r in consumers[i].poll(200):
                seen[i].add((r.partition, r.offset))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assignments = [c.assignment() for c in consumers]
            owned = [tp for a in assignments for tp in a]
            total = set().union(*seen.values())
            if len(owned) == PARTITIONS and len(set(owned)) == PARTITIONS and \
                    all(assignments) and len(total) == 600:
                break
            time.sleep(0.1)  # polling the observable state, bounded by the deadline
        assignments = [c.assignment() for c in consumers]
        owned = [tp for a in assignments for tp in a]
        assert sorted(owned) == [TopicPartition(topic, p) for p in range(PARTITIONS)], \
            f"assignments {assignments}"
        assert all(assignments), f"a member got nothing: {assignments}"
        assert len(set().union(*seen.values())) == 600
    finally:
        stop.set()
        for t in threads:
            t.join()
        for c in consumers:
            c.close()


def test_commit_and_resume(bootstrap: str) -> None:
    topic = create_topic(bootstrap, f"c-{uuid.uuid4().hex[:8]}", 2)
    group = f"grp-{uuid.uuid4().hex[:8]}"
    with Producer(bootstrap) as producer:
        producer.send(topic, [f"v{i}".encode() for i in range(100)], partition=0)
    first = Consumer(topic, bootstrap_servers=bootstrap, group_id=group,
                     auto_offset_reset="earliest", enable_auto_commit=False)
    got: list = []
    deadline = time.monotonic() + 30
    while len(got) < 40 and time.monotonic() < deadline:
        got += first.poll(500, max_records=40 - len(got))
    first.commit({TopicPartition(topic, 0): got[-1].offset + 1})
    assert first.committed(TopicPartition(topic, 0)) == 40
    first.close()
    second = Consumer(topic, bootstrap_servers=bootstrap, group_id=group,
                      auto_offset_reset="earliest")
    record = None
    deadline = time.monotonic() + 30
    while record is None and time.monotonic() < deadline:
        records = second.poll(500)
        record = records[0] if records else None
    second.close()
    assert record is not None and record.offset == 40
    admin = AdminClient(bootstrap)
    try:
        assert admin.list_group_offsets(group)[TopicPartition(topic, 0)] >= 40
        assert group in [g.group_id for g in admin.list_groups()]
        admin.alter_group_offsets(group, {TopicPartition(topic, 0): 5})
        assert admin.list_group_offsets(group)[TopicPartition(topic, 0)] == 5
        admin.delete_groups([group])
        assert group not in [g.group_id for g in admin.list_groups()]
    finally:
        admin.close()
