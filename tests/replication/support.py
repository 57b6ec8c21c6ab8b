"""Helpers for replication tests: topic setup, ZooKeeper state reads, librdkafka clients."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.harness import wait_until

FAST_FAILOVER = {
    "zookeeper_session_timeout_ms": "6000",
    "replica_lag_time_max_ms": "4000",
    "replica_fetch_wait_max_ms": "200",
    "replica_fetch_backoff_ms": "200",
    "offsets_topic_replication_factor": "1",
    # The last broker standing cannot hand leadership to anyone; don't wait 2 x 5 s for it.
    "controlled_shutdown_retry_backoff_ms": "500",
}




def partition_state(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any] | None:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    if zk.exists(path) is None:
        return None
    data, _ = zk.get(path)
    return json.loads(data)


def create_topic(bootstrap: str, name: str, partitions: int = 1, replication: int = 3,
                 config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, replication,
                                            config=config or {})], operation_timeout=30)
    futures[name].result(60)


def wait_for_isr(zk: KazooClient, topic: str, size: int, timeout: float = 30,
                 partition: int = 0) -> dict[str, Any]:
    def full() -> dict[str, Any] | None:
        state = partition_state(zk, topic, partition)
        return state if state is not None and state["leader"] >= 0 and \
            len(state["isr"]) == size else None

    return wait_until(full, timeout, f"{topic}-{partition} ISR of {size}")  # type: ignore[return-value]


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


def read_all(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 60
             ) -> list[bytes]:
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
                    values.append(message.value())
                    positions[message.partition()] = message.offset() + 1
            return all(positions[p] >= ends[p] for p in ends)

        wait_until(done, timeout, f"reading {topic} to its end offsets {ends}", interval=0)
        return values
    finally:
        consumer.close()


def restart_when_deregistered(cluster: Any, zk: KazooClient, broker_id: int,
                              timeout: float = 30) -> None:
    """Start a killed broker once ZooKeeper dropped its old session's registration
    (before that, Kafka and odradek both refuse the broker id as in use)."""
    wait_until(lambda: zk.exists(f"/brokers/ids/{broker_id}") is None, timeout,
               f"broker {broker_id}'s old registration to expire")
    cluster.brokers[broker_id].start()
    cluster.brokers[broker_id].wait_ready(60)
