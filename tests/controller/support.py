"""Helpers for the controller suites: ZooKeeper reads, controller API calls over the wire,
librdkafka clients. Every wait is bounded (``wait_until``); nothing sleeps to synchronise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from kazoo.client import KazooClient

from odradek.local_cluster import LocalCluster
from tests.broker.wire import WireClient
from tests.harness import wait_until
from tests.harness.zk import read_json

FAST = {
    "zookeeper_session_timeout_ms": "6000",
    "replica_lag_time_max_ms": "4000",
    "replica_fetch_wait_max_ms": "200",
    "replica_fetch_backoff_ms": "200",
    "offsets_topic_replication_factor": "1",
    "controlled_shutdown_retry_backoff_ms": "500",
    "auto_leader_rebalance_enable": "false",
}






def state(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any] | None:
    result: dict[str, Any] | None = read_json(
        zk, f"/brokers/topics/{topic}/partitions/{partition}/state"
    )
    return result


def controller_id(zk: KazooClient) -> int | None:
    registration = read_json(zk, "/controller")
    return None if registration is None else int(registration["brokerid"])


def write_topic(zk: KazooClient, name: str, assignment: dict[int, list[int]]) -> None:
    """Create a topic with an explicit assignment, as Kafka's ZK-mode tools do."""
    from odradek.cluster.znodes import (
        encode_entity_config,
        encode_topic_assignment,
        random_kafka_uuid,
    )

    zk.create(f"/config/topics/{name}", encode_entity_config({}))
    zk.create(f"/brokers/topics/{name}", encode_topic_assignment(random_kafka_uuid(), assignment))


def wait_for_state(zk: KazooClient, topic: str, partition: int, what: str,
                   predicate: Any, timeout: float = 30) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        current = state(zk, topic, partition)
        return current if current is not None and predicate(current) else None

    try:
        return wait_until(check, timeout, f"{topic}-{partition}: {what}")  # type: ignore[return-value]
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last state {state(zk, topic, partition)}") from None


def controller_request(cluster: LocalCluster, zk: KazooClient, body: Any) -> Any:
    """Send a controller-only request to the current controller."""
    broker = cluster.brokers[controller_id(zk) or 0]
    with WireClient(broker.port, timeout=60) as client:
        return client.request(body)


def has_log(broker_dir: Path, topic: str, partition: int) -> bool:
    return (broker_dir / "logs" / f"{topic}-{partition}").is_dir()


def producer(bootstrap: str, **extra: Any) -> Producer:
    config = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 2,
        "message.timeout.ms": 60000,
        "retry.backoff.ms": 100,
        "topic.metadata.refresh.interval.ms": 1000,
        "socket.timeout.ms": 10000,
    }
    config.update(extra)
    return Producer(config)


def produce_all(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    errors: list[Any] = []
    p = producer(bootstrap)
    for value in values:
        p.produce(topic, value, partition=partition,
                  on_delivery=lambda err, _m: errors.append(err) if err else None)
        p.poll(0)
    assert p.flush(60) == 0, "messages still in flight"
    assert not errors, f"delivery failed: {errors[:3]}"


def read_all(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 60) -> list[bytes]:
    """Every committed value of ``topic`` (read until each partition's end offset)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "verify",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {}
        for p in range(partitions):
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)
            ends[p] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[bytes] = []
        positions = dict.fromkeys(ends, 0)

        def done() -> bool:
            for message in consumer.consume(500, 0.5):
                if message.error() is None:
                    values.append(message.value() or b"")
                    positions[int(message.partition() or 0)] = int(message.offset() or 0) + 1
            return all(positions[p] >= ends[p] for p in ends)

        wait_until(done, timeout, f"reading {topic} to its end offsets {ends}", interval=0)
        return values
    finally:
        consumer.close()
