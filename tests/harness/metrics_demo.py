"""A synthetic cluster for the metrics pipeline: fast, deterministic, every series fed.

Three real :class:`~odradek.metrics.BrokerMetrics`, each serving ``/metrics`` on its own
loopback port, fed on their event loop by a workload that moves like a cluster does: produce
and fetch requests with latencies split into phases, partitions whose offsets grow, a
consumer group that falls behind and catches up, ZooKeeper requests, a controller on broker 0,
ISRs that shrink after a few seconds. Every number goes through the same recorders and sources
the brokers will use, so a real Prometheus scraping this exercises the exposition, the
dashboards' queries and the alert rules end to end; only the workload is synthetic.
The live cluster checks are in ``tests/metrics/test_cluster_live.py``.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from odradek.metrics import BrokerMetrics
from odradek.metrics.operator import OperatorMetrics, ReconcileOutcome
from odradek.metrics.sources import ControllerState, ReplicaSnapshot
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.errors import ErrorCode
from odradek.quota import QuotaEntity, QuotaManager, QuotaType
from odradek.types import TopicPartition
from odradek_monitoring.prometheus import ScrapeTarget
from tests.harness.chart_defaults import default_metrics_options
from tests.harness.metrics_fakes import (
    FakeController,
    FakeCoordinator,
    FakeLog,
    FakeLogs,
    FakePurgatory,
    FakeReplicaManager,
)

__all__ = ["DemoCluster", "demo_cluster"]

TOPICS = {"events": 6, "metrics": 3}
LABELS = {"namespace": "demo", "cluster": "demo"}


class DemoBroker:
    def __init__(self, broker_id: int, brokers: int, logs: FakeLogs, seed: int) -> None:
        self.broker_id = broker_id
        self.brokers = brokers
        self.rng = random.Random(seed)
        self.logs = logs
        self.metrics = BrokerMetrics(default_metrics_options(loop_lag_interval_seconds=0.1))
        self.replicas = FakeReplicaManager()
        self.controller = FakeController(ControllerState(active=False))
        self.purgatory = FakePurgatory({"produce": 0, "fetch": 0})
        self.coordinator = FakeCoordinator()
        # A real quota manager: a producer client-id quota, a request quota for one user.
        self.quotas = QuotaManager(11, 1)
        self.quotas.configure({
            QuotaEntity(None, "ingest"): {"producer_byte_rate": 400_000.0,
                                          "consumer_byte_rate": 800_000.0},
            QuotaEntity("etl"): {"request_percentage": 25.0}})
        self.metrics.describe(cluster_id="demo-cluster-id", rack=f"rack-{broker_id % 2}")
        self.metrics.attach(partitions=self.replicas, controller=self.controller,
                            purgatory=self.purgatory, groups=self.coordinator, logs=logs,
                            log_dirs=["/"], quotas=self.quotas, transactions=self)
        self.metrics.zookeeper.state_changed("CONNECTED")
        self.metrics.storage.recovered(0.4 + broker_id / 10, clean=9, unclean=0)
        self.committed: dict[tuple[str, str, int], int] = {}
        self.connections = 0
        self.ticks = 0

    def transaction_states(self) -> dict[str, int]:
        """The transaction coordinator's ids by state (a TransactionSource)."""
        return {"Ongoing": self.rng.randint(0, 4), "CompleteCommit": 12 + self.broker_id,
                "CompleteAbort": 1, "Empty": 2}

    def leads(self, partition: int) -> bool:
        return partition % self.brokers == self.broker_id

    def tick(self, now: float, shrunk: bool) -> None:
        """One step of workload: requests, traffic, state changes."""
        m, rng = self.metrics, self.rng
        for _ in range(rng.randint(20, 40)):
            remote = rng.expovariate(1 / 0.004)
            m.requests.observe(ApiKey.PRODUCE, rng.expovariate(1 / 0.0002),
                               rng.expovariate(1 / 0.0008), remote, rng.expovariate(1 / 0.0001))
            m.requests.observe(ApiKey.FETCH, rng.expovariate(1 / 0.0001),
                               rng.expovariate(1 / 0.0005), rng.uniform(0, 0.5), 0.0002)
        m.requests.observe(ApiKey.METADATA, 0.0001, 0.0006, 0.0, 0.0001)
        m.requests.error(ApiKey.PRODUCE, ErrorCode.not_leader_or_follower,
                         count=int(rng.random() < 0.3))
        if rng.random() < 0.2 or self.connections < 5:
            m.connections.opened("PLAINTEXT")
            self.connections += 1
        if rng.random() < 0.15 and self.connections > 1:
            m.connections.closed("PLAINTEXT")
            self.connections -= 1
        self.ticks += 1
        if self.ticks % 10 == 1:  # from the first step on: every family has its series
            m.purgatory.expired("fetch")
            m.connections.opened("PLAINTEXT")  # a short-lived connection
            m.connections.closed("PLAINTEXT")
            m.connections.authenticated("SASL_SSL", success=rng.random() < 0.9)
            m.connections.denied("Fetch", "Topic", "Read")
            m.cleaner.ran(rng.uniform(0.5, 3.0), read_bytes=rng.randint(1 << 20, 8 << 20),
                          written_bytes=rng.randint(1 << 19, 4 << 20))
            m.replication.isr_shrunk()
            m.replication.isr_expanded()
        for kind, client, amount in ((QuotaType.PRODUCE, "ingest", 60_000),
                                     (QuotaType.FETCH, "ingest", 90_000)):
            self.quotas.record(kind, "ANONYMOUS", client, rng.randint(0, amount))
        self.quotas.record(QuotaType.REQUEST, "etl", "spark", rng.uniform(0, 5))
        for _ in range(rng.randint(1, 4)):
            m.transactions.started()
            m.transactions.markers_written(rng.expovariate(1 / 0.004))
            m.transactions.completed(committed=rng.random() < 0.9)
        if self.ticks % 10 == 1:
            m.transactions.timed_out()
        m.storage.flushed(rng.expovariate(1 / 0.0003))
        m.storage.fsynced(rng.expovariate(1 / 0.003))
        m.zookeeper.request("getData", rng.expovariate(1 / 0.001))
        m.zookeeper.request("setData", rng.expovariate(1 / 0.003))
        m.traffic.replicated_in(rng.randint(10_000, 60_000))
        m.traffic.replicated_out(rng.randint(10_000, 60_000))
        states = []
        for topic, count in TOPICS.items():
            for partition in range(count):
                log = self.logs.logs[TopicPartition(topic, partition)]
                if self.leads(partition):
                    records = rng.randint(50, 150) * (3 if topic == "events" else 1)
                    log.append(records, int(now * 1000))
                    m.traffic.produced(topic, records * 120, records)
                    m.traffic.fetched(topic, records * 100)
                isr = 2 if shrunk and partition == 0 else 3
                seen_on_leader = log.end + rng.randint(0, 40)
                states.append(ReplicaSnapshot(
                    topic, partition, size_bytes=log.end * 120, segments=1 + log.end // 50_000,
                    log_start_offset=log.start, log_end_offset=log.end,
                    is_leader=self.leads(partition), replicas=3, in_sync_replicas=isr,
                    min_insync_replicas=2,
                    leader_end_offset=None if self.leads(partition) else seen_on_leader,
                    last_stable_offset=log.end - rng.randint(0, 30) if self.leads(partition)
                    else -1,
                    open_transactions=rng.randint(0, 2) if self.leads(partition) else 0,
                    oldest_open_transaction_ms=int(now * 1000) - rng.randint(0, 5000)))
        self.replicas.states = states
        self.purgatory.sizes = {"produce": rng.randint(0, 5), "fetch": rng.randint(5, 30)}
        if self.broker_id == 0:
            self.controller.state = ControllerState(
                active=True, offline_partitions=0, topics=len(TOPICS),
                partitions=sum(TOPICS.values()), event_queue_size=rng.randint(0, 2))
            m.controller.event_dequeued(rng.expovariate(1 / 0.002))

    def consume(self, now: float) -> None:
        """The coordinator on broker 1 owns two groups: one keeps up, one stalls every minute
        (a consumer-type group, KIP-848, whose epoch moves at each stall)."""
        if self.broker_id != 1:
            return
        slow_phase = int(now / 60) % 2 == 0
        for group, keep_up in (("billing", True), ("analytics", not slow_phase)):
            committed = {}
            for topic, count in TOPICS.items():
                for partition in range(count):
                    end = self.logs.logs[TopicPartition(topic, partition)].end
                    key = (group, topic, partition)
                    previous = self.committed.get(key, 0)
                    position = end if keep_up else previous + (end - previous) // 4
                    self.committed[key] = position
                    committed[TopicPartition(topic, partition)] = position
            if group == "billing":
                self.coordinator.set(group, "Stable", 3, committed, "classic", 1)
            else:
                self.coordinator.set(group, "Stable" if keep_up else "Reconciling",
                                     3 if keep_up else 2, committed, "consumer",
                                     2 * int(now / 60) + int(slow_phase))
        self.coordinator.set("archived", "Empty", 0, {TopicPartition("metrics", 0): 0})


