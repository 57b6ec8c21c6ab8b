"""Helpers for replication tests: topic setup, ZooKeeper state reads, librdkafka clients."""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.harness import wait_until
from tests.harness.kafka import partition_state as partition_state
from tests.harness.kafka import producer as producer
from tests.harness.kafka import read_all as read_all

FAST_FAILOVER = {
    "zookeeper_session_timeout_ms": "6000",
    "replica_lag_time_max_ms": "4000",
    "replica_fetch_wait_max_ms": "200",
    "replica_fetch_backoff_ms": "200",
    "offsets_topic_replication_factor": "1",
    # The last broker standing cannot hand leadership to anyone; don't wait 2 x 5 s for it.
    "controlled_shutdown_retry_backoff_ms": "500",
}






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
