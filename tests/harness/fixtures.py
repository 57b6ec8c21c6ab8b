"""pytest fixtures: a session ZooKeeper, per-test chroots, brokers and local clusters, and
clusters whose hosts are network namespaces.

Every process a fixture starts is stopped by PID at teardown. When a test fails, the last
lines of every process log it used are attached to the report ("Captured process logs"), so
a CI failure explains itself.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from odradek.local_cluster import (
    BrokerProcess,
    LocalCluster,
    ManagedProcess,
    ZooKeeperProcess,
    free_port,
)
from odradek.zookeeper import JavaNotFound, ZooKeeperJarsNotFound
from tests.harness.apache_kafka import ApacheKafka
from tests.harness.kafka_kraft import FAST_CONSUMER_GROUPS, KAFKA_4, KRaftKafkaProcess
from tests.harness.netns import NetworkLab
from tests.harness.netns_cluster import NetnsCluster


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


def attach_process_logs(request: pytest.FixtureRequest, processes: list[ManagedProcess]) -> None:
    report = getattr(request.node, "rep_call", None)
    if report is None or not report.failed:
        return
    for process in processes:
        report.sections.append(
            (f"Captured process log: {process.name} ({process.log_path})", process.log_tail(200))
        )


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperProcess]:
    """One real Apache ZooKeeper server for the whole test session."""
    data_dir = tmp_path_factory.mktemp("zookeeper")
    try:
        server = ZooKeeperProcess(free_port(), data_dir)
    except (JavaNotFound, ZooKeeperJarsNotFound) as exc:
        pytest.fail(f"cannot start the embedded ZooKeeper: {exc}")
    server.start()
    try:
        server.wait_ready(90)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kafka_jars() -> ApacheKafka:
    """Apache Kafka's jars (its Java tools and clients), fetched from Maven Central once;
    the test skips, saying why, where they cannot be had."""
    kafka = ApacheKafka()
    if kafka.fetch_jars() is None:
        pytest.skip(f"Apache Kafka {kafka.version} is unavailable: {kafka.unavailable_reason}")
    return kafka


@pytest.fixture
def zk_connect(zookeeper: ZooKeeperProcess) -> str:
    """A connect string with a fresh chroot, so tests never see each other's znodes."""
    return f"{zookeeper.connect}/t-{uuid.uuid4().hex[:12]}"


BrokerFactory = Callable[..., BrokerProcess]

SINGLE_NODE_DEFAULTS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


@pytest.fixture
def broker_factory(
    zk_connect: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[BrokerFactory]:
    """Start broker processes on free ports: ``broker_factory(broker_id=0, **overrides)``.

    Override keys use underscores for dots (``log_segment_bytes="1048576"``).
    """
    started: list[BrokerProcess] = []

    def start(broker_id: int = 0, wait: bool = True, **overrides: str) -> BrokerProcess:
        # Kafka's own single-node server.properties sets the internal topics' replication to 1.
        props = dict(SINGLE_NODE_DEFAULTS)
        props.update({key.replace("_", "."): str(value) for key, value in overrides.items()})
        process = BrokerProcess(broker_id, free_port(), tmp_path / f"broker-{broker_id}",
                                zk_connect, props)
        started.append(process)
        process.start()
        if wait:
            process.wait_ready(60)
        return process

    yield start
    attach_process_logs(request, list(started))
    for process in started:
        process.stop()


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    """One running broker (id 0) with its own ZooKeeper chroot and data directory."""
    return broker_factory(0)


ClusterFactory = Callable[..., LocalCluster]


@pytest.fixture
def cluster_factory(
    zookeeper: ZooKeeperProcess, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ClusterFactory]:
    """Start ``size`` brokers sharing a fresh chroot of the session ZooKeeper."""
    clusters: list[LocalCluster] = []

    def start(size: int = 3, **overrides: str) -> LocalCluster:
        props = {key.replace("_", "."): str(value) for key, value in overrides.items()}
        cluster = LocalCluster(
            size,
            tmp_path / f"cluster-{len(clusters)}",
            overrides=props,
            chroot=f"/t-{uuid.uuid4().hex[:12]}",
            external_zookeeper=zookeeper.connect,
            ports=[free_port() for _ in range(size)],
        )
        clusters.append(cluster)
        cluster.start()
        return cluster

    yield start
    for cluster in clusters:
        attach_process_logs(request, list(cluster.brokers))
        cluster.stop()



NetnsClusterFactory = Callable[..., NetnsCluster]


@pytest.fixture
def netns_cluster_factory(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[NetnsClusterFactory]:
    """Start ZooKeeper and ``size`` brokers, each in its own network namespace, plus a
    client host (:class:`~tests.harness.netns_cluster.NetnsCluster`). Needs root and
    iproute2: skip with :func:`tests.harness.netns.netns_unavailable_reason` first."""
    with contextlib.ExitStack() as stack:
        clusters: list[NetnsCluster] = []

        def start(size: int = 3, **overrides: str) -> NetnsCluster:
            lab = stack.enter_context(NetworkLab())
            props = {key.replace("_", "."): str(value) for key, value in overrides.items()}
            cluster = NetnsCluster(lab, tmp_path / f"netns-cluster-{len(clusters)}", size,
                                   props)
            clusters.append(cluster)
            cluster.start()
            return cluster

        yield start
        for cluster in clusters:
            attach_process_logs(request, cluster.processes())
            cluster.stop()


@pytest.fixture(scope="session")
def kafka_4_kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftKafkaProcess]:
    """Apache Kafka 4.4 as one KRaft node for the session (the reference for KIP-848 consumer
    groups, which Kafka 3.9 in ZooKeeper mode lacks), with fast consumer-group timers."""
    kafka = ApacheKafka(KAFKA_4)
    if kafka.fetch_jars() is None:
        pytest.skip(f"Apache Kafka {KAFKA_4} unavailable: {kafka.unavailable_reason}")
    node = KRaftKafkaProcess(kafka, free_port(), free_port(),
                             tmp_path_factory.mktemp("kafka-4-kraft"), FAST_CONSUMER_GROUPS)
    node.start()
    try:
        yield node
    finally:
        node.stop()
