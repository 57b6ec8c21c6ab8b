"""One broker's metrics: recorders, scrape-time collectors, registry and HTTP server.

Each broker owns a :class:`BrokerMetrics` (never prometheus-client's global registry: tests
run several brokers in one process, and each must export only its own numbers). The broker
records events through the typed recorders (``metrics.requests.observe(...)``,
``metrics.traffic.produced(...)``), attaches its state through :meth:`BrokerMetrics.attach`,
and calls :meth:`start`/:meth:`stop` with its own life cycle. Tests read the same registry
in-process with :meth:`exposition` or :meth:`sample`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import Metric

from . import catalog as m
from .exposition import GaugeRows, LabelText, MetricsHTTPServer, render
from .families import MetricFamily
from .lag import LAG, MEMBERS, GroupSource, LagCollector, LogOffsetsSource
from .limits import SeriesLimit
from .options import MetricsOptions
from .probe import EventLoopLagProbe
from .recorders import (
    CleanerMetrics,
    ConnectionMetrics,
    ControllerMetrics,
    FetchSessionMetrics,
    PurgatoryMetrics,
    ReplicationMetrics,
    RequestMetrics,
    StorageMetrics,
    TrafficMetrics,
    TransactionMetrics,
    ZooKeeperMetrics,
)
from .sources import (
    BrokerInfo,
    ControllerSource,
    PartitionSource,
    PurgatorySource,
    QuotaSource,
    TransactionSource,
)
from .state import StateCollector

__all__ = ["BrokerMetrics"]

log = logging.getLogger(__name__)


def _version() -> str:
    try:
        return version("odradek")
    except PackageNotFoundError:
        return "unknown"


class _Collector:
    """Adapts the broker's recorders and state to prometheus-client's collector protocol."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric | GaugeRows]:
        metrics = self._metrics
        for recorder in metrics.recorders:
            yield from recorder.collect()
        yield metrics.event_loop_lag.collect()
        yield metrics.limits.collect()
        yield from metrics.state.collect()


class BrokerMetrics:
    """The metrics of one broker. Recorders are public attributes named for their concern."""

    def __init__(self, options: MetricsOptions | None = None, *,
                 process_metrics: bool = True) -> None:
        self.options = options = options or MetricsOptions()
        self.limits = SeriesLimit({
            m.TOPIC_BYTES_IN.name: options.max_topics,
            LAG.name: options.max_lag_series,
            MEMBERS.name: options.max_groups,
            m.PARTITION_LSO_LAG.name: options.max_topics,
        })
        self.traffic = TrafficMetrics(per_topic=options.topic_labels, limit=self.limits)
        self.requests = RequestMetrics()
        self.connections = ConnectionMetrics()
        self.purgatory = PurgatoryMetrics()
        self.fetch_sessions = FetchSessionMetrics()
        self.storage = StorageMetrics()
        self.cleaner = CleanerMetrics()
        self.replication = ReplicationMetrics()
        self.controller = ControllerMetrics()
        self.zookeeper = ZooKeeperMetrics()
        self.transactions = TransactionMetrics()
        self.recorders = (self.traffic, self.requests, self.connections, self.purgatory,
                          self.fetch_sessions, self.storage, self.cleaner, self.replication,
                          self.controller,
                          self.zookeeper, self.transactions)
        self.event_loop_lag = MetricFamily(m.EVENT_LOOP_LAG)
        self._probe = EventLoopLagProbe(self.event_loop_lag.labels(),
                                        options.loop_lag_interval_seconds)
        self._info = BrokerInfo(version=_version())
        self.state = StateCollector(
            lambda: self._info,
            partition_lso_lag=self.limits if options.topic_labels else None)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self))  # type: ignore[arg-type]  # GaugeRows too
        if process_metrics:  # process_* from /proc/self: the same for brokers sharing a process
            ProcessCollector(registry=self.registry)
        self._label_text = LabelText()  # label blocks formatted once, reused every scrape
        self._server: MetricsHTTPServer | None = None

    # --- what the broker attaches -------------------------------------------------------------
    def describe(self, *, cluster_id: str | None = None, rack: str | None = None) -> None:
        """Fill ``odradek_broker_info``'s labels once they are known."""
        self._info = replace(
            self._info,
            cluster_id=self._info.cluster_id if cluster_id is None else cluster_id,
            rack=self._info.rack if rack is None else rack)

    def attach(self, *, partitions: PartitionSource | None = None,
               controller: ControllerSource | None = None,
               purgatory: PurgatorySource | None = None,
               quotas: QuotaSource | None = None,
               transactions: TransactionSource | None = None,
               groups: GroupSource | None = None, logs: LogOffsetsSource | None = None,
               log_dirs: Sequence[str] | None = None) -> None:
        """Connect state read at scrape time. ``groups`` and ``logs`` come together (lag)."""
        sources = self.state.sources
        if partitions is not None:
            sources.partitions = partitions
        if controller is not None:
            sources.controller = controller
        if purgatory is not None:
            sources.purgatory = purgatory
        if quotas is not None:
            sources.quotas = quotas
        if transactions is not None:
            sources.transactions = transactions
        if (groups is None) != (logs is None):
            raise ValueError("consumer lag needs both the group source and the log source")
        if groups is not None and logs is not None:
            sources.lag = LagCollector(groups, logs, self.limits,
                                       timestamp_reads=self.options.lag_timestamp_reads)
        if log_dirs is not None:
            sources.log_dirs = tuple(log_dirs)

    # --- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        """On the broker's loop: remember it for scrape-time reads, start the loop-lag probe,
        and serve ``/metrics`` when ``options.port`` is set."""
        self.state.loop = asyncio.get_running_loop()
        self._probe.start()
        if self.options.port:
            self.serve(self.options.host, self.options.port)

    def serve(self, host: str, port: int) -> int:
        """Serve ``/metrics`` from a daemon thread (port 0: any free port); returns the port."""
        if self._server is not None:
            raise RuntimeError("the metrics server is already running")
        self._server = MetricsHTTPServer(self.exposition, host, port)
        bound = self._server.port
        log.info("metrics: serving http://%s:%d/metrics", host, bound)
        return bound

    @property
    def port(self) -> int | None:
        return None if self._server is None else self._server.port

    async def stop(self) -> None:
        await self._probe.stop()
        server, self._server = self._server, None
        if server is not None:
            await asyncio.to_thread(server.close)
        self.state.loop = None

    # --- reading, for tests and tools ---------------------------------------------------------
    def exposition(self) -> bytes:
        """The text a scrape would get (Prometheus text format 0.0.4)."""
        return render(self.registry.collect(), self._label_text)

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """One sample's value, as prometheus-client reads it (None if absent)."""
        return self.registry.get_sample_value(name, labels or {})

    def __repr__(self) -> str:
        return f"BrokerMetrics(port={self.port})"
