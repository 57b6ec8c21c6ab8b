"""Replication cost and failover time on a local 3-broker cluster (real ZooKeeper).

* ``cluster.produce.rf3_acks_all.msgs`` / ``.p99_ms``: idempotent acks=all produce
  throughput and per-message delivery latency to an RF=3 topic, compared in the same run
  with an RF=1 topic on the same cluster (the reference: what replication costs).
* ``cluster.failover.*first_produce_s.p50`` / ``.p99``: from kill -9 of a partition leader
  (not the controller) under acks=all (``min.insync.replicas=2``) to the first message
  acknowledged by its successor, over several repeats, beside Apache Kafka 3.9 in ZooKeeper
  mode doing the same kill on the same machine. Measured at the 6 s session timeout the
  other cluster benchmarks use and at the default 18 s (``default_session``). Three
  systems: odradek as configured by default (the controller fails a broker whose
  connections are refused), odradek with ``controller.fast.failover.enable=false``
  (``session_path``: what odradek did before, failover when ZooKeeper expires the dead
  broker's session) and Apache Kafka (the same session-expiry path). Each repeat gives up
  after ``_FAILOVER_LIMIT_S``; the killed broker is restarted once ZooKeeper dropped its
  registration, and the preferred leader is restored before the next kill.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import ElectionType, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from bench.common import Context
from odradek.local_cluster import (
    LocalCluster,
    ManagedProcess,
    ZooKeeperProcess,
    free_port,
    wait_until,
)

_SESSION_TIMEOUT_MS = 6000
_DEFAULT_SESSION_TIMEOUT_MS = 18000  # zookeeper.session.timeout.ms default, Kafka's and ours
_FAILOVER_LIMIT_S = 60.0
_TARGET_S = 2.0  # the failover goal for odradek at default settings
_VALUE = b"x" * 200
_TOPIC = "failover"


def _overrides(session_ms: int = _SESSION_TIMEOUT_MS) -> dict[str, str]:
    return {
        "zookeeper.session.timeout.ms": str(session_ms),
        "replica.lag.time.max.ms": "10000",
        "offsets.topic.replication.factor": "1",
        "auto.leader.rebalance.enable": "false",  # the bench restores leaders itself
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

    def delivered(sent: float, err: Any, _msg: Any) -> None:
        if err is None:
            latencies.append((time.perf_counter() - sent) * 1000)

    producer.produce(topic, b"warm-up")
    producer.flush(30)
    start = time.perf_counter()
    for _ in range(count):
        sent = time.perf_counter()
        while True:
            try:
                producer.produce(topic, _VALUE, on_delivery=functools.partial(delivered, sent))
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


def _measure_throughput(ctx: Context, scratch: Path, zookeeper: ZooKeeperProcess) -> None:
    count = 20000 if ctx.quick else 100000
    with _odradek(scratch / "throughput", zookeeper, _SESSION_TIMEOUT_MS, fast=True) as brokers:
        bootstrap = ",".join(b.bootstrap for b in brokers)  # type: ignore[attr-defined]
        _create(bootstrap, "rf1", 1)
        _create(bootstrap, "rf3", 3)
        with _zk(zookeeper.connect + "/bench-throughput") as zk:
            wait_until(lambda: len(_state(zk, "rf3")["isr"]) == 3, 60, "rf3 ISR")
        rf1_rate, rf1_p99 = _throughput(bootstrap, "rf1", count)
        rf3_rate, rf3_p99 = _throughput(bootstrap, "rf3", count)
    common = {"messages": count, "value_bytes": len(_VALUE), "brokers": 3}
    ctx.report("cluster.produce.rf3_acks_all.msgs", rf3_rate, "msgs/s",
               reference=rf1_rate, reference_name="RF=1 acks=all, same cluster",
               goal="higher", **common)
    ctx.report("cluster.produce.rf3_acks_all.p99_ms", rf3_p99, "ms",
               reference=rf1_p99, reference_name="RF=1 acks=all, same cluster",
               goal="lower", **common)


# -- clusters ------------------------------------------------------------------------------


@contextmanager
def _zk(connect: str) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=connect)
    zk.start(30)
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


@contextmanager
def _odradek(scratch: Path, zookeeper: ZooKeeperProcess, session_ms: int, *,
             fast: bool) -> Iterator[list[ManagedProcess]]:
    chroot = f"/bench-{scratch.name}"
    overrides = {**_overrides(session_ms), "controller.fast.failover.enable": str(fast).lower()}
    cluster = LocalCluster(3, scratch, overrides=overrides, chroot=chroot,
                           external_zookeeper=zookeeper.connect,
                           ports=[free_port() for _ in range(3)])
    try:
        cluster.start()
        yield list(cluster.brokers)
    finally:
        cluster.stop()


@contextmanager
def _apache_kafka(scratch: Path, zookeeper: ZooKeeperProcess,
                  session_ms: int) -> Iterator[list[ManagedProcess]]:
    from tests.harness.apache_kafka import ApacheKafka

    kafka = ApacheKafka()
    kafka.require()
    connect = zookeeper.connect + f"/bench-{scratch.name}"
    overrides = {**_overrides(session_ms), "default.replication.factor": "3"}
    brokers = [kafka.broker(connect, free_port(), scratch / f"kafka-{i}", i, overrides)
               for i in range(3)]
    try:
        for broker in brokers:
            broker.start()
        yield list(brokers)
    finally:
        for broker in brokers:
            broker.stop()


# -- failover ------------------------------------------------------------------------------


def _controller(zk: KazooClient) -> int:
    wait_until(lambda: zk.exists("/controller"), 60, "a controller")
    return int(json.loads(zk.get("/controller")[0])["brokerid"])


def _failover_series(brokers: list[ManagedProcess], connect: str, session_ms: int,
                     repeats: int) -> list[float | None]:
    bootstrap = ",".join(b.bootstrap for b in brokers)  # type: ignore[attr-defined]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    with _zk(connect) as zk:
        controller = _controller(zk)
        others = [b for b in range(3) if b != controller]
        # The preferred leader is never the controller: the common case (one controller,
        # many leaders), and the one Kafka's ZooKeeper mode handles best.
        preferred = others[0]
        topic = NewTopic(_TOPIC, num_partitions=1, replica_assignment=[[*others, controller]],
                         config={"min.insync.replicas": "2"})
        admin.create_topics([topic])[_TOPIC].result(60)
        times: list[float | None] = []
        for _ in range(repeats):
            _restore_leader(admin, zk, preferred)
            times.append(_failover_once(brokers, zk, bootstrap, preferred, session_ms))
    return times


def _restore_leader(admin: AdminClient, zk: KazooClient, preferred: int) -> None:
    """Full ISR, then leadership back on the preferred replica."""
    wait_until(lambda: (s := _state(zk, _TOPIC)) and len(s["isr"]) == 3, 120, "a full ISR")
    if _state(zk, _TOPIC)["leader"] == preferred:
        return
    for attempt in range(20):
        admin.elect_leaders(ElectionType.PREFERRED, [KafkaTopicPartition(_TOPIC, 0)]).result(60)
        try:
            wait_until(lambda: _state(zk, _TOPIC)["leader"] == preferred, 5,
                       f"broker {preferred} leading again")
            return
        except AssertionError:
            if attempt == 19:
                raise


def _failover_once(brokers: list[ManagedProcess], zk: KazooClient, bootstrap: str,
                   leader: int, session_ms: int) -> float | None:
    producer = _producer(bootstrap)
    producer.produce(_TOPIC, b"before")
    producer.flush(30)
    acked: list[float] = []
    brokers[leader].kill()
    killed = time.perf_counter()
    deadline = killed + _FAILOVER_LIMIT_S
    while not acked and time.perf_counter() < deadline:
        producer.produce(_TOPIC, b"probe", on_delivery=lambda e, _m: (
            acked.append(time.perf_counter()) if e is None else None))
        producer.poll(0.05)
    producer.flush(10)
    wait_until(lambda: zk.exists(f"/brokers/ids/{leader}") is None,
               session_ms / 1000 * 3 + 30, "deregistration")
    brokers[leader].start()
    brokers[leader].wait_ready(120)  # type: ignore[attr-defined]
    return acked[0] - killed if acked else None


def _report_series(ctx: Context, name: str, times: list[float | None],
                   reference: list[float | None] | None, session_ms: int,
                   system: str = "odradek", **extra: Any) -> None:
    done = sorted(t for t in times if t is not None)
    ref = sorted(t for t in (reference or []) if t is not None)
    info = {"repeats": len(times), "failed": len(times) - len(done),
            "zookeeper_session_timeout_ms": session_ms, **extra}
    for stat in ("p50", "p99"):
        if not done:
            ctx.report(f"{name}.{stat}", None, "s", goal="lower", system=system,
                       error="no repeat completed", **info)
            continue
        value = _percentile(done, stat)
        ref_value = _percentile(ref, stat) if ref else None
        ctx.report(f"{name}.{stat}", value, "s", reference=ref_value,
                   reference_name="Apache Kafka 3.9 (ZooKeeper mode)" if ref_value else None,
                   goal="lower", system=system, **info)


def _percentile(values: list[float], stat: str) -> float:
    """p50: the median; p99: nearest rank (the maximum for fewer than 100 repeats)."""
    if stat == "p50":
        return statistics.median(values)
    return values[max(math.ceil(len(values) * 0.99) - 1, 0)]


def _safe_series(launch: Callable[[], Any], connect: str, session_ms: int,
                 repeats: int) -> tuple[list[float | None], str | None]:
    try:
        with launch() as brokers:
            return _failover_series(brokers, connect, session_ms, repeats), None
    except Exception as exc:  # one system failing must not hide the others' numbers
        return [], f"{type(exc).__name__}: {exc}"


def run(ctx: Context) -> None:
    scratch: Path = ctx.scratch_dir("cluster")
    repeats = 3 if ctx.quick else 7
    zookeeper = ZooKeeperProcess(free_port(), scratch / "zookeeper")
    zookeeper.start()
    try:
        zookeeper.wait_ready(60)
        _measure_throughput(ctx, scratch, zookeeper)
        for session_ms in (_SESSION_TIMEOUT_MS, _DEFAULT_SESSION_TIMEOUT_MS):
            tag = "" if session_ms == _SESSION_TIMEOUT_MS else "default_session."
            series: dict[str, tuple[list[float | None], str | None]] = {}
            for system in ("apache-kafka", "odradek", "odradek-session-path"):
                where = scratch / f"{system}-{session_ms}"
                connect = zookeeper.connect + f"/bench-{where.name}"

                def launch(system: str = system, where: Path = where,
                           session_ms: int = session_ms) -> Any:
                    if system == "apache-kafka":
                        return _apache_kafka(where, zookeeper, session_ms)
                    return _odradek(where, zookeeper, session_ms,
                                    fast=system == "odradek")

                series[system] = _safe_series(launch, connect, session_ms, repeats)
            kafka_times, kafka_error = series["apache-kafka"]
            _report_series(ctx, f"cluster.apache_kafka.failover.{tag}first_produce_s",
                           kafka_times, None, session_ms, system="apache-kafka",
                           error=kafka_error)
            times, error = series["odradek"]
            _report_series(ctx, f"cluster.failover.{tag}first_produce_s", times, kafka_times,
                           session_ms, error=error, target_s=_TARGET_S)
            times, error = series["odradek-session-path"]
            _report_series(ctx, f"cluster.failover.session_path.{tag}first_produce_s", times,
                           kafka_times, session_ms, error=error,
                           note="controller.fast.failover.enable=false: the failover "
                                "odradek had before (ZooKeeper session expiry)")
    finally:
        zookeeper.stop()
