"""Client-side actions run inside a network namespace (``python -m tests.replication.netns_agent``).

The test process lives in the root namespace and cannot reach the lab's bridge, so every
action against the cluster (probe a port, read partition state from ZooKeeper, produce,
consume) runs as a short-lived process inside one of the lab's hosts. Each prints one JSON
document (or writes JSON lines to a file) and exits; loads are bounded in count and time.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable
from typing import Any


def probe(host: str, port: str) -> None:
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            print(json.dumps(True))
    except OSError:
        print(json.dumps(False))


def state(zk_connect: str, topic: str) -> None:
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zk_connect, timeout=5)
    client.start(10)
    try:
        path = f"/brokers/topics/{topic}/partitions/0/state"
        data = client.get(path)[0] if client.exists(path) else b"null"
        print(data.decode())
    finally:
        client.stop()
        client.close()


def create(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})], operation_timeout=30)
    futures[topic].result(60)
    print(json.dumps("created"))


def produce(bootstrap: str, topic: str, prefix: str, seconds: str, out_path: str) -> None:
    """acks=all idempotent producer: one message every 5 ms for ``seconds``; every delivery
    report (value, offset or error, time) goes to ``out_path`` as a JSON line."""
    from confluent_kafka import Producer

    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
        "linger.ms": 1, "message.timeout.ms": 12000, "request.timeout.ms": 5000,
        "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
        "socket.timeout.ms": 5000,
    })
    with open(out_path, "w") as out:
        def report(err: Any, msg: Any) -> None:
            out.write(json.dumps({
                "value": msg.value().decode(), "offset": msg.offset() if err is None else None,
                "error": str(err) if err is not None else None, "time": time.time(),
            }) + "\n")
            out.flush()

        deadline = time.time() + float(seconds)
        sequence = 0
        while time.time() < deadline and sequence < 20_000:
            producer.produce(topic, f"{prefix}-{sequence}-{time.time():.3f}".encode(),
                             on_delivery=report)
            sequence += 1
            producer.poll(0.005)
        producer.flush(30)
    print(json.dumps(sequence))


def consume(bootstrap: str, topic: str) -> None:
    """Every committed value of partition 0, from the beginning to the high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "netns-verify",
                         "enable.auto.commit": False})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[str] = []
        deadline = time.time() + 60
        while len(values) < high and time.time() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None, "the producer never writes a null value"
                values.append(value.decode())
    finally:
        consumer.close()
    print(json.dumps({"high_watermark": high, "values": values}))


if __name__ == "__main__":
    actions: dict[str, Callable[..., None]] = {
        "probe": probe, "state": state, "create": create, "produce": produce, "consume": consume}
    actions[sys.argv[1]](*sys.argv[2:])
