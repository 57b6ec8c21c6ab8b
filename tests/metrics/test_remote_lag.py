"""Consumer lag of partitions led by other brokers than the group's coordinator.

Three in-process brokers (real ZooKeeper, real confluent-kafka clients); the offsets topic
has one partition, so one broker coordinates the group, and the topic's partitions
(replication factor 1) are spread over all three: the coordinator hosts only some of their
logs and must ask the leaders of the others (ListOffsets) for their high watermarks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.cli.main import cli
from odradek.metrics import BrokerMetrics
from tests.broker.conftest import wait_until_true
from tests.broker.inprocess import InProcessBroker

PARTITIONS = 6
GROUP = "remote-lag"


def _three_brokers(start_broker: Callable[..., InProcessBroker]) -> list[InProcessBroker]:
    return [start_broker(broker_id, offsets_topic_num_partitions="1",
                         group_initial_rebalance_delay_ms="0") for broker_id in range(3)]


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    return {p.id: p.leader for p in metadata.topics[topic].partitions.values()}


def _coordinator(brokers: list[InProcessBroker]) -> InProcessBroker:
    for broker in brokers:
        assert broker.broker is not None
        coordinator = broker.broker.services.group_coordinator
        if coordinator is not None and any(
                g.group_id == GROUP for g in broker.call(coordinator.loaded_groups)):
            return broker
    raise AssertionError("no broker coordinates the group")


def _metrics(broker: InProcessBroker) -> BrokerMetrics:
    assert broker.broker is not None
    return broker.broker.metrics


def test_coordinator_exports_lag_of_every_partition_led_anywhere(
        start_broker: Callable[..., InProcessBroker], topic_name: str) -> None:
    brokers = _three_brokers(start_broker)
    bootstrap = ",".join(b.bootstrap for b in brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic_name, PARTITIONS, 1)])[topic_name].result(30)
    wait_until_true(lambda: set(_leaders(bootstrap, topic_name).values()) == {0, 1, 2}, 30,
                    "partitions led by all three brokers")
    leaders = _leaders(bootstrap, topic_name)
    produced = {p: 20 + 7 * p for p in range(PARTITIONS)}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, count in produced.items():
        for i in range(count):
            producer.produce(topic_name, f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0

    # The group consumes a few records of every partition and commits where it stands.
    committed = {p: 3 + p for p in range(PARTITIONS)}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic_name, p, 0) for p in range(PARTITIONS)])
    read = 0
    deadline = time.monotonic() + 30
    while read < sum(committed.values()) and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            read += 1
    consumer.commit(offsets=[TopicPartition(topic_name, p, o) for p, o in committed.items()],
                    asynchronous=False)
    consumer.close()

    coordinator = _coordinator(brokers)
    assert coordinator.broker is not None
    own = coordinator.broker.broker_id
    remote = [p for p, leader in leaders.items() if leader != own]
    assert len(remote) >= 2 and {leaders[p] for p in remote} == {0, 1, 2} - {own}

    metrics = _metrics(coordinator)
    rows = {p: {"group": GROUP, "topic": topic_name, "partition": str(p)}
            for p in range(PARTITIONS)}
    wait_until_true(
        lambda: all(metrics.sample("odradek_consumer_group_lag_records", rows[p]) is not None
                    for p in range(PARTITIONS)), 30, "a lag series for every partition")
    for p in range(PARTITIONS):
        assert metrics.sample("odradek_consumer_group_committed_offset", rows[p]) == committed[p]
        assert metrics.sample("odradek_consumer_group_log_end_offset", rows[p]) == produced[p]
        assert metrics.sample("odradek_consumer_group_lag_records", rows[p]) == \
            produced[p] - committed[p], p
    age = metrics.sample("odradek_consumer_lag_end_offsets_age_seconds")
    assert age is not None and 0 <= age < 10
    # The other brokers coordinate nothing: no lag series there.
    for broker in brokers:
        if broker is not coordinator:
            assert _metrics(broker).sample("odradek_consumer_group_lag_records",
                                           rows[0]) is None

    # The same numbers as `odradek groups describe` (kafka-consumer-groups --describe).
    result = CliRunner().invoke(cli, ["groups", "--bootstrap-server", bootstrap,
                                      "--output", "json", "describe", "--group", GROUP])
    assert result.exit_code == 0, result.output
    described = json.loads(result.output)[0]["partitions"]
    assert len(described) == PARTITIONS
    for row in described:
        labels = rows[row["partition"]]
        assert metrics.sample("odradek_consumer_group_lag_records", labels) == row["lag"]
        assert metrics.sample("odradek_consumer_group_log_end_offset", labels) == \
            row["log_end_offset"]
