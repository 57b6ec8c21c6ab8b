"""Consumer-group benchmark: rebalance times and offset-commit throughput.

Measured on odradek and, in the same run when its jars are available, on Apache Kafka 3.9
(ZooKeeper mode) with the same group settings (``group.initial.rebalance.delay.ms=0``,
``group.min.session.timeout.ms=1000``, 4 offsets partitions, RF 1):

* **rebalance time**, a group of 6 confluent-kafka members (subprocesses, eager range
  assignor, ``session.timeout.ms=3000``) on 12 partitions while a producer writes to every
  partition continuously. *Join*: from a 6th member's start (its client constructed) until
  every partition has been consumed again after the last assignment handed out. *Death*: from
  a SIGKILL of one member until every partition it owned was consumed by its new owner; this
  includes the session timeout, which dominates it. p50/p99 over the cycles.
* **join rebalance per group protocol** (:mod:`bench.group_join`), with odradek's own
  consumer at 3 and 30 members: from a member joining until every member consumes again,
  for the classic protocol, eager (``range``) and cooperative (``cooperative-sticky``), and
  the KIP-848 consumer protocol (``group_protocol="consumer"``). Apache Kafka 3.9 in
  ZooKeeper mode has no KIP-848: its rows hold the classic protocols beside Kafka's, while
  the consumer-protocol rows are compared with odradek's classic eager row
  (``reference_name: odradek-classic-eager``; the cooperative one rides along).
* **commit throughput**: synchronous OffsetCommits of 12 partitions, one committer (latency
  bound) and 8 committers in parallel (each its own group), commits/s, and the broker's CPU
  milliseconds per commit (``broker_cpu_ms_per_commit``, and ``reference_...`` for Apache
  Kafka): the committers share the machine's cores with the broker, so the rate moves with
  the machine's load while the CPU cost per commit mostly does not.

Member events come from :mod:`tests.groups.member` (wall-clock timestamps, same host).
Benchmarks never assert; a broker that fails is reported with ``value: null`` and an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import confluent_kafka

from bench import group_join
from bench.bench_broker import create_topics, percentile
from bench.common import Context
from bench.systems import cpu_seconds, process_tree
from odradek.local_cluster import (
    BrokerProcess,
    ManagedProcess,
    ZooKeeperProcess,
    free_port,
    wait_until,
)
from tests.groups.helpers import Member
from tests.harness.apache_kafka import ApacheKafka, broker_serving

GROUP_SIZE = 6
PARTITIONS = 12
SESSION_MS = 3000
START_TIMEOUT = 60.0
JOIN_PARTITIONS_PER_MEMBER = 2
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "4",
    "offsets.topic.replication.factor": "1",
    "auto.create.topics.enable": "false",
}

Launcher = Callable[[str, int, Path], ManagedProcess]


def start_odradek(zk_connect: str, port: int, data_dir: Path) -> ManagedProcess:
    # The consumer protocol's heartbeat interval is the broker's: the same as the classic
    # members' own (bench.group_join.HEARTBEAT_MS).
    settings = {**GROUP_SETTINGS,
                "group.consumer.heartbeat.interval.ms": str(group_join.HEARTBEAT_MS)}
    process = BrokerProcess(0, port, data_dir, zk_connect, settings)
    process.start()
    wait_until(lambda: broker_serving("127.0.0.1", port), START_TIMEOUT,
               f"odradek on port {port}", interval=0.2)
    return process


def start_apache_kafka(zk_connect: str, port: int, data_dir: Path) -> ManagedProcess:
    process = ApacheKafka().broker(zk_connect, port, data_dir / "kafka-logs",
                                   overrides=dict(GROUP_SETTINGS))
    process.start(START_TIMEOUT)
    return process


@contextlib.contextmanager
def running(launch: Launcher, zk_connect: str, data_dir: Path) -> Iterator[str]:
    port = free_port()
    process = launch(zk_connect, port, data_dir)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        process.stop()


# ----------------------------------------------------------------------------- rebalances


class BackgroundProducer:
    """Writes one record to every partition every ``interval_s`` until stopped."""

    def __init__(self, bootstrap: str, topic: str, interval_s: float = 0.05,
                 partitions: int = PARTITIONS) -> None:
        self._producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap,
                                                   "linger.ms": 1})
        self._topic = topic
        self._partitions = partitions
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> BackgroundProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(10)

    def _run(self) -> None:
        sequence = 0
        while not self._stop.wait(self._interval_s):
            for partition in range(self._partitions):
                self._producer.produce(self._topic, f"{sequence}".encode(), partition=partition)
            self._producer.poll(0)
            sequence += 1


def start_member(bootstrap: str, topic: str, group: str, scratch: Path, index: int) -> Member:
    name = f"member-{index}"
    out = scratch / f"{name}.events"
    argv = [sys.executable, "-m", "tests.groups.member", "--client", "confluent",
            "--bootstrap", bootstrap, "--topic", topic, "--group", group, "--out", str(out),
            "--session-ms", str(SESSION_MS)]
    process = ManagedProcess(name, argv, scratch / f"{name}.log")
    process.start()
    return Member(process, out, "confluent")


def _stable(group: list[Member]) -> float | None:
    """Time of the last assignment if the group's assignments cover every partition once."""
    owned: list[int] = []
    last = 0.0
    for member in group:
        assigned = member.assignment()
        if assigned is None:
            return None
        owned += assigned
        last = max(last, max(e["t"] for e in member.events() if e["event"] == "assigned"))
    return last if sorted(owned) == list(range(PARTITIONS)) else None


