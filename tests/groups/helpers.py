"""Helpers and fixtures for the consumer-group suite: brokers tuned for fast rebalances,
member processes.

Brokers run with ``group.initial.rebalance.delay.ms=0`` and a 1 s minimum session timeout so
members may use short sessions (6 s here); ``offsets.topic.replication.factor`` is 1 on
single-broker tests (Kafka refuses to create the offsets topic with fewer live brokers).
Members are subprocesses (:mod:`tests.groups.member`) so a test can SIGKILL one; every
member a test starts is stopped by PID at teardown.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.local_cluster import BrokerProcess, ManagedProcess, wait_until
from tests.harness.fixtures import BrokerFactory, attach_process_logs
from tests.harness.jsonl import read_json_lines

REPO_ROOT = Path(__file__).resolve().parents[2]
SESSION_MS = 6000

# broker_factory / cluster_factory keyword overrides (underscores become dots).
FAST_GROUPS = {
    "group_initial_rebalance_delay_ms": "0",
    "group_min_session_timeout_ms": "1000",
    "offsets_topic_num_partitions": "4",
    "controlled_shutdown_retry_backoff_ms": "500",
}
SINGLE_BROKER = {**FAST_GROUPS, "offsets_topic_replication_factor": "1"}


@pytest.fixture
def group_broker(broker_factory: BrokerFactory) -> BrokerProcess:
    return broker_factory(0, **SINGLE_BROKER)


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, partitions: int, replication: int = 1,
                 timeout: float = 30) -> str:
    name = f"groups-{uuid.uuid4().hex[:10]}"
    client = admin(bootstrap)
    client.create_topics([NewTopic(name, partitions, replication)],
                         operation_timeout=timeout)[name].result(timeout)

    def has_leaders() -> bool:
        info = client.list_topics(name, timeout=5).topics.get(name)
        return (info is not None and info.error is None and len(info.partitions) == partitions
                and all(p.leader >= 0 for p in info.partitions.values()))

    wait_until(has_leaders, timeout, f"leaders for every partition of {name}", interval=0.1)
    return name


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int,
            tag: str = "m") -> set[str]:
    """Write ``per_partition`` records to each partition; returns their values."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = set()
    for partition in range(partitions):
        for index in range(per_partition):
            value = f"{tag}-{partition}-{index}"
            producer.produce(topic, value.encode(), partition=partition)
            values.add(value)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} records were not delivered"
    return values


@dataclass
class Member:
    """A member subprocess and the events it reported."""

    process: ManagedProcess
    out: Path
    client: str

    def events(self) -> list[dict[str, Any]]:
        return read_json_lines(self.out)

    def assignment(self) -> list[int] | None:
        """The partitions last handed to the application (None before the first)."""
        current = None
        for event in self.events():
            if event["event"] == "assigned":
                current = event["partitions"]
            elif event["event"] == "revoked":
                current = None
        return current

    def assignments(self) -> int:
        return sum(1 for e in self.events() if e["event"] == "assigned")

    def records(self) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["event"] == "record"]

    @property
    def running(self) -> bool:
        return self.process.running

    def kill(self) -> None:
        self.process.kill()

    def stop(self) -> None:
        self.process.stop(20)


MemberFactory = Callable[..., Member]


@pytest.fixture
def members(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MemberFactory]:
    """``members(client, bootstrap, topic, group, instance_id=None)`` starts one member."""
    started: list[Member] = []

    def start(client: str, bootstrap: str, topic: str, group: str,
              instance_id: str | None = None, session_ms: int = SESSION_MS,
              name: str | None = None) -> Member:
        name = name or f"member-{len(started)}-{client}"
        out = tmp_path / f"{name}.events"
        argv = [sys.executable, "-m", "tests.groups.member", "--client", client,
                "--bootstrap", bootstrap, "--topic", topic, "--group", group,
                "--out", str(out), "--session-ms", str(session_ms)]
        if instance_id:
            argv += ["--instance-id", instance_id]
        process = ManagedProcess(name, argv, tmp_path / f"{name}.log")
        process.start()
        member = Member(process, out, client)
        started.append(member)
        return member

    yield start
    attach_process_logs(request, [m.process for m in started])
    for member in started:
        member.stop()


def wait_for_stable_assignment(group: list[Member], partitions: int,
                               timeout: float = 60) -> dict[int, Member]:
    """Wait until the live members' latest assignments cover every partition exactly once."""

    def covered() -> dict[int, Member] | None:
        owners: dict[int, Member] = {}
        for member in group:
            assigned = member.assignment()
            if assigned is None:
                return None
            for partition in assigned:
                if partition in owners:
                    return None
                owners[partition] = member
        return owners if sorted(owners) == list(range(partitions)) else None

    def describe() -> str:
        return "; ".join(f"{m.process.name}: {m.assignment()}" for m in group)

    try:
        found = wait_until(covered, timeout, "every partition owned by exactly one member",
                           interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; assignments: {describe()}") from None
    assert isinstance(found, dict)
    return found


def consumed_values(group: list[Member]) -> set[str]:
    return {record["v"] for member in group for record in member.records()}


def wait_for_values(group: list[Member], expected: set[str], timeout: float,
                    what: str) -> None:
    def done() -> bool:
        return expected <= consumed_values(group)

    try:
        wait_until(done, timeout, what, interval=0.1)
    except AssertionError as exc:
        missing = sorted(expected - consumed_values(group))
        raise AssertionError(f"{exc}; {len(missing)} missing, e.g. {missing[:5]}") from None


def committed_offsets(bootstrap: str, group: str, topic: str,
                      partitions: int) -> dict[int, int]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        found = consumer.committed(
            [confluent_kafka.TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}
