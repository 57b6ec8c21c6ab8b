"""Traffic for a live cluster whose metrics are looked at (the live metrics tests and
``make dashboards``): a producer and a committing consumer group at a modest, bounded rate,
and a compacted topic with keyed records in small segments so the cleaner has work."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic


class Workload:
    """Produce and consume with a committing group until stopped, at most ``limit_s``."""

    def __init__(self, bootstrap: str, topic: str, group: str, limit_s: float) -> None:
        self.bootstrap, self.topic, self.group, self.limit_s = bootstrap, topic, group, limit_s
        self.produced = 0
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workload", daemon=True)

    def start(self) -> Workload:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30) -> None:
        self.stopping.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20,
                             "acks": "all"})
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                             "auto.offset.reset": "earliest", "auto.commit.interval.ms": 1000})
        consumer.subscribe([self.topic])
        deadline = time.monotonic() + self.limit_s
        try:
            while not self.stopping.is_set() and time.monotonic() < deadline:
                for i in range(50):
                    producer.produce(self.topic, f"event-{i}".encode())
                self.produced += 50
                producer.poll(0)
                consumer.poll(0.1)
                self.stopping.wait(0.1)  # about 500 records/s: traffic, not a load test
        finally:
            producer.flush(10)
            consumer.close()


def create_compacted_topic(bootstrap: str, topic: str = "compacted") -> None:
    """Keyed records in 4 KiB segments of a compacted topic: the cleaner has work."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3, config={
        "cleanup.policy": "compact", "segment.bytes": "4096",
        "min.cleanable.dirty.ratio": "0.01"})])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "batch.size": 1000})
    for i in range(600):
        producer.produce(topic, f"value-{i}".encode() * 4, key=f"key-{i % 10}".encode())
    assert producer.flush(30) == 0