class DemoCluster:
    """Three demo brokers and an operator, served from one event loop in a thread."""

    def __init__(self, brokers: int = 3, seed: int = 7) -> None:
        self.logs = FakeLogs({TopicPartition(topic, p): FakeLog() for topic, count in TOPICS.items()
                              for p in range(count)})
        self.brokers = [DemoBroker(i, brokers, self.logs, seed + i) for i in range(brokers)]
        self.operator = OperatorMetrics()
        self.ports: list[int] = []
        self.operator_port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="metrics-demo",
                                        daemon=True)
        self._started = time.time()
        self._rng = random.Random(seed)

    def start(self, interval: float = 0.25) -> DemoCluster:
        self._thread.start()

        async def begin() -> list[int]:
            ports = []
            for broker in self.brokers:
                broker.metrics.start()
                ports.append(broker.metrics.serve("127.0.0.1", 0))
            self._loop.call_soon(self._tick, interval)
            return ports

        self.ports = asyncio.run_coroutine_threadsafe(begin(), self._loop).result(30)
        self.operator_port = self.operator.serve("127.0.0.1", 0)
        return self

    def _tick(self, interval: float) -> None:
        now = time.time()
        shrunk = now - self._started > 5  # from 5 s on, partition 0 of each topic is short
        for broker in self.brokers:
            broker.tick(now, shrunk)
            broker.consume(now)
        for kind in ("BrokerCluster", "Topic", "ConsumerGroup"):
            failed = self._rng.random() < 0.05
            result = ReconcileOutcome.TEMPORARY_ERROR if failed else ReconcileOutcome.SUCCESS
            self.operator.reconciled(kind, result, self._rng.expovariate(1 / 0.2),
                                     "ClusterUnreachable" if failed else "")
        self.operator.under_replicated_observed(LABELS["namespace"], LABELS["cluster"],
                                                2 if shrunk else 0)
        self.operator.group_lag_observed(LABELS["namespace"], "analytics", "analytics",
                                         self._rng.randint(0, 5000))
        self._loop.call_later(interval, self._tick, interval)

    def targets(self) -> list[ScrapeTarget]:
        return [ScrapeTarget(f"127.0.0.1:{port}", {**LABELS, "broker": str(i)})
                for i, port in enumerate(self.ports)]

    def operator_target(self) -> ScrapeTarget:
        return ScrapeTarget(f"127.0.0.1:{self.operator_port}", {"namespace": "demo"})

    def stop(self) -> None:
        async def end() -> None:
            for broker in self.brokers:
                await broker.metrics.stop()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(end(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self.operator.close()
        self._loop.close()


@contextmanager
def demo_cluster(interval: float = 0.25) -> Iterator[DemoCluster]:
    cluster = DemoCluster().start(interval)
    try:
        yield cluster
    finally:
        cluster.stop()
