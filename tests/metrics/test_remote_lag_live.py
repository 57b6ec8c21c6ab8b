"""Consumer lag of remote partitions on a live 3-broker cluster, scraped over HTTP.

Real broker processes: the group's coordinator exports a lag series for every partition,
led by any broker, equal to what Apache Kafka's ``kafka-consumer-groups --describe`` shows.
Then the leader of some of those partitions is frozen (SIGSTOP: it keeps its ZooKeeper
session and its sockets accept, but it never answers): scrapes stay fast, its partitions'
last values are served with their age, and dropped once older than the configured maximum.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from odradek.local_cluster import LocalCluster, ZooKeeperProcess, free_port, wait_until
from tests.harness.apache_kafka import ApacheKafka
from tests.harness.fixtures import attach_process_logs

pytestmark = pytest.mark.slow  # three broker processes and a Java tool

PARTITIONS = 6
GROUP = "live-remote-lag"
CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
MAX_AGE_S = 4.0
LAG = "odradek_consumer_group_lag_records"
AGE = "odradek_consumer_lag_end_offsets_age_seconds"


@pytest.fixture
def cluster(zookeeper: ZooKeeperProcess, tmp_path: Path,
            request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = LocalCluster(
        3, tmp_path / "cluster", chroot=f"/t-{uuid.uuid4().hex[:12]}",
        external_zookeeper=zookeeper.connect, ports=[free_port() for _ in range(3)],
        metrics_ports=[free_port() for _ in range(3)],
        overrides={
            "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1", "group.initial.rebalance.delay.ms": "0",
            "zookeeper.session.timeout.ms": "30000",  # the frozen broker stays registered
            "metrics.consumer.lag.end.offsets.refresh.ms": "500",
            "metrics.consumer.lag.end.offsets.timeout.ms": "1000",
            "metrics.consumer.lag.end.offsets.max.age.ms": str(int(MAX_AGE_S * 1000)),
        })
    cluster.start()
    try:
        yield cluster
    finally:
        for broker in cluster.brokers:
            if broker.pid is not None and broker.running:
                os.kill(broker.pid, signal.SIGCONT)  # never leave a frozen process behind
        attach_process_logs(request, list(cluster.brokers))
        cluster.stop()


def _scrape(url: str) -> tuple[dict[tuple[str, frozenset[tuple[str, str]]], float], float]:
    """(samples, seconds the scrape took)."""
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    took = time.monotonic() - started
    return ({(s.name, frozenset(s.labels.items())): s.value
             for family in text_string_to_metric_families(text) for s in family.samples},
            took)


def _row(topic: str, partition: int) -> frozenset[tuple[str, str]]:
    return frozenset({"group": GROUP, "topic": topic, "partition": str(partition)}.items())


def test_lag_of_every_partition_matches_kafka_tools_and_survives_a_frozen_leader(
        cluster: LocalCluster) -> None:
    kafka = ApacheKafka()
    if kafka.fetch_jars() is None:
        pytest.skip(f"Apache Kafka {kafka.version} is unavailable: {kafka.unavailable_reason}")
    topic = f"remote-{uuid.uuid4().hex[:8]}"
    bootstrap = cluster.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    produced = {p: 30 + 5 * p for p in range(PARTITIONS)}
    for partition, count in produced.items():
        for i in range(count):
            producer.produce(topic, f"{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    committed = {p: 2 * p + 1 for p in range(PARTITIONS)}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in committed.items()],
                    asynchronous=False)
    consumer.close()
    metadata = admin.list_topics(topic, timeout=30).topics[topic].partitions
    leaders = {p: metadata[p].leader for p in range(PARTITIONS)}

    urls = [broker.metrics_url for broker in cluster.brokers]
    assert all(urls)

    def coordinator() -> int | None:
        for index, url in enumerate(urls):
            assert url is not None
            samples, _ = _scrape(url)
            if ("odradek_consumer_group_members", frozenset({("group", GROUP)})) in samples:
                return index
        return None

    wait_until(lambda: coordinator() is not None, 30, "a coordinator reporting the group",
               interval=0.5)
    own = coordinator()
    assert own is not None
    url = urls[own]
    assert url is not None
    remote = [p for p, leader in leaders.items() if leader != own]
    assert {leaders[p] for p in remote} == {0, 1, 2} - {own}, leaders

    # Every partition has a lag series on the coordinator, equal to the Java tool's LAG.
    wait_until(lambda: all((LAG, _row(topic, p)) in _scrape(url)[0]
                           for p in range(PARTITIONS)), 30, "a lag series per partition",
               interval=0.5)
    samples, _ = _scrape(url)
    proc = kafka.run_java_tool(CONSUMER_GROUP_COMMAND, ["--bootstrap-server", bootstrap,
                                                        "--describe", "--group", GROUP], 120)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    described = {}
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[0] == GROUP and fields[1] == topic:
            described[int(fields[2])] = (int(fields[3]), int(fields[4]), int(fields[5]))
    assert described == {p: (committed[p], produced[p], produced[p] - committed[p])
                         for p in range(PARTITIONS)}, proc.stdout
    for p, (_current, end, lag) in described.items():
        assert samples[(LAG, _row(topic, p))] == lag
        assert samples[("odradek_consumer_group_log_end_offset", _row(topic, p))] == end

    # Freeze the leader of some remote partitions.
    frozen = leaders[remote[0]]
    frozen_partitions = [p for p in range(PARTITIONS) if leaders[p] == frozen]
    pid = cluster.brokers[frozen].pid
    assert pid is not None
    time.sleep(0.6)
    _scrape(url)  # a fresh round (the Java tool took longer than the maximum age)
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(1.0)  # past the refresh interval: the next scrape asks the frozen leader
        samples, took = _scrape(url)
        assert took < 4.0, f"a scrape waited {took:.1f}s on a frozen leader"
        for p in frozen_partitions:  # its last values, served while younger than max age
            assert samples[(LAG, _row(topic, p))] == produced[p] - committed[p]
        assert samples[(AGE, frozenset())] >= 0.5

        durations = [took]

        def dropped() -> bool:
            found, took = _scrape(url)
            durations.append(took)
            return all((LAG, _row(topic, p)) not in found for p in frozen_partitions)

        wait_until(dropped, 20, "the frozen leader's partitions to lose their lag series",
                   interval=0.5)
        assert max(durations) < 4.0, f"scrapes waited on a frozen leader: {durations}"
        samples, _ = _scrape(url)
        for p in set(range(PARTITIONS)) - set(frozen_partitions):
            assert samples[(LAG, _row(topic, p))] == produced[p] - committed[p]
        for p in frozen_partitions:  # the commit is still reported
            assert samples[("odradek_consumer_group_committed_offset",
                            _row(topic, p))] == committed[p]
        assert samples[(AGE, frozenset())] <= MAX_AGE_S
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: all((LAG, _row(topic, p)) in _scrape(url)[0]
                           for p in frozen_partitions), 30, "the leader answering again",
               interval=0.5)
