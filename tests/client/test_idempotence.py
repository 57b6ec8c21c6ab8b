"""Idempotent producer across a broker restart: every record exactly once, in order."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest

from odradek.client import Consumer, Producer, TopicPartition
from odradek.local_cluster import free_port

from .conftest import create_topic

N = 20_000


def _restart_during_send(bootstrap: str, restart) -> None:
    topic = create_topic(bootstrap, f"idem-{uuid.uuid4().hex[:8]}", 2)
    producer = Producer(bootstrap, linger_ms=2, batch_size=4096, retry_backoff_ms=50,
                        request_timeout_ms=5_000)
    futures = []
    halfway = threading.Event()

    def restarter() -> None:
        halfway.wait(60)
        restart()

    thread = threading.Thread(target=restarter)
    thread.start()
    try:
        for i in range(N):
            futures.append(producer.send(topic, f"{i}".encode(), key=f"{i % 50}".encode()))
            if i == N // 3:
                producer.flush()
                halfway.set()
        thread.join()
        producer.flush(120)
        errors = [f.exception(0) for f in futures if f.exception(0) is not None]
        assert not errors, f"{len(errors)} records failed, first: {errors[0]}"
    finally:
        halfway.set()
        thread.join()
        producer.close()
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    values: list[int] = []
    try:
        tps = [TopicPartition(topic, p) for p in range(2)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        assert sum(ends.values()) == N, f"log holds {sum(ends.values())} records, sent {N}"
        per_partition: dict[int, list[int]] = {0: [], 1: []}
        while len(values) < N:
            records = consumer.poll(1000)
            assert records, f"stuck at {len(values)} records"
            for r in records:
                assert r.value is not None
                values.append(int(r.value))
                per_partition[r.partition].append(int(r.value))
    finally:
        consumer.close()
    assert sorted(values) == list(range(N)), "records lost or duplicated"
    for sent in per_partition.values():
        by_key: dict[int, list[int]] = {}
        for v in sent:
            by_key.setdefault(v % 50, []).append(v)
        assert all(vs == sorted(vs) for vs in by_key.values()), "order broken within a key"


def test_idempotent_producer_survives_apache_kafka_restart(
        zookeeper, tmp_path: Path) -> None:
    from tests.harness.apache_kafka import ApacheKafka

    kafka = ApacheKafka()
    if kafka.fetch_jars() is None:
        pytest.skip(kafka.unavailable_reason or "Apache Kafka unavailable")
    broker = kafka.broker(f"{zookeeper.connect}/idem-{uuid.uuid4().hex[:8]}", free_port(),
                          tmp_path / "logs")
    broker.start()

    def restart() -> None:
        broker.stop()
        broker.start()

    try:
        _restart_during_send(broker.bootstrap, restart)
    finally:
        broker.stop()


def test_idempotent_producer_survives_odradek_restart(broker_factory) -> None:
    broker = broker_factory(0)

    def restart() -> None:
        broker.stop()
        broker.start()
        broker.wait_ready(60)

    _restart_during_send(broker.bootstrap, restart)