def _resumed(group: list[Member], partitions: list[int], since: float) -> float | None:
    """When each partition in ``partitions`` was last to get a record consumed after
    ``since`` (None until all have)."""
    first: dict[int, float] = {}
    for member in group:
        for record in member.records():
            if record["t"] > since and record["p"] in partitions:
                first[record["p"]] = min(first.get(record["p"], record["t"]), record["t"])
    return max(first.values()) if len(first) == len(partitions) else None


def wait_resumed(group: list[Member], partitions: list[int], event_time: float) -> float:
    assigned_at = wait_until(lambda: _stable(group), 60, "a stable assignment", interval=0.05)
    assert isinstance(assigned_at, float)
    resumed = wait_until(lambda: _resumed(group, partitions, max(assigned_at, event_time)),
                         30, "consumption to resume", interval=0.05)
    assert isinstance(resumed, float)
    return resumed - event_time


def rebalance_times(bootstrap: str, scratch: Path, cycles: int) -> dict[str, list[float]]:
    topic = f"bench-groups-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, {topic: PARTITIONS})
    group_id = f"bench-{uuid.uuid4().hex[:8]}"
    started: list[Member] = []
    joins: list[float] = []
    deaths: list[float] = []
    try:
        with BackgroundProducer(bootstrap, topic):
            group = [start_member(bootstrap, topic, group_id, scratch, i)
                     for i in range(GROUP_SIZE - 1)]
            started += group
            wait_resumed(group, list(range(PARTITIONS)), time.time())
            for cycle in range(cycles):
                newcomer = start_member(bootstrap, topic, group_id, scratch, len(started))
                started.append(newcomer)
                group.append(newcomer)
                wait_until(newcomer.events, 30, "the new member's start")
                joined_at = newcomer.events()[0]["t"]
                joins.append(wait_resumed(group, list(range(PARTITIONS)), joined_at))

                victim = group[cycle % len(group)]
                orphaned = victim.assignment() or []
                killed_at = time.time()
                victim.kill()
                group.remove(victim)
                deaths.append(wait_resumed(group, orphaned, killed_at))
    finally:
        for member in started:
            member.process.stop(10)
    return {"join": joins, "death": deaths}


# ------------------------------------------------------------------------------- commits


def commit_rate(bootstrap: str, committers: int, seconds: float) -> float:
    return commit_load(bootstrap, committers, seconds)[0]


