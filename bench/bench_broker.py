"""Broker benchmark: librdkafka (confluent-kafka) against odradek and Apache Kafka 3.9.

Both brokers run here, in the same run, as subprocesses on 127.0.0.1 with the same
ZooKeeper (Apache ZooKeeper from the pyspark wheel; Apache Kafka in ZooKeeper mode with the
heap settings of ``kafka-server-start.sh``). Measured for each:

* produce and consume throughput, 100-byte values, 1 and 8 partitions (msgs/s and MB/s of
  values); acks=1, no compression, librdkafka's default batching with linger.ms=5;
* produce latency (p50/p99, send to delivery report, acks=1, linger.ms=0, Nagle off) at
  a fixed moderate rate, after a warm-up at that rate;
* resident memory of the broker process with 1,000 idle partitions (a fresh broker).

The raw limit is a plain TCP send/recv of the same bytes between two processes over
loopback. odradek rows carry Apache Kafka's number as ``reference`` (ratio = odradek /
Apache Kafka); Apache Kafka's throughput rows carry the raw loopback limit. Every load is
bounded in messages and in time; every process is stopped by PID. If a broker cannot start
(or a load fails) its rows are reported with ``value: null`` and an ``error``; benchmarks
never assert.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import socket
import statistics
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import Context
from bench.systems import process_tree, rss_mib
from odradek.local_cluster import (
    BrokerProcess,
    ManagedProcess,
    ZooKeeperProcess,
    free_port,
    wait_until,
)
from tests.harness.apache_kafka import ApacheKafka, broker_serving

VALUE_SIZE = 100
PARTITION_COUNTS = (1, 8)
LATENCY_RATE = 5_000  # msgs/s
IDLE_PARTITIONS = 1_000
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class Sizes:
    messages: int  # per throughput case
    load_seconds: float  # time bound per produce or consume phase
    latency_seconds: float
    latency_warmup: float


FULL = Sizes(messages=1_000_000, load_seconds=60.0, latency_seconds=10.0,
             latency_warmup=5.0)
QUICK = Sizes(messages=200_000, load_seconds=20.0, latency_seconds=3.0,
              latency_warmup=2.0)


# ------------------------------------------------------------------------ broker launchers


def start_odradek(zk_connect: str, port: int, data_dir: Path) -> ManagedProcess:
    """``python -m odradek broker --override ...`` (the CLI contract), ready to serve."""
    process = BrokerProcess(0, port, data_dir, zk_connect,
                            {"auto.create.topics.enable": "false"})
    process.start()
    try:
        wait_until(lambda: _serving(process, port), START_TIMEOUT,
                   f"odradek broker serving on 127.0.0.1:{port}", interval=0.2)
    except BaseException:
        process.stop()
        raise
    return process


def start_apache_kafka(zk_connect: str, port: int, data_dir: Path) -> ManagedProcess:
    """Apache Kafka 3.9 in ZooKeeper mode (``kafka.Kafka server.properties``), ready."""
    process = ApacheKafka().broker(zk_connect, port, data_dir / "kafka-logs")
    process.start(START_TIMEOUT)
    return process


def _serving(process: ManagedProcess, port: int) -> bool:
    if not process.running:
        raise RuntimeError(f"{process.name} exited:\n{process.log_tail(30)}")
    return broker_serving("127.0.0.1", port)


Launcher = Callable[[str, int, Path], ManagedProcess]


@contextlib.contextmanager
def running_broker(launch: Launcher, zk_connect: str, data_dir: Path) -> Iterator[tuple[
        ManagedProcess, str]]:
    port = free_port()
    process = launch(zk_connect, port, data_dir)
    try:
        yield process, f"127.0.0.1:{port}"
    finally:
        process.stop()


# ------------------------------------------------------------------------------- loads


def create_topics(bootstrap: str, topics: dict[str, int], timeout: float = 120.0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()],
                                  operation_timeout=timeout, request_timeout=timeout)
    for future in futures.values():
        future.result(timeout)

    def ready() -> bool:
        meta = admin.list_topics(timeout=10)
        for topic, count in topics.items():
            info = meta.topics.get(topic)
            if info is None or len(info.partitions) != count:
                return False
            if any(p.leader < 0 for p in info.partitions.values()):
                return False
        return True

    wait_until(ready, timeout, f"leaders for {sum(topics.values())} partitions", interval=0.2)


def produce_throughput(bootstrap: str, topic: str, count: int, seconds: float) -> dict[str, Any]:
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
        "enable.idempotence": False, "queue.buffering.max.messages": 500_000,
        "queue.buffering.max.kbytes": 512 * 1024,
    })
    value = b"v" * VALUE_SIZE
    delivered = failed = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal delivered, failed
        if err is None:
            delivered += 1
        else:
            failed += 1

    started = time.monotonic()
    deadline = started + seconds
    sent = 0
    while sent < count and time.monotonic() < deadline:
        try:
            producer.produce(topic, value, on_delivery=on_delivery)
            sent += 1
        except BufferError:
            producer.poll(0.01)
    while producer.flush(0.5) and time.monotonic() < deadline + 10:
        pass
    elapsed = time.monotonic() - started
    remaining = len(producer)
    return {"delivered": delivered, "failed": failed, "sent": sent, "undelivered": remaining,
            "seconds": elapsed, "truncated": sent < count}


def consume_throughput(bootstrap: str, topic: str, partitions: int, count: int,
                       seconds: float) -> dict[str, Any]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "odradek-bench-assign-only",
        "enable.auto.commit": False, "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    })
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
    received = received_bytes = errors = 0
    started = time.monotonic()
    deadline = started + seconds
    try:
        while received < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.2):
                if msg.error() is not None:
                    errors += 1
                    continue
                received += 1
                received_bytes += len(msg.value())
        elapsed = time.monotonic() - started
    finally:
        consumer.close()
    return {"received": received, "bytes": received_bytes, "errors": errors,
            "seconds": elapsed, "truncated": received < count}


def produce_latency(bootstrap: str, topic: str, rate: int, seconds: float,
                    warmup: float) -> dict[str, Any]:
    """Send at ``rate`` msgs/s for ``warmup + seconds``; latency = delivery report - send
    time, of the messages sent after the warm-up (a fresh JVM compiles its hot paths
    during the first seconds, and its latency then is seconds, not milliseconds)."""
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0,
        "enable.idempotence": False, "socket.nagle.disable": True,
    })
    value = b"v" * VALUE_SIZE
    latencies: list[float] = []
    failed = 0

    def on_delivery(sent_at: float, measured: bool) -> Callable[[object, object], None]:
        def report(err: object, _msg: object) -> None:
            nonlocal failed
            if err is not None:
                failed += 1
            elif measured:
                latencies.append(time.monotonic() - sent_at)
        return report

    # Warm up the connection and metadata first.
    producer.produce(topic, value)
    producer.flush(30)
    interval = 1.0 / rate
    skipped = int(rate * warmup)
    total = skipped + int(rate * seconds)
    started = measure_start = time.monotonic()
    for i in range(total):
        due = started + i * interval
        while (now := time.monotonic()) < due:
            producer.poll(min(due - now, 0.001))
        if i == skipped:
            measure_start = time.monotonic()
        producer.produce(topic, value, on_delivery=on_delivery(time.monotonic(), i >= skipped))
        producer.poll(0)
    producer.flush(30)
    achieved = (total - skipped) / max(time.monotonic() - measure_start, 1e-9)
    latencies.sort()
    return {"latencies": latencies, "failed": failed, "achieved_rate": achieved}


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def process_tree_rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants (from /proc)."""
    return rss_mib(process_tree([pid]))


