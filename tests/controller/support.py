"""Helpers for the controller suites: ZooKeeper reads, controller API calls over the wire,
librdkafka clients. Every wait is bounded (``wait_until``); nothing sleeps to synchronise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from odradek.local_cluster import LocalCluster
from tests.broker.wire import WireClient
from tests.harness import wait_until
from tests.harness.kafka import FAST_FAILOVER
from tests.harness.kafka import partition_state as state
from tests.harness.kafka import producer as producer
from tests.harness.kafka import read_all as read_all
from tests.harness.zk import read_json

FAST = {**FAST_FAILOVER, "auto_leader_rebalance_enable": "false"}








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




def produce_all(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    errors: list[Any] = []
    p = producer(bootstrap)
    for value in values:
        p.produce(topic, value, partition=partition,
                  on_delivery=lambda err, _m: errors.append(err) if err else None)
        p.poll(0)
    assert p.flush(60) == 0, "messages still in flight"
    assert not errors, f"delivery failed: {errors[:3]}"