def commit_load(bootstrap: str, committers: int, seconds: float) -> tuple[float, int]:
    """(commits/s, commits made) of ``committers`` synchronous committers for ``seconds``."""
    topic = f"bench-commits-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, {topic: PARTITIONS})  # Kafka refuses commits to unknown topics
    counts = [0] * committers

    def commit_loop(index: int) -> None:
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap,
                                             "group.id": f"commit-{topic}-{index}",
                                             "enable.auto.commit": False})
        try:
            # First commit outside the clock: it finds the coordinator.
            offsets = [confluent_kafka.TopicPartition(topic, p, 1) for p in range(PARTITIONS)]
            consumer.commit(offsets=offsets, asynchronous=False)
            deadline = time.monotonic() + seconds
            offset = 2
            while time.monotonic() < deadline:
                consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, p, offset)
                                         for p in range(PARTITIONS)], asynchronous=False)
                counts[index] += 1
                offset += 1
        finally:
            consumer.close()

    threads = [threading.Thread(target=commit_loop, args=(i,)) for i in range(committers)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    elapsed = max(time.monotonic() - started, seconds)
    return sum(counts) / elapsed, sum(counts)


# ---------------------------------------------------------------------------------- run


def join_rebalances(bootstrap: str, protocols: list[str], sizes: tuple[int, ...],
                    cycles: int) -> dict[str, list[float]]:
    """``{"<protocol>/<size>": [seconds per join]}`` (see :mod:`bench.group_join`)."""
    found: dict[str, list[float]] = {}
    for size in sizes:
        partitions = JOIN_PARTITIONS_PER_MEMBER * size
        topic = f"bench-join-{uuid.uuid4().hex[:8]}"
        create_topics(bootstrap, {topic: partitions})
        with BackgroundProducer(bootstrap, topic, interval_s=0.1, partitions=partitions):
            for protocol in protocols:
                try:
                    found[f"{protocol}/{size}"] = asyncio.run(group_join.join_times(
                        bootstrap, topic, partitions, protocol, size, cycles))
                except Exception:
                    traceback.print_exc()
    return found


def measure(label: str, launch: Launcher, zk_connect: str, scratch: Path,
            quick: bool, join_protocols: list[str], join_sizes: tuple[int, ...],
            join_cycles: int) -> dict[str, Any]:
    cycles = 3 if quick else 10
    seconds = 3.0 if quick else 10.0
    data_dir = scratch / label
    port = free_port()
    process = launch(zk_connect + f"/{label}-{uuid.uuid4().hex[:6]}", port, data_dir)
    try:
        bootstrap = f"127.0.0.1:{port}"
        found: dict[str, Any] = {"rebalance": rebalance_times(bootstrap, data_dir, cycles)}
        found["join"] = join_rebalances(bootstrap, join_protocols, join_sizes, join_cycles)
        for committers in (1, 8):
            # Broker CPU per commit besides the rate: on a shared machine the rate also
            # measures the committers' own share of the cores, the CPU cost does not.
            pids = process_tree([process.pid] if process.pid is not None else [])
            cpu_before = cpu_seconds(pids)
            rate, commits = commit_load(bootstrap, committers, seconds)
            found[f"commits_{committers}"] = rate
            found[f"cpu_ms_per_commit_{committers}"] = (
                (cpu_seconds(pids) - cpu_before) * 1000 / commits if commits else None)
    finally:
        process.stop()
    return found


def _safe(label: str, launch: Launcher, zk_connect: str, scratch: Path,
          quick: bool, *join: Any) -> dict[str, Any] | None:
    try:
        return measure(label, launch, zk_connect, scratch, quick, *join)
    except Exception:
        traceback.print_exc()
        return None


def run(ctx: Context) -> None:
    scratch = ctx.scratch_dir("groups")
    zookeeper = ZooKeeperProcess(free_port(), scratch / "zookeeper")
    zookeeper.start()
    try:
        zookeeper.wait_ready(90)
        sizes, cycles = ctx.pick(((3, 30), 5), ((3, 30), 2), ((3,), 1))
        ours = _safe("odradek", start_odradek, zookeeper.connect, scratch, ctx.quick,
                     list(group_join.PROTOCOLS), sizes, cycles)
        kafka = ApacheKafka()
        theirs = None
        if kafka.fetch_jars() is not None:
            classic = [p for p in group_join.PROTOCOLS if p.startswith("classic")]
            theirs = _safe("kafka", start_apache_kafka, zookeeper.connect, scratch, ctx.quick,
                           classic, sizes, cycles)
        report(ctx, ours, theirs, kafka.unavailable_reason)
    finally:
        zookeeper.stop()


def report(ctx: Context, ours: dict[str, Any] | None, theirs: dict[str, Any] | None,
           unavailable: str | None) -> None:
    extra: dict[str, Any] = {"group_size": GROUP_SIZE, "partitions": PARTITIONS,
                             "session_timeout_ms": SESSION_MS}
    if unavailable:
        extra["reference_unavailable"] = unavailable
    for kind in ("join", "death"):
        for q, label in ((0.5, "p50"), (0.99, "p99")):
            value = _quantile(ours, kind, q)
            reference = _quantile(theirs, kind, q)
            ctx.report(f"groups.rebalance_{kind}_{label}", value, "s",
                       reference=reference, reference_name="apache-kafka-3.9",
                       goal="lower is better", samples=_samples(ours, kind), **extra,
                       **({"error": "odradek run failed"} if ours is None else {}))
    report_joins(ctx, ours, theirs)
    for key, committers in (("commits_1", 1), ("commits_8", 8)):
        cpu_key = f"cpu_ms_per_commit_{committers}"
        ctx.report(f"groups.commit_throughput_{committers}_committers",
                   None if ours is None else ours[key], "commits/s",
                   reference=None if theirs is None else theirs[key],
                   reference_name="apache-kafka-3.9", goal="higher is better",
                   partitions_per_commit=PARTITIONS,
                   broker_cpu_ms_per_commit=None if ours is None else ours.get(cpu_key),
                   reference_broker_cpu_ms_per_commit=(
                       None if theirs is None else theirs.get(cpu_key)))


def report_joins(ctx: Context, ours: dict[str, Any] | None,
                 theirs: dict[str, Any] | None) -> None:
    """One row per protocol and group size: the median join rebalance time."""
    mine = {} if ours is None else ours["join"]
    kafka = {} if theirs is None else theirs["join"]
    keys = sorted(set(mine) | set(kafka), key=lambda k: (int(k.split("/")[1]), k))
    for key in keys:
        protocol, size = key.split("/")
        extra: dict[str, Any] = {"members": int(size), "protocol": protocol,
                                 "partitions": JOIN_PARTITIONS_PER_MEMBER * int(size),
                                 "heartbeat_interval_ms": group_join.HEARTBEAT_MS,
                                 "samples": [round(v, 3) for v in mine.get(key, [])]}
        if protocol == "consumer":  # no KIP-848 in Kafka 3.9 (ZooKeeper mode)
            reference = _median(mine.get(f"classic-eager/{size}"))
            reference_name = "odradek-classic-eager"
            extra["odradek_classic_cooperative"] = _median(
                mine.get(f"classic-cooperative/{size}"))
        else:
            reference = _median(kafka.get(key))
            reference_name = "apache-kafka-3.9"
        ctx.report(f"groups.join_rebalance_{protocol}_{size}_members", _median(mine.get(key)),
                   "s", reference=reference, reference_name=reference_name,
                   goal="lower is better", **extra,
                   **({"error": "odradek run failed"} if key not in mine else {}))


def _median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def _quantile(found: dict[str, Any] | None, kind: str, q: float) -> float | None:
    if found is None or not found["rebalance"][kind]:
        return None
    values = sorted(found["rebalance"][kind])
    return percentile(values, q) if len(values) > 1 else statistics.fmean(values)


def _samples(found: dict[str, Any] | None, kind: str) -> list[float]:
    return [] if found is None else [round(v, 3) for v in found["rebalance"][kind]]
