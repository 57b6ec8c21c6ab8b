"""Replication throttles on real brokers: a throttled reassignment copies at the rate, and
completes with every record; without the rate the same copy is fast.

Two broker processes and ZooKeeper. A partition with a couple of MB on broker 0 gains a
replica on broker 1 (``/admin/reassign_partitions``); both sides are throttled, as
``kafka-reassign-partitions --throttle`` does it (the leader list names broker 0, the
follower list broker 1; the rates are dynamic broker configs). The quota windows are the
shortest Kafka allows to be useful (2 windows of 1 s) so that the copy outlasts the burst a
new rate permits — a rate is measured over at least ``window.num - 1`` windows, so a copy
may start with up to two windows' worth of bytes — and fetches are small so that one
answer cannot overshoot the quota by much. Only lower bounds on time are asserted (with
margin): a loaded machine makes everything slower, never faster.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from odradek.cluster.znodes import encode_entity_config, encode_topic_assignment, random_kafka_uuid
from tests.harness import wait_until
from tests.harness.kafka import FAST_FAILOVER, partition_state, producer, read_all
from tests.harness.zk import zk_client

RATE = 400_000  # bytes/s, leader and follower
FETCH_BYTES = 65_536  # replica.fetch.max.bytes: the most one answer overshoots the quota by
VALUE_BYTES = 4096
VALUES = 500  # 2 MB per topic
COPY_BYTES = VALUES * VALUE_BYTES
SHORTEST_THROTTLED_S = (COPY_BYTES - 2 * RATE - 2 * FETCH_BYTES) / RATE
"""What the quota allows at best: the burst of two windows, then the rate (~2.7 s)."""

BROKER_SETTINGS = {
    **FAST_FAILOVER,
    "replication_quota_window_num": "2",
    "replication_quota_window_size_seconds": "1",
    "replica_fetch_max_bytes": str(FETCH_BYTES),
}
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def _create(zk: Any, topic: str) -> None:
    """``topic``-0 on broker 0 alone, its replicas throttled as --throttle names them for a
    move to [0, 1]."""
    zk.create(f"/config/topics/{topic}", encode_entity_config({
        "leader.replication.throttled.replicas": "0:0",
        "follower.replication.throttled.replicas": "0:1",
    }))
    zk.create(f"/brokers/topics/{topic}",
              encode_topic_assignment(random_kafka_uuid(), {0: [0]}))
    wait_until(lambda: (partition_state(zk, topic, 0) or {}).get("leader") == 0, 30,
               f"{topic}-0 led by broker 0")


def _fill(bootstrap: str, topic: str) -> list[bytes]:
    values = [os.urandom(VALUE_BYTES) for _ in range(VALUES)]  # incompressible
    sender = producer(bootstrap, **{"batch.size": FETCH_BYTES})
    for value in values:
        sender.produce(topic, value, partition=0)
        sender.poll(0)
    assert sender.flush(60) == 0, f"{topic}: messages still in flight"
    return values


def _set_rates(admin: AdminClient, value: str | None) -> None:
    """Both rates on both brokers (None: delete them, which means unlimited)."""
    operation = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    for broker in (0, 1):  # librdkafka sends one broker resource per request
        resource = ConfigResource(ConfigResource.Type.BROKER, str(broker), incremental_configs=[
            ConfigEntry(name, value or "", incremental_operation=operation) for name in RATES])
        admin.incremental_alter_configs([resource])[resource].result(20)


def _copy_seconds(zk: Any, topic: str) -> float:
    """Move ``topic``-0 to [0, 1]; seconds until broker 1 has it all (joined the ISR)."""
    started = time.monotonic()
    zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [0, 1]}]}).encode())
    wait_until(lambda: 1 in (partition_state(zk, topic, 0) or {}).get("isr", ()), 60,
               f"broker 1 catching up on {topic}-0")
    elapsed = time.monotonic() - started
    wait_until(lambda: zk.exists("/admin/reassign_partitions") is None, 30,
               f"the reassignment of {topic}-0 completing")
    return elapsed


def test_a_throttled_reassignment_copies_at_the_rate_and_completes(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(2, **BROKER_SETTINGS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    with zk_client(cluster.zookeeper_connect) as zk:
        written = {}
        for topic in ("throttled", "unthrottled"):
            _create(zk, topic)
            written[topic] = _fill(cluster.bootstrap, topic)

        _set_rates(admin, str(RATE))
        throttled = _copy_seconds(zk, "throttled")
        assert throttled >= 0.9 * SHORTEST_THROTTLED_S, (
            f"{COPY_BYTES} bytes copied in {throttled:.2f}s at {RATE} bytes/s: the quota "
            f"allows no less than {SHORTEST_THROTTLED_S:.2f}s")

        _set_rates(admin, None)
        unthrottled = _copy_seconds(zk, "unthrottled")  # same replicas named, no rate
        assert unthrottled < throttled, (
            f"without a rate the copy took {unthrottled:.2f}s, throttled {throttled:.2f}s")

        cluster.brokers[0].stop()  # broker 1 leads both now: read its copies
        for topic, values in written.items():
            assert read_all(cluster.brokers[1].bootstrap, topic) == values, (
                f"{topic}: broker 1's copy differs from what was written")
