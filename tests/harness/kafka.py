"""librdkafka and ZooKeeper helpers shared by the multi-broker suites (replication,
controller, operator, transactions): broker settings for quick failover, partition state as
the controller wrote it, an acks=all idempotent producer, reading a topic back to its end
offsets, and reading what an isolation level lets through."""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from kazoo.client import KazooClient

from odradek.local_cluster import wait_until

# A dead broker noticed in seconds, followers that fetch and fall out of the ISR quickly.
FAST_FAILOVER = {
    "zookeeper_session_timeout_ms": "6000",
    "replica_lag_time_max_ms": "4000",
    "replica_fetch_wait_max_ms": "200",
    "replica_fetch_backoff_ms": "200",
    "offsets_topic_replication_factor": "1",
    # The last broker standing cannot hand leadership to anyone; don't wait 2 x 5 s for it.
    "controlled_shutdown_retry_backoff_ms": "500",
}


def located(message: Message) -> tuple[int, int]:
    """(partition, offset) of a consumed record.

    confluent-kafka types both as optional because an error event carries neither; callers
    check ``message.error()`` first, so a missing one here is a real failure.
    """
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None, message.error()
    return partition, offset

def partition_state(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any] | None:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    if zk.exists(path) is None:
        return None
    data, _ = zk.get(path)
    return json.loads(data)


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
                    values.append(message.value() or b"")
                    positions[int(message.partition() or 0)] = int(message.offset() or 0) + 1
            return all(positions[p] >= ends[p] for p in ends)

        wait_until(done, timeout, f"reading {topic} to its end offsets {ends}", interval=0)
        return values
    finally:
        consumer.close()


def read_values(bootstrap: str, topic: str, partitions: int = 1, *,
                isolation: str = "read_committed", want: int = 0, settle: float = 1.0,
                timeout: float = 20.0) -> list[bytes]:
    """The values ``isolation`` lets through, sorted: read until at least ``want`` arrived and
    then nothing more for ``settle`` seconds, so records that must never show up (aborted,
    still open) have had their chance to."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            if len(values) >= want and time.monotonic() - quiet_since >= settle:
                break
            batch = consumer.consume(num_messages=500, timeout=0.3)
            for message in batch:
                assert message.error() is None, message.error()
                value = message.value()
                assert value is not None
                values.append(value)
            if batch:
                quiet_since = time.monotonic()
    finally:
        consumer.close()
    return sorted(values)
