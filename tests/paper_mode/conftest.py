"""Fixtures of the paper-mode suite: one odradek broker, a ZooKeeper reader, consumer
processes.

The broker is shared by the whole suite (each test uses its own topic and groups) and uses
``zookeeper.connect`` = a chroot of the session ZooKeeper; the consumers get the same
connect string, so they see the broker registry and topics the broker wrote. Consumers that
a test must be able to SIGKILL run as subprocesses (:mod:`tests.paper_mode.member`); every
process is stopped by PID at teardown.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from odradek.client.metadata import TopicPartition
from odradek.client.zk_registry import offset_path, owners_path
from odradek.local_cluster import (
    BrokerProcess,
    ManagedProcess,
    ZooKeeperProcess,
    free_port,
    wait_until,
)
from tests.harness.fixtures import attach_process_logs
from tests.harness.jsonl import read_json_lines

#: What consumers ask for; the session ZooKeeper (tickTime 3000) may round it up to 6000.
SESSION_MS = 4000


@dataclass
class PaperCluster:
    broker: BrokerProcess
    zk_connect: str

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap


@pytest.fixture(scope="package")
def paper_cluster(zookeeper: ZooKeeperProcess, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[PaperCluster]:
    zk_connect = f"{zookeeper.connect}/paper-{uuid.uuid4().hex[:10]}"
    data_dir = tmp_path_factory.mktemp("paper-broker")
    broker = BrokerProcess(0, free_port(), data_dir, zk_connect,
                           {"offsets.topic.replication.factor": "1"})
    broker.start()
    try:
        broker.wait_ready(60)
        yield PaperCluster(broker, zk_connect)
    finally:
        broker.stop()


@pytest.fixture
def zk(paper_cluster: PaperCluster) -> Iterator[KazooClient]:
    """A plain kazoo client in the suite's chroot, to look at the registries directly."""
    client = KazooClient(hosts=paper_cluster.zk_connect, timeout=10)
    client.start(30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def group() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def owners(client: KazooClient, group: str, topic: str) -> dict[int, str]:
    """The ownership registry of ``topic``: partition -> consumer thread id."""
    path = owners_path(group, topic)
    if client.exists(path) is None:
        return {}
    found = {}
    for child in client.get_children(path):
        data, _ = client.get(f"{path}/{child}")
        found[int(child)] = data.decode()
    return found


def registry_offsets(client: KazooClient, group: str, topic: str,
                     partitions: int) -> dict[int, int | None]:
    out: dict[int, int | None] = {}
    for p in range(partitions):
        path = offset_path(group, TopicPartition(topic, p))
        out[p] = int(client.get(path)[0]) if client.exists(path) else None
    return out


def registered(client: KazooClient, group: str) -> list[str]:
    path = f"/consumers/{group}/ids"
    return sorted(client.get_children(path)) if client.exists(path) else []


@dataclass
class Member:
    """A consumer subprocess and what it reported."""

    name: str
    consumer_id: str
    process: ManagedProcess
    out: Path

    @property
    def thread_id(self) -> str:
        return f"{self.consumer_id}-0"

    def events(self) -> list[dict[str, Any]]:
        return read_json_lines(self.out)

    def records(self) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["event"] == "record"]


MemberFactory = Callable[..., Member]


@pytest.fixture
def members(paper_cluster: PaperCluster, tmp_path: Path, request: pytest.FixtureRequest
            ) -> Iterator[MemberFactory]:
    """``members(group, topic, name, reset="smallest", commit_ms=200)`` starts one consumer."""
    started: list[Member] = []

    def start(group: str, topic: str, name: str, reset: str = "smallest",
              commit_ms: int = 200) -> Member:
        out = tmp_path / f"{name}.events"
        argv = [sys.executable, "-m", "tests.paper_mode.member",
                "--zookeeper", paper_cluster.zk_connect, "--bootstrap", paper_cluster.bootstrap,
                "--topic", topic, "--group", group, "--name", name, "--out", str(out),
                "--session-ms", str(SESSION_MS), "--commit-ms", str(commit_ms),
                "--reset", reset]
        process = ManagedProcess(name, argv, tmp_path / f"{name}.log")
        process.start()
        member = Member(name, f"{group}_{name}", process, out)
        started.append(member)
        return member

    yield start
    attach_process_logs(request, [m.process for m in started])
    for member in started:
        member.process.stop(20)


def create_topic(bootstrap: str, partitions: int) -> str:
    from tests.groups.helpers import create_topic as create

    return create(bootstrap, partitions)


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int,
            tag: str) -> set[str]:
    from tests.groups.helpers import produce as write

    return write(bootstrap, topic, partitions, per_partition, tag)


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 30,
             describe: Callable[[], str] | None = None) -> Any:
    """``wait_until`` whose failure message also shows the current state."""
    try:
        return wait_until(predicate, timeout, what, interval=0.1)
    except AssertionError as exc:
        detail = f"; now: {describe()}" if describe is not None else ""
        raise AssertionError(f"{exc}{detail}") from None
