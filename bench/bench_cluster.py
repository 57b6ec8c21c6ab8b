"""Replication cost and failover time on a local 3-broker cluster (real ZooKeeper).

* ``cluster.produce.rf3_acks_all.msgs`` / ``.p99_ms``: idempotent acks=all produce
  throughput and per-message delivery latency to an RF=3 topic, compared in the same run
  with an RF=1 topic on the same cluster (the reference: what replication costs).
* ``cluster.failover.first_produce_s.p50`` / ``.p99``: from kill -9 of the leader to the
  first acks=all message acknowledged by its successor, over several repeats (bounded:
  each repeat gives up after ``_FAILOVER_LIMIT_S``). Dominated by
  ``zookeeper.session.timeout.ms`` (how long ZooKeeper takes to notice the dead leader).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from bench.common import Context
from odradek.local_cluster import LocalCluster, ZooKeeperProcess, free_port, wait_until

_SESSION_TIMEOUT_MS = 6000
_FAILOVER_LIMIT_S = 60.0
_VALUE = b"x" * 200


def _overrides() -> dict[str, str]:
    return {
        "zookeeper.session.timeout.ms": str(_SESSION_TIMEOUT_MS),
        "replica.lag.time.max.ms": "10000",
        "offsets.topic.replication.factor": "1",
    }


def _create(bootstrap: str, name: str, replication: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, replication)])[name].result(60)


def _producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                     "linger.ms": 5, "message.timeout.ms": 60000, "retry.backoff.ms": 50,
                     "topic.metadata.refresh.interval.ms": 500})


def _throughput(bootstrap: str, topic: str, count: int) -> tuple[float, float]:
    """(messages/s, p99 delivery latency ms) for ``count`` messages."""
    producer = _producer(bootstrap)
    latencies: list[float] = []

    def delivered(err: Any, _msg: Any, sent: float) -> None:
        if err is None:
            latencies.append((time.perf_counter() - sent) * 1000)

    producer.produce(topic, b"warm-up")
    producer.flush(30)
    start = time.perf_counter()
    for _ in range(count):
        sent = time.perf_counter()
        while True:
            try:
                producer.produce(topic, _VALUE,
                                 on_delivery=lambda e, m, s=sent: delivered(e, m, s))
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(120)
    elapsed = time.perf_counter() - start
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99) - 1] if latencies else float("nan")
    return len(latencies) / elapsed, p99


def _state(zk: KazooClient, topic: str) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/0/state")
    return dict(json.loads(data))


def _failover_once(cluster: LocalCluster, zk: KazooClient, topic: str) -> float | None:
    wait_until(lambda: len(_state(zk, topic)["isr"]) == 3, 60, "a full ISR")
    leader = _state(zk, topic)["leader"]
    producer = _producer(cluster.bootstrap)
    producer.produce(topic, b"before")
    producer.flush(30)
    acked: list[float] = []
    cluster.brokers[leader].kill()
    killed = time.perf_counter()
    deadline = killed + _FAILOVER_LIMIT_S
    while not acked and time.perf_counter() < deadline:
        producer.produce(topic, b"probe", on_delivery=lambda e, _m: (
            acked.append(time.perf_counter()) if e is None else None))
        producer.poll(0.05)
    producer.flush(10)
    wait_until(lambda: zk.exists(f"/brokers/ids/{leader}") is None, 60, "deregistration")
    cluster.brokers[leader].start()
    cluster.brokers[leader].wait_ready(60)
    return acked[0] - killed if acked else None


def run(ctx: Context) -> None:
    scratch: Path = ctx.scratch_dir("cluster")
    count = 20000 if ctx.quick else 100000
    repeats = 3 if ctx.quick else 7
    zookeeper = ZooKeeperProcess(free_port(), scratch / "zookeeper")
    zookeeper.start()
    cluster = LocalCluster(3, scratch / "cluster", overrides=_overrides(), chroot="/bench",
                           external_zookeeper=zookeeper.connect,
                           ports=[free_port() for _ in range(3)])
    try:
        zookeeper.wait_ready(60)
        cluster.start()
        _create(cluster.bootstrap, "rf1", 1)
        _create(cluster.bootstrap, "rf3", 3)
        zk = KazooClient(hosts=cluster.zookeeper_connect)
        zk.start(30)
        try:
            wait_until(lambda: len(_state(zk, "rf3")["isr"]) == 3, 60, "rf3 ISR")
            rf1_rate, rf1_p99 = _throughput(cluster.bootstrap, "rf1", count)
            rf3_rate, rf3_p99 = _throughput(cluster.bootstrap, "rf3", count)
            common = {"messages": count, "value_bytes": len(_VALUE), "brokers": 3}
            ctx.report("cluster.produce.rf3_acks_all.msgs", rf3_rate, "msgs/s",
                       reference=rf1_rate, reference_name="RF=1 acks=all, same cluster",
                       goal="higher", **common)
            ctx.report("cluster.produce.rf3_acks_all.p99_ms", rf3_p99, "ms",
                       reference=rf1_p99, reference_name="RF=1 acks=all, same cluster",
                       goal="lower", **common)
            times = [_failover_once(cluster, zk, "rf3") for _ in range(repeats)]
        finally:
            zk.stop()
            zk.close()
        done = sorted(t for t in times if t is not None)
        extra = {"repeats": repeats, "failed": repeats - len(done),
                 "zookeeper_session_timeout_ms": _SESSION_TIMEOUT_MS}
        if done:
            p99 = done[max(int(len(done) * 0.99) - 1, 0)] if len(done) > 1 else done[0]
            ctx.report("cluster.failover.first_produce_s.p50", statistics.median(done), "s",
                       goal="lower", **extra)
            ctx.report("cluster.failover.first_produce_s.p99", p99, "s", goal="lower",
                       **extra)
        else:
            ctx.report("cluster.failover.first_produce_s.p50", None,  # type: ignore[arg-type]
                       "s", goal="lower", error="no repeat completed", **extra)
    finally:
        cluster.stop()
        zookeeper.stop()
