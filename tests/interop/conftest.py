"""Fixtures for the interop suite: the broker under test (the *target*) and Apache Kafka.

The target is odradek by default. ``ODRADEK_INTEROP_TARGET=apache`` runs the very same tests
against Apache Kafka 3.9 (ZooKeeper mode, jars from Maven Central), which is how the suite
itself is validated: a test that fails on odradek but passes on Apache Kafka points at the
broker, not at the test. ``ODRADEK_INTEROP_BOOTSTRAP=host:port`` uses an already running
broker instead of starting one (log-directory checks are then skipped).

One target broker serves the whole session (each test uses its own topics), so the suite
does not pay a JVM or broker start per test; a target that dies fails the next test with
its log tail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.local_cluster import BrokerProcess, ManagedProcess, ZooKeeperProcess, free_port
from tests.harness.apache_kafka import ApacheKafka, KafkaBrokerProcess
from tests.harness.fixtures import attach_process_logs

TARGET_ENV = "ODRADEK_INTEROP_TARGET"
BOOTSTRAP_ENV = "ODRADEK_INTEROP_BOOTSTRAP"
TARGETS = ("odradek", "apache")

# Settings both brokers get, so a test sees the same behaviour on either.
COMMON_BROKER_CONFIG = {
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    # one broker: the internal topics (groups, transactions) must fit it, as in Kafka's
    # own single-node server.properties
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


@dataclass
class Target:
    """The broker the interop tests talk to."""

    name: str  # "odradek", "apache" or "external"
    bootstrap: str
    process: ManagedProcess | None = None
    log_dir: Path | None = None

    def check_alive(self) -> None:
        if self.process is not None and not self.process.running:
            pytest.fail(f"the {self.name} target broker has exited:\n"
                        f"{self.process.log_tail(80)}")

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, partitions: int = 1, prefix: str = "interop",
                     config: dict[str, str] | None = None, timeout: float = 30.0) -> str:
        """Create a fresh topic through the CreateTopics API and wait until every partition
        has a leader in Metadata. Returns its name."""
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        admin = self.admin()
        futures = admin.create_topics(
            [NewTopic(name, partitions, 1, config=config or {})], operation_timeout=timeout,
            request_timeout=timeout)
        futures[name].result(timeout)
        wait_for_leaders(admin, name, partitions, timeout)
        return name

    def partition_dir(self, topic: str, partition: int) -> Path:
        if self.log_dir is None:
            pytest.skip("the target's log directory is unknown (external broker)")
        return self.log_dir / f"{topic}-{partition}"


def wait_for_leaders(admin: AdminClient, topic: str, partitions: int, timeout: float) -> None:
    from odradek.local_cluster import wait_until

    def ready() -> bool:
        meta = admin.list_topics(topic, timeout=5)
        info = meta.topics.get(topic)
        if info is None or info.error is not None or len(info.partitions) != partitions:
            return False
        return all(p.leader >= 0 and p.error is None for p in info.partitions.values())

    wait_until(ready, timeout, f"every partition of {topic} to have a leader", interval=0.1)


def target_name() -> str:
    name = os.environ.get(TARGET_ENV, "odradek").strip().lower()
    if name not in TARGETS:
        raise pytest.UsageError(f"{TARGET_ENV} must be one of {', '.join(TARGETS)}, got {name!r}")
    return name


@pytest.fixture(scope="session")
def apache_kafka(kafka_jars: ApacheKafka) -> ApacheKafka:
    """Apache Kafka's jars (the harness's ``kafka_jars``), by the suite's own name."""
    return kafka_jars


@pytest.fixture(scope="session")
def _session_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    external = os.environ.get(BOOTSTRAP_ENV)
    if external:
        yield Target("external", external)
        return
    name = target_name()
    zookeeper: ZooKeeperProcess = request.getfixturevalue("zookeeper")
    chroot = f"/interop-{name}-{uuid.uuid4().hex[:8]}"
    data = tmp_path_factory.mktemp(f"interop-{name}")
    process: KafkaBrokerProcess | BrokerProcess
    if name == "apache":
        kafka: ApacheKafka = request.getfixturevalue("apache_kafka")
        process = kafka.broker(zookeeper.connect + chroot, free_port(), data / "kafka-logs",
                               overrides=COMMON_BROKER_CONFIG)
        log_dir = process.log_dir
    else:
        process = BrokerProcess(0, free_port(), data, zookeeper.connect + chroot,
                                dict(COMMON_BROKER_CONFIG))
        log_dir = data / "logs"
    try:
        process.start()
        process.wait_ready(90)
        yield Target(name, process.bootstrap, process, log_dir)
    finally:
        process.stop()


@pytest.fixture
def target(_session_target: Target, request: pytest.FixtureRequest) -> Iterator[Target]:
    """The broker under test (session-wide); its log is attached to failing tests."""
    _session_target.check_alive()
    yield _session_target
    if _session_target.process is not None:
        attach_process_logs(request, [_session_target.process])


@pytest.fixture
def admin(target: Target) -> AdminClient:
    return target.admin()


__all__ = ["Target", "confluent_kafka", "wait_for_leaders"]