def idle_rss(launch: Launcher, zk_connect: str, data_dir: Path) -> dict[str, float]:
    with running_broker(launch, zk_connect, data_dir) as (process, bootstrap):
        assert process.pid is not None
        before = process_tree_rss_mib(process.pid)
        per_topic = 100
        create_topics(bootstrap, {f"idle-{i:02d}": per_topic
                                  for i in range(IDLE_PARTITIONS // per_topic)})
        samples = []
        for _ in range(10):  # measurement window, not synchronization
            time.sleep(0.3)
            samples.append(process_tree_rss_mib(process.pid))
        return {"before": before, "after": statistics.median(samples)}


# ------------------------------------------------------------------------- raw loopback


def _sink(port_queue: multiprocessing.Queue, total: int) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port_queue.put(server.getsockname()[1])
        conn, _ = server.accept()
        with conn:
            received = 0
            while received < total:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                received += len(chunk)
            conn.sendall(b"k")


def raw_loopback(total_bytes: int) -> float:
    """Seconds to push ``total_bytes`` through loopback TCP to another process and get a
    one-byte acknowledgement back."""
    ctx = multiprocessing.get_context("spawn")
    ports: multiprocessing.Queue = ctx.Queue()
    sink = ctx.Process(target=_sink, args=(ports, total_bytes), daemon=True)
    sink.start()
    try:
        port = ports.get(timeout=30)
        chunk = (b"v" * VALUE_SIZE) * ((1 << 16) // VALUE_SIZE)
        with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
            started = time.monotonic()
            sent = 0
            while sent < total_bytes:
                piece = chunk[: total_bytes - sent]
                conn.sendall(piece)
                sent += len(piece)
            conn.recv(1)
            return time.monotonic() - started
    finally:
        sink.join(10)
        if sink.is_alive():
            sink.kill()


# -------------------------------------------------------------------------------- driver


def measure_broker(label: str, launch: Launcher, zk_connect: str, scratch: Path,
                   sizes: Sizes) -> dict[str, dict[str, Any]]:
    """All loads against one broker kind; returns {metric: {"value", "unit", ...}}."""
    results: dict[str, dict[str, Any]] = {}
    with running_broker(launch, zk_connect, scratch / "load") as (_process, bootstrap):
        for partitions in PARTITION_COUNTS:
            topic = f"bench-{partitions}p"
            create_topics(bootstrap, {topic: partitions})
            prod = produce_throughput(bootstrap, topic, sizes.messages, sizes.load_seconds)
            rate = prod["delivered"] / prod["seconds"]
            extra = {k: prod[k] for k in ("delivered", "failed", "truncated")}
            results[f"produce.{partitions}p.msgs"] = {"value": rate, "unit": "msgs/s", **extra}
            results[f"produce.{partitions}p.mb"] = {
                "value": rate * VALUE_SIZE / 1e6, "unit": "MB/s", **extra}
            cons = consume_throughput(bootstrap, topic, partitions, prod["delivered"],
                                      sizes.load_seconds)
            crate = cons["received"] / cons["seconds"]
            extra = {k: cons[k] for k in ("received", "errors", "truncated")}
            results[f"consume.{partitions}p.msgs"] = {"value": crate, "unit": "msgs/s", **extra}
            results[f"consume.{partitions}p.mb"] = {
                "value": cons["bytes"] / cons["seconds"] / 1e6, "unit": "MB/s", **extra}
        create_topics(bootstrap, {"bench-latency": 1})
        lat = produce_latency(bootstrap, "bench-latency", LATENCY_RATE, sizes.latency_seconds,
                              sizes.latency_warmup)
        extra = {"rate": LATENCY_RATE, "achieved_rate": lat["achieved_rate"],
                 "samples": len(lat["latencies"]), "failed": lat["failed"]}
        for q, name in ((0.50, "p50"), (0.99, "p99")):
            results[f"produce_latency.{name}"] = {
                "value": percentile(lat["latencies"], q) * 1000, "unit": "ms", **extra}
    rss = idle_rss(launch, zk_connect, scratch / "idle")
    results["rss.idle_1000_partitions"] = {"value": rss["after"], "unit": "MiB",
                                           "rss_before_topics_mib": rss["before"]}
    print(f"[bench_broker] {label} done", flush=True)
    return results


METRICS = [f"{kind}.{p}p.{u}" for p in PARTITION_COUNTS for kind in ("produce", "consume")
           for u in ("msgs", "mb")] + ["produce_latency.p50", "produce_latency.p99",
                                       "rss.idle_1000_partitions"]
UNITS = {"msgs": "msgs/s", "mb": "MB/s", "p50": "ms", "p99": "ms",
         "idle_1000_partitions": "MiB"}
GOALS = {"produce_latency.p50": "lower", "produce_latency.p99": "lower",
         "rss.idle_1000_partitions": "lower"}


def _safe_measure(label: str, launch: Launcher, zk_connect: str, scratch: Path,
                  sizes: Sizes) -> tuple[dict[str, dict[str, Any]] | None, str | None]:
    try:
        return measure_broker(label, launch, zk_connect, scratch, sizes), None
    except Exception as exc:  # a benchmark reports failures, it does not raise them
        traceback.print_exc()
        return None, f"{type(exc).__name__}: {exc}".splitlines()[0][:500]


def run(ctx: Context) -> None:
    sizes = QUICK if ctx.quick else FULL
    scratch = ctx.scratch_dir("broker")
    common = {"value_bytes": VALUE_SIZE, "client": "confluent-kafka "
              f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})"}

    # Raw loopback limit for the same bytes as one throughput case.
    total = sizes.messages * VALUE_SIZE
    raw_seconds = min(raw_loopback(total) for _ in range(3))
    raw_mb = total / raw_seconds / 1e6
    raw_msgs = sizes.messages / raw_seconds
    ctx.report("broker.raw_loopback.mb", raw_mb, "MB/s", system="limit", bytes=total, **common)
    ctx.report("broker.raw_loopback.msgs", raw_msgs, "msgs/s", system="limit", **common)

    kafka = ApacheKafka()
    zookeeper = ZooKeeperProcess(free_port(), scratch / "zookeeper")
    zookeeper.start()
    try:
        zookeeper.wait_ready(60)
        if kafka.fetch_jars() is None:
            apache, apache_error = None, f"Apache Kafka unavailable: {kafka.unavailable_reason}"
        else:
            apache, apache_error = _safe_measure(
                "apache-kafka", start_apache_kafka, zookeeper.connect + "/apache-kafka",
                scratch / "apache-kafka", sizes)
        odradek, odradek_error = _safe_measure(
            "odradek", start_odradek, zookeeper.connect + "/odradek", scratch / "odradek",
            sizes)
    finally:
        zookeeper.stop()

    for metric in METRICS:
        unit = UNITS[metric.rsplit(".", 1)[1]]
        throughput = metric.split(".")[0] in ("produce", "consume")
        raw = {"MB/s": raw_mb, "msgs/s": raw_msgs}.get(unit) if throughput else None
        goal = GOALS.get(metric, "higher")
        ref_row = apache.get(metric) if apache else None
        if ref_row is not None:
            extra = {k: v for k, v in ref_row.items() if k not in ("value", "unit")}
            ctx.report(f"broker.apache_kafka.{metric}", ref_row["value"], unit,
                       reference=raw, reference_name="raw loopback TCP" if raw else None,
                       goal=goal, kafka_version=kafka.version, system="apache-kafka",
                       test=f"broker.{metric}", **common, **extra)
        else:
            ctx.report(f"broker.apache_kafka.{metric}", None, unit, goal=goal,
                       error=apache_error, system="apache-kafka", test=f"broker.{metric}",
                       **common)
        row = odradek.get(metric) if odradek else None
        if row is not None:
            extra = {k: v for k, v in row.items() if k not in ("value", "unit")}
            reference = ref_row["value"] if ref_row else None
            ctx.report(f"broker.odradek.{metric}", row["value"], unit, reference=reference,
                       reference_name=f"Apache Kafka {kafka.version}" if reference else None,
                       goal=goal, test=f"broker.{metric}", **common, **extra)
        else:
            ctx.report(f"broker.odradek.{metric}", None, unit, goal=goal,
                       error=odradek_error, test=f"broker.{metric}", **common)
