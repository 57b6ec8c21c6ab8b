"""Metrics benchmarks: what recording costs on the produce path, and what a scrape costs.

* recording: nanoseconds per call of the recorders a Produce request goes through
  (``requests.observe`` once per request, ``traffic.produced`` once per partition), against
  prometheus-client's own ``Histogram``/``Counter`` doing the same work in the same run;
* scrape: a full HTTP scrape of ``/metrics`` of a broker with 1,000 leader partitions, 2,000
  consumer-group lag rows and a busy request histogram (goal < 100 ms), and how long of that
  the event loop is held (the snapshot hop), with the loop running in another thread as in
  a broker.

* live broker: a real ``odradek broker`` process hosting 1,000 partitions, its ``/metrics``
  scraped over HTTP (goal < 100 ms), and produce throughput with the endpoint on and scraped
  every second against ``metrics.port=0`` (goal < 5% apart). Recording itself cannot be
  switched off (the registry is always kept); its share is the per-call cost above times
  the requests and partitions the run made, reported as an estimate beside the measurement.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from bench.common import Context
from odradek.metrics import BrokerMetrics, MetricsOptions
from odradek.metrics.catalog import REQUEST_SECONDS
from odradek.metrics.lag import GroupOffsets, LogOffsets
from odradek.metrics.sources import ReplicaSnapshot
from odradek.protocol.api_versions import ApiKey
from odradek.types import TopicPartition


def _ns_per_call(call: Callable[[], None], calls: int) -> float:
    """Median of 5 timed loops, minus the loop's own cost, in ns of CPU per call (thread CPU
    time, so a machine shared with other work does not inflate it)."""

    def empty() -> None:
        return None

    def timed(function: Callable[[], None]) -> float:
        started = time.thread_time_ns()
        for _ in range(calls):
            function()
        return (time.thread_time_ns() - started) / calls

    overhead = statistics.median(timed(empty) for _ in range(5))
    return statistics.median(timed(call) for _ in range(5)) - overhead


def bench_recording(ctx: Context) -> None:
    calls = 20_000 if ctx.quick else 200_000
    ours = BrokerMetrics(MetricsOptions(topic_labels=True), process_metrics=False)
    registry = CollectorRegistry()
    total = Histogram("total_seconds", "", ["api"], buckets=REQUEST_SECONDS, registry=registry)
    phase = Histogram("phase_seconds", "", ["api", "phase"], buckets=REQUEST_SECONDS,
                      registry=registry)
    requests = Counter("requests", "", ["api"], registry=registry)
    bytes_in = Counter("bytes_in", "", registry=registry)
    messages_in = Counter("messages_in", "", registry=registry)
    topic_in = Counter("topic_bytes_in", "", ["topic"], registry=registry)
    topic_messages = Counter("topic_messages_in", "", ["topic"], registry=registry)

    def ours_request() -> None:
        ours.requests.observe(ApiKey.PRODUCE, 0.00002, 0.0003, 0.0011, 0.00004)

    def theirs_request() -> None:
        requests.labels("Produce").inc()
        total.labels("Produce").observe(0.00146)
        for name, value in (("queue", 0.00002), ("local", 0.0003), ("remote", 0.0011),
                            ("send", 0.00004)):
            phase.labels("Produce", name).observe(value)

    def ours_partition() -> None:
        ours.traffic.produced("events", 16384, 100)

    def theirs_partition() -> None:
        bytes_in.inc(16384)
        messages_in.inc(100)
        topic_in.labels("events").inc(16384)
        topic_messages.labels("events").inc(100)

    request_ns = _ns_per_call(ours_request, calls)
    ctx.report("metrics record request (observe: count + total + 4 phases)", request_ns, "ns",
               reference=_ns_per_call(theirs_request, calls),
               reference_name="prometheus-client", goal="lower")
    partition_ns = _ns_per_call(ours_partition, calls)
    ctx.report("metrics record produced partition (per-topic labels on)", partition_ns, "ns",
               reference=_ns_per_call(theirs_partition, calls),
               reference_name="prometheus-client", goal="lower")
    off = BrokerMetrics(process_metrics=False)
    ctx.report("metrics record produced partition (per-topic labels off)",
               _ns_per_call(lambda: off.traffic.produced("events", 16384, 100), calls), "ns")
    ctx.report("metrics record one Produce request of 1 partition (total)",
               request_ns + partition_ns, "ns")


class _Partitions:
    def __init__(self, count: int) -> None:
        self.states = [
            ReplicaSnapshot(f"topic-{i // 10}", i % 10, size_bytes=1 << 30, segments=8,
                           log_start_offset=i, log_end_offset=10_000_000 + i, is_leader=True,
                           replicas=3, in_sync_replicas=3 - (i % 50 == 0),
                           min_insync_replicas=2)
            for i in range(count)
        ]

    def partitions(self) -> Iterable[ReplicaSnapshot]:
        # a live source builds fresh records on every scrape: so does this one
        return [ReplicaSnapshot(p.topic, p.partition, p.size_bytes, p.segments,
                               p.log_start_offset, p.log_end_offset, p.is_leader, p.replicas,
                               p.in_sync_replicas, p.min_insync_replicas)
                for p in self.states]


class _Groups:
    def __init__(self, groups: int, partitions: int) -> None:
        self._groups = [
            GroupOffsets(f"group-{g}", "Stable", 3,
                         {TopicPartition(f"topic-{(g * 7 + p) // 10}", p % 10): 9_000_000
                          for p in range(partitions)})
            for g in range(groups)
        ]

    def groups(self) -> Iterable[GroupOffsets]:
        return self._groups


class _Logs:
    def offsets(self, partitions: Collection[TopicPartition]
                ) -> Mapping[TopicPartition, LogOffsets]:
        return {tp: LogOffsets(0, 10_000_000) for tp in partitions}

    def timestamp_at(self, topic: str, partition: int, offset: int) -> int | None:
        return int(time.time() * 1000) - 5000


def bench_scrape(ctx: Context) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    metrics = BrokerMetrics(MetricsOptions(topic_labels=True), process_metrics=True)
    partitions = _Partitions(1000)
    metrics.attach(partitions=partitions, groups=_Groups(100, 20), logs=_Logs(), log_dirs=["/"])
    for api in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.LIST_OFFSETS):
        metrics.requests.observe(api, 0.0001, 0.001, 0.01, 0.0001)
    for topic in range(100):
        metrics.traffic.produced(f"topic-{topic}", 1000, 10)

    async def start() -> int:
        metrics.start()
        return metrics.serve("127.0.0.1", 0)

    port = asyncio.run_coroutine_threadsafe(start(), loop).result()
    url = f"http://127.0.0.1:{port}/metrics"

    def scrape() -> tuple[float, float, int]:
        """(wall seconds, process CPU seconds, bytes): CPU time counts every thread of this
        process (scrape thread, event loop, the client), so it is an upper bound that a
        loaded machine does not inflate."""
        started, cpu = time.perf_counter(), time.process_time()
        with urllib.request.urlopen(url, timeout=30) as response:
            size = len(response.read())
        return time.perf_counter() - started, time.process_time() - cpu, size

    scrape()  # warm-up: first timestamp reads, first children
    runs = 5 if ctx.quick else 20
    measured = [scrape() for _ in range(runs)]
    timings = sorted(wall for wall, _, _ in measured)
    cpu = statistics.median(cpu for _, cpu, _ in measured)
    size = measured[-1][2]
    reference = []
    for _ in range(runs):
        started_cpu = time.process_time()
        generate_latest(metrics.registry)
        reference.append(time.process_time() - started_cpu)
    snapshot = []
    for _ in range(runs):
        snapshot.append(asyncio.run_coroutine_threadsafe(_on_loop(metrics), loop).result())
    series = sum(1 for line in urllib.request.urlopen(url).read().decode().splitlines()
                 if line and not line.startswith("#"))
    ctx.report("metrics scrape, 1,000 partitions + 2,000 lag rows, CPU (median)", cpu * 1000,
               "ms", reference=statistics.median(reference) * 1000,
               reference_name="prometheus-client generate_latest (no HTTP)", goal="lower",
               absolute_goal="< 100 ms",
               wall_median_ms=statistics.median(timings) * 1000,
               wall_p90_ms=timings[int(len(timings) * 0.9) - 1] * 1000, bytes=size,
               series=series)
    ctx.report("metrics scrape: event-loop hold for the state snapshot, CPU (median)",
               statistics.median(snapshot) * 1000, "ms")
    asyncio.run_coroutine_threadsafe(metrics.stop(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


async def _on_loop(metrics: BrokerMetrics) -> float:
    started = time.thread_time()
    metrics.state._snapshot()
    return time.thread_time() - started


def bench_calibration(ctx: Context) -> None:
    """CPU time of a fixed pure-Python loop: scales the numbers above to another machine
    (``sum(range(1000))`` takes about 10 us on an idle 2020s x86 core)."""
    started = time.thread_time_ns()
    for _ in range(2000):
        sum(range(1000))
    ctx.report("calibration: sum(range(1000)) CPU", (time.thread_time_ns() - started) / 2000 / 1000,
               "us")


def _scrape_loop(url: str, stop: threading.Event, timings: list[float]) -> None:
    """Scrape every second like Prometheus would, until ``stop`` (bounded by the caller)."""
    while not stop.wait(1.0):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read()
        timings.append(time.perf_counter() - started)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (``/proc/<pid>/stat``, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_live_broker(ctx: Context) -> None:
    """Two brokers with the same 1,008 partitions, one with ``/metrics`` scraped every
    second and one with ``metrics.port=0``, produced to in alternating rounds (a shared
    machine's load drifts over minutes: alternating spreads it over both), median of each.
    The broker's own CPU per scrape is reported too: the number a loaded machine blurs
    least (at one scrape per second it is the share of the broker's one event loop)."""
    from bench.bench_broker import VALUE_SIZE, create_topics, produce_throughput
    from odradek.local_cluster import (
        BrokerProcess,
        ZooKeeperProcess,
        free_port,
    )

    scratch = ctx.scratch_dir("metrics-live")
    messages, seconds, rounds = (200_000, 10.0, 3) if ctx.quick else (500_000, 20.0, 5)
    zookeeper = ZooKeeperProcess(free_port(), scratch / "zookeeper")
    zookeeper.start()
    brokers: dict[str, BrokerProcess] = {}
    stop, timings = threading.Event(), list[float]()
    scraper = None
    try:
        zookeeper.wait_ready(60)
        for label, metrics_port in (("off", 0), ("on", free_port())):
            broker = brokers[label] = BrokerProcess(
                0, free_port(), scratch / f"broker-{label}",
                f"{zookeeper.connect}/metrics-{label}", {"auto.create.topics.enable": "false"},
                metrics_port=metrics_port)
            broker.start()
            broker.wait_ready(60)
            # the same 1,008 partitions either way: only the endpoint differs
            create_topics(broker.bootstrap, {"bench": 8})
            for i in range(10):  # one request each: 1,000 at once outlasts the client
                create_topics(broker.bootstrap, {f"wide-{i}": 100})
        url = brokers["on"].metrics_url
        assert url is not None
        walls, cpu = [], []
        for _ in range(5 if ctx.quick else 20):  # idle scrapes first: nothing else running
            pid = brokers["on"].pid
            assert pid is not None
            before, started = _cpu_seconds(pid), time.perf_counter()
            with urllib.request.urlopen(url, timeout=30) as r:
                body = r.read()
            walls.append(time.perf_counter() - started)
            cpu.append(_cpu_seconds(pid) - before)
        scraper = threading.Thread(target=_scrape_loop, daemon=True, args=(url, stop, timings))
        scraper.start()
        results: dict[str, list[float]] = {"off": [], "on": []}
        for label in ("off", "on"):  # warm-up
            produce_throughput(brokers[label].bootstrap, "bench", messages // 10, seconds / 3)
        for _ in range(rounds):
            for label in ("off", "on"):
                run = produce_throughput(brokers[label].bootstrap, "bench", messages, seconds)
                results[label].append(run["delivered"] / run["seconds"])
        stop.set()
        scraper.join(40)
        series = sum(1 for line in body.decode().splitlines()
                     if line and not line.startswith("#"))
        ctx.report("metrics live scrape, broker with 1,008 partitions, wall (median)",
                   statistics.median(walls) * 1000, "ms",
                   absolute_goal="< 100 ms", bytes=len(body), series=series,
                   wall_max_ms=max(walls) * 1000,
                   broker_cpu_per_scrape_ms=statistics.median(cpu) * 1000,
                   during_produce_median_ms=(statistics.median(timings) * 1000
                                             if timings else None))
        ctx.report("metrics live produce throughput, endpoint on + scraped 1/s vs off",
                   statistics.median(results["on"]), "msgs/s",
                   reference=statistics.median(results["off"]),
                   reference_name="metrics.port=0", goal=">= 0.95", value_bytes=VALUE_SIZE,
                   rounds_on=results["on"], rounds_off=results["off"])
    finally:
        stop.set()
        for broker in brokers.values():
            broker.stop()
        zookeeper.stop()


def run(ctx: Context) -> None:
    bench_calibration(ctx)
    bench_recording(ctx)
    bench_scrape(ctx)
    bench_live_broker(ctx)
