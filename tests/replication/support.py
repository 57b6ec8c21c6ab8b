"""Helpers for replication tests: topic setup, ZooKeeper state reads, librdkafka clients."""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.harness import wait_until
from tests.harness.kafka import FAST_FAILOVER as FAST_FAILOVER
from tests.harness.kafka import partition_state as partition_state
from tests.harness.kafka import producer as producer
from tests.harness.kafka import read_all as read_all


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






def restart_when_deregistered(cluster: Any, zk: KazooClient, broker_id: int,
                              timeout: float = 30) -> None:
    """Start a killed broker once ZooKeeper dropped its old session's registration
    (before that, Kafka and odradek both refuse the broker id as in use)."""
    wait_until(lambda: zk.exists(f"/brokers/ids/{broker_id}") is None, timeout,
               f"broker {broker_id}'s old registration to expire")
    cluster.brokers[broker_id].start()
    cluster.brokers[broker_id].wait_ready(60)


class AcksAllLoad:
    """Continuous idempotent acks=all production of distinct values in a thread."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = producer(bootstrap)
        self.acked: list[bytes] = []
        self.acked_at: list[float] = []  # time.monotonic() of each acknowledgement
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load", daemon=True)

    def _on_delivery(self, err: Any, message: Any) -> None:
        if err is None:
            self.acked.append(message.value())
            self.acked_at.append(time.monotonic())
        else:
            self.errors.append(str(err))

    def _run(self) -> None:
        sequence = 0
        while not self._stop.is_set():
            try:
                self.producer.produce(self.topic, f"m-{sequence}".encode(),
                                      on_delivery=self._on_delivery)
                sequence += 1
            except BufferError:
                self.producer.poll(0.05)
                continue
            self.producer.poll(0)
            if sequence % 50 == 0:
                self.producer.poll(0.005)

    def __enter__(self) -> AcksAllLoad:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        remaining = self.producer.flush(60)
        assert remaining == 0, f"{remaining} messages never resolved"

    def __exit__(self, *exc: object) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(30)
