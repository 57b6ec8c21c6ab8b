"""The Kafka-protocol systems under load: 3-broker odradek and Apache Kafka 3.9 clusters.

Both run here, in the same run, on 127.0.0.1 with one Apache ZooKeeper (separate chroots)
and the same broker settings where both have them (``BROKER_SETTINGS``). Apache Kafka runs in
ZooKeeper mode with the heap and GC options of ``kafka-server-start.sh``. Every process is
started by this module and stopped by PID.

:class:`ProcessSampler` measures what a load cost the brokers: CPU seconds (user + system,
from ``/proc/<pid>/stat``, the broker processes and their children) and peak resident
memory, sampled while the load runs.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from odradek.local_cluster import (
    BrokerProcess,
    ManagedProcess,
    ZooKeeperProcess,
    free_port,
    wait_until,
)
from tests.harness.apache_kafka import ApacheKafka, broker_serving

ODRADEK = "odradek"
APACHE_KAFKA = "apache-kafka"

# Settings both brokers get: small offsets topic (fast first group join), no initial
# rebalance delay (ConsumerPerformance joins a group), topics created by the bench only.
BROKER_SETTINGS = {
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "auto.leader.rebalance.enable": "false",
}
START_TIMEOUT = 120.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Cluster:
    system: str
    brokers: list[ManagedProcess]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)  # type: ignore[attr-defined]

    @property
    def pids(self) -> list[int]:
        return [b.pid for b in self.brokers if b.pid is not None]


def _serving(process: ManagedProcess, port: int) -> bool:
    if not process.running:
        raise RuntimeError(f"{process.name} exited:\n{process.log_tail(30)}")
    return broker_serving("127.0.0.1", port)


@contextlib.contextmanager
def pinned(cpus: Collection[int] | None) -> Iterator[None]:
    """Processes started inside run on ``cpus`` only (None: anywhere). A child inherits the
    CPU affinity of the thread that forks it, so the calling thread's own is set for the
    duration and put back after."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def odradek_cluster(scratch: Path, zk_connect: str, size: int = 3,
                    overrides: Mapping[str, str] | None = None,
                    cpu_sets: Sequence[Collection[int]] | None = None) -> Iterator[Cluster]:
    """``size`` brokers; with ``cpu_sets``, broker ``i`` runs on ``cpu_sets[i]`` only."""
    settings = {**BROKER_SETTINGS, **(overrides or {})}
    brokers = [BrokerProcess(i, free_port(), scratch / f"broker-{i}", zk_connect, settings)
               for i in range(size)]
    try:
        for index, broker in enumerate(brokers):
            with pinned(cpu_sets[index] if cpu_sets else None):
                broker.start()
        for broker in brokers:
            wait_until(partial(_serving, broker, broker.port), START_TIMEOUT,
                       f"odradek broker {broker.broker_id} serving", interval=0.2)
        yield Cluster(ODRADEK, list(brokers))
    finally:
        for broker in brokers:
            broker.stop()


@contextlib.contextmanager
def kafka_cluster(scratch: Path, zk_connect: str, size: int = 3,
                  overrides: Mapping[str, str] | None = None,
                  cpu_sets: Sequence[Collection[int]] | None = None) -> Iterator[Cluster]:
    """``size`` brokers; with ``cpu_sets``, broker ``i`` runs on ``cpu_sets[i]`` only."""
    kafka = ApacheKafka()
    kafka.require()
    settings = {**BROKER_SETTINGS, **(overrides or {})}
    brokers = [kafka.broker(zk_connect, free_port(), scratch / f"kafka-{i}", i, settings)
               for i in range(size)]
    try:
        for index, broker in enumerate(brokers):
            with pinned(cpu_sets[index] if cpu_sets else None):
                broker.start(START_TIMEOUT)
        yield Cluster(APACHE_KAFKA, list(brokers))
    finally:
        for broker in brokers:
            broker.stop()


@contextlib.contextmanager
def zookeeper(scratch: Path) -> Iterator[ZooKeeperProcess]:
    zk = ZooKeeperProcess(free_port(), scratch / "zookeeper")
    zk.start()
    try:
        zk.wait_ready(90)
        yield zk
    finally:
        zk.stop()


@contextlib.contextmanager
def both_clusters(scratch: Path, size: int = 3,
                  overrides: Mapping[str, str] | None = None,
                  ) -> Iterator[dict[str, Cluster | str]]:
    """odradek and Apache Kafka side by side; a system that cannot start maps to the
    reason (a string), so the other's numbers are still measured."""
    with zookeeper(scratch) as zk, contextlib.ExitStack() as stack:
        systems: dict[str, Cluster | str] = {}
        for name, launch in ((APACHE_KAFKA, kafka_cluster), (ODRADEK, odradek_cluster)):
            try:
                systems[name] = stack.enter_context(
                    launch(scratch / name, f"{zk.connect}/{name}", size, overrides))
            except Exception as exc:  # reported as error rows, never raised
                systems[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        yield systems


def create_topic(bootstrap: str, topic: str, partitions: int, replication: int,
                 config: Mapping[str, str] | None = None, timeout: float = 120.0) -> None:
    """Create ``topic`` and wait until every partition has a leader and a full ISR."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, partitions, replication, config=dict(config or {}))],
        operation_timeout=timeout, request_timeout=timeout)
    for future in futures.values():
        future.result(timeout)

    def ready() -> bool:
        info = admin.list_topics(topic, timeout=10).topics.get(topic)
        if info is None or info.error is not None or len(info.partitions) != partitions:
            return False
        return all(p.leader >= 0 and len(p.isrs) == replication
                   for p in info.partitions.values())

    wait_until(ready, timeout, f"{topic}: leaders and full ISR", interval=0.2)


# ------------------------------------------------------------------- process accounting


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    return children


def process_tree(pids: Sequence[int]) -> list[int]:
    children = _children_map()
    found, stack = [], list(pids)
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds of ``pids`` (already expanded to their trees)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLK_TCK


def rss_mib(pids: Sequence[int]) -> float:
    total_kib = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
                    break
    return total_kib / 1024


class ProcessSampler:
    """CPU seconds spent and peak RSS of some processes (and their children) while a load
    runs: ``with ProcessSampler(pids) as s: ...; s.cpu_s, s.rss_mib``."""

    def __init__(self, pids: Sequence[int], interval: float = 0.25) -> None:
        self.roots = list(pids)
        self.interval = interval
        self.cpu_s: float | None = None
        self.rss_mib: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> ProcessSampler:
        self._pids = process_tree(self.roots)
        self._cpu0 = cpu_seconds(self._pids)
        self.rss_mib = rss_mib(self._pids)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.rss_mib = max(self.rss_mib or 0.0, rss_mib(self._pids))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.rss_mib = max(self.rss_mib or 0.0, rss_mib(self._pids))
        self.cpu_s = cpu_seconds(self._pids) - self._cpu0

    def fields(self) -> dict[str, Any]:
        return {"cpu_s": self.cpu_s, "rss_mib": self.rss_mib}


def settle(seconds: float = 1.0) -> None:
    """A short pause between loads so the previous one's tail (replication, log flush of
    the page cache) does not land in the next measurement window."""
    time.sleep(seconds)
