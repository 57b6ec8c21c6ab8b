"""The typed calls the broker makes when something happens (the recorded metrics).

Each recorder owns the families of one concern and exposes one method per event, named for
the event (``traffic.produced(topic, size, records)``), so wiring a call site is one line
and the metric names stay in the catalog. Methods on the produce/fetch path resolve their
label children once and cache them; see :mod:`odradek.metrics.families` for the threading
rules (event-loop recorders are single-writer; the ZooKeeper, disk and cleaner recorders are
thread-safe because kazoo callbacks and executor threads call them).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from odradek.clock import wall_s
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.errors import ErrorCode

from . import catalog as m
from .families import CounterChild, HistogramChild, MetricFamily
from .limits import SeriesLimit

__all__ = [
    "CleanerMetrics",
    "ConnectionMetrics",
    "ControllerMetrics",
    "FetchSessionMetrics",
    "PurgatoryMetrics",
    "ReplicationMetrics",
    "RequestMetrics",
    "StorageMetrics",
    "TrafficMetrics",
    "TransactionMetrics",
    "ZooKeeperMetrics",
    "api_name",
    "error_name",
]

PHASES = ("queue", "local", "remote", "send")
ZOOKEEPER_STATES = ("connected", "suspended", "lost")


def api_name(api_key: int) -> str:
    """Kafka's request name for an API key (``ListOffsets``), as in Kafka's ``request`` label."""
    try:
        return ApiKey(api_key).name.title().replace("_", "")
    except ValueError:
        return str(api_key)


def error_name(code: int) -> str:
    """Kafka's error name (``NOT_LEADER_OR_FOLLOWER``) for an error code."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)


class _Recorder:
    """Holds the families of one concern; :meth:`collect` yields them for the scrape."""

    families: tuple[MetricFamily, ...] = ()

    def collect(self) -> Iterator[Metric]:
        for family in self.families:
            yield family.collect()


class TrafficMetrics(_Recorder):
    """Bytes and records in and out; per topic only when ``per_topic`` (bounded by ``limit``)."""

    def __init__(self, *, per_topic: bool, limit: SeriesLimit) -> None:
        broker_wide = [MetricFamily(spec) for spec in (
            m.BYTES_IN, m.MESSAGES_IN, m.BYTES_OUT, m.REPLICATION_BYTES_IN,
            m.REPLICATION_BYTES_OUT)]
        (self._bytes_in, self._messages_in, self._bytes_out, self._replication_in,
         self._replication_out) = (family.labels() for family in broker_wide)
        self._topic_bytes_in = MetricFamily(m.TOPIC_BYTES_IN)
        self._topic_messages_in = MetricFamily(m.TOPIC_MESSAGES_IN)
        self._topic_bytes_out = MetricFamily(m.TOPIC_BYTES_OUT)
        self._per_topic = per_topic
        self._limit = limit
        self._topics: dict[str, tuple[CounterChild, CounterChild, CounterChild] | None] = {}
        per_topic_families = (self._topic_bytes_in, self._topic_messages_in,
                              self._topic_bytes_out)
        self.families = (*broker_wide, *(per_topic_families if per_topic else ()))

    def produced(self, topic: str, size_bytes: int, records: int) -> None:
        """Record batches from a Produce request were appended to ``topic``."""
        self._bytes_in.value += size_bytes
        self._messages_in.value += records
        if self._per_topic:
            try:
                children = self._topics[topic]
            except KeyError:
                children = self._add_topic(topic)
            if children is not None:
                children[0].value += size_bytes
                children[1].value += records

    def fetched(self, topic: str, size_bytes: int) -> None:
        """Record bytes of ``topic`` were put in a Fetch response to a consumer."""
        self._bytes_out.value += size_bytes
        if self._per_topic:
            try:
                children = self._topics[topic]
            except KeyError:
                children = self._add_topic(topic)
            if children is not None:
                children[2].value += size_bytes

    def replicated_in(self, size_bytes: int) -> None:
        """The replica fetcher appended ``size_bytes`` of records from a leader."""
        self._replication_in.value += size_bytes

    def replicated_out(self, size_bytes: int) -> None:
        """A follower's Fetch response carried ``size_bytes`` of records."""
        self._replication_out.value += size_bytes

    def forget_topic(self, topic: str) -> None:
        """A deleted topic: drop its series and free its place under the cap."""
        if self._topics.pop(topic, None) is not None:
            for family in (self._topic_bytes_in, self._topic_messages_in, self._topic_bytes_out):
                family.remove(topic)
            self._limit.release(m.TOPIC_BYTES_IN.name, (topic,))

    def _add_topic(self, topic: str) -> tuple[CounterChild, CounterChild, CounterChild] | None:
        children: tuple[CounterChild, CounterChild, CounterChild] | None = None
        if self._limit.admit(m.TOPIC_BYTES_IN.name, (topic,)):
            children = (self._topic_bytes_in.labels(topic), self._topic_messages_in.labels(topic),
                        self._topic_bytes_out.labels(topic))
        self._topics[topic] = children
        return children


class _ApiChildren:
    __slots__ = ("count", "local", "queue", "remote", "send", "total")

    def __init__(self, requests: MetricFamily, total: MetricFamily, phases: MetricFamily,
                 api: str) -> None:
        self.count: CounterChild = requests.labels(api)
        self.total: HistogramChild = total.labels(api)
        self.queue: HistogramChild = phases.labels(api, "queue")
        self.local: HistogramChild = phases.labels(api, "local")
        self.remote: HistogramChild = phases.labels(api, "remote")
        self.send: HistogramChild = phases.labels(api, "send")


class RequestMetrics(_Recorder):
    """Requests, errors and latency per API, latency split into Kafka's phases."""

    def __init__(self) -> None:
        self._requests = MetricFamily(m.REQUESTS)
        self._errors = MetricFamily(m.REQUEST_ERRORS)
        self._total = MetricFamily(m.REQUEST_DURATION)
        self._phases = MetricFamily(m.REQUEST_PHASE_DURATION)
        self._by_api: dict[int, _ApiChildren] = {}
        self._error_children: dict[tuple[int, int], CounterChild] = {}
        self.families = (self._requests, self._errors, self._total, self._phases)

    def observe(self, api_key: int, queue: float, local: float, remote: float,
                send: float) -> None:
        """One request answered; the four phase durations in seconds (see the catalog)."""
        children = self._by_api.get(api_key)
        if children is None:
            children = self._by_api[api_key] = _ApiChildren(
                self._requests, self._total, self._phases, api_name(api_key))
        children.count.value += 1
        children.total.observe(queue + local + remote + send)
        children.queue.observe(queue)
        children.local.observe(local)
        children.remote.observe(remote)
        children.send.observe(send)

    def error(self, api_key: int, error_code: int, count: int = 1) -> None:
        """A response carried ``count`` occurrences of a non-zero error code."""
        child = self._error_children.get((api_key, error_code))
        if child is None:
            child = self._errors.labels(api_name(api_key), error_name(error_code))
            self._error_children[(api_key, error_code)] = child
        child.value += count


class ConnectionMetrics(_Recorder):
    """Connections opened and closed per listener; the open count is derived at scrape."""

    def __init__(self) -> None:
        self._opened = MetricFamily(m.CONNECTIONS_OPENED)
        self._closed = MetricFamily(m.CONNECTIONS_CLOSED)
        self._authentications = MetricFamily(m.AUTHENTICATIONS)
        self._denials = MetricFamily(m.AUTHORIZATION_DENIALS)
        self.families = (self._opened, self._closed, self._authentications, self._denials)

    def opened(self, listener: str) -> None:
        self._opened.labels(listener).value += 1

    def closed(self, listener: str) -> None:
        self._closed.labels(listener).value += 1

    def authenticated(self, listener: str, success: bool) -> None:
        self._authentications.labels(listener, "success" if success else "failure").value += 1

    def denied(self, api: str, resource_type: str, operation: str) -> None:
        self._denials.labels(api, resource_type, operation).value += 1

    def collect(self) -> Iterator[Metric]:
        opened, closed = self._opened.collect(), self._closed.collect()
        yield opened
        yield closed
        yield self._authentications.collect()
        yield self._denials.collect()
        closed_by = {s.labels["listener"]: s.value for s in closed.samples
                     if s.name.endswith("_total")}
        open_now = GaugeMetricFamily(m.CONNECTIONS.name, m.CONNECTIONS.help, labels=["listener"])
        for sample in opened.samples:
            if sample.name.endswith("_total"):
                listener = sample.labels["listener"]
                open_now.add_metric([listener], sample.value - closed_by.get(listener, 0.0))
        yield open_now


class PurgatoryMetrics(_Recorder):
    def __init__(self) -> None:
        self._expirations = MetricFamily(m.PURGATORY_EXPIRATIONS)
        self.families = (self._expirations,)

    def expired(self, operation: str, count: int = 1) -> None:
        """A delayed operation was completed by its timeout, not by its condition (``count``
        0 creates the series: no expiry yet is a value, not a gap)."""
        self._expirations.labels(operation).value += count


class FetchSessionMetrics(_Recorder):
    """The incremental fetch session cache: its size, and evictions."""

    def __init__(self) -> None:
        families = [MetricFamily(spec) for spec in (
            m.FETCH_SESSIONS, m.FETCH_SESSION_PARTITIONS, m.FETCH_SESSION_EVICTIONS)]
        self._sessions, self._partitions, self._evictions = (f.labels() for f in families)
        self.families = tuple(families)

    def changed(self, sessions: int, partitions: int) -> None:
        self._sessions.set(sessions)
        self._partitions.set(partitions)

    def evicted(self) -> None:
        self._evictions.value += 1


class StorageMetrics(_Recorder):
    """Flush and fsync latency (thread-safe: flushes may run in an executor), recovery."""

    def __init__(self) -> None:
        self._flush = MetricFamily(m.LOG_FLUSH_DURATION, thread_safe=True)
        self._fsync = MetricFamily(m.LOG_FSYNC_DURATION, thread_safe=True)
        self._recovery = MetricFamily(m.LOG_RECOVERY_DURATION)
        self._recovered = MetricFamily(m.LOG_RECOVERED_PARTITIONS)
        self._flush_child = self._flush.labels()
        self._fsync_child = self._fsync.labels()
        self.families = (self._flush, self._fsync, self._recovery, self._recovered)

    def flushed(self, seconds: float) -> None:
        self._flush_child.observe(seconds)

    def fsynced(self, seconds: float) -> None:
        self._fsync_child.observe(seconds)

    def recovered(self, seconds: float, *, clean: int, unclean: int) -> None:
        """Log loading finished at start-up: how long, and how many partitions of each kind."""
        self._recovery.labels().set(seconds)
        self._recovered.labels("true").set(clean)
        self._recovered.labels("false").set(unclean)


class CleanerMetrics(_Recorder):
    def __init__(self) -> None:
        self._runs = MetricFamily(m.CLEANER_RUNS, thread_safe=True)
        self._errors = MetricFamily(m.CLEANER_ERRORS, thread_safe=True)
        self._duration = MetricFamily(m.CLEANER_DURATION, thread_safe=True)
        self._read = MetricFamily(m.CLEANER_READ, thread_safe=True)
        self._written = MetricFamily(m.CLEANER_WRITTEN, thread_safe=True)
        self._last = MetricFamily(m.CLEANER_LAST_RUN)
        for family in (self._runs, self._errors, self._read, self._written, self._last):
            family.labels()  # present from the start: "no run yet" is a value, not a gap
        self.families = (self._runs, self._errors, self._duration, self._read, self._written,
                         self._last)

    def ran(self, seconds: float, *, read_bytes: int, written_bytes: int,
            ended_at: float | None = None) -> None:
        """One compaction pass ended."""
        self._runs.labels().inc()
        self._duration.labels().observe(seconds)
        self._read.labels().inc(read_bytes)
        self._written.labels().inc(written_bytes)
        self._last.labels().set(wall_s() if ended_at is None else ended_at)

    def failed(self) -> None:
        self._errors.labels().inc()


class ReplicationMetrics(_Recorder):
    def __init__(self) -> None:
        self._shrinks = MetricFamily(m.ISR_SHRINKS)
        self._expands = MetricFamily(m.ISR_EXPANDS)
        self._fetcher_failures = MetricFamily(m.FETCHER_FAILURES)
        self._leader_throttled = MetricFamily(m.LEADER_THROTTLED_BYTES)
        self._follower_throttled = MetricFamily(m.FOLLOWER_THROTTLED_BYTES)
        self._shrinks_child = self._shrinks.labels()
        self._expands_child = self._expands.labels()
        self._fetcher_failures_child = self._fetcher_failures.labels()
        self._leader_throttled_child = self._leader_throttled.labels()
        self._follower_throttled_child = self._follower_throttled.labels()
        self.families = (self._shrinks, self._expands, self._fetcher_failures,
                         self._leader_throttled, self._follower_throttled)

    def isr_shrunk(self, replicas: int = 1) -> None:
        self._shrinks_child.value += replicas

    def isr_expanded(self, replicas: int = 1) -> None:
        self._expands_child.value += replicas

    def fetcher_failed(self) -> None:
        """A replica fetcher caught an unexpected error and backs off before resuming."""
        self._fetcher_failures_child.value += 1

    def leader_throttled(self, size_bytes: int) -> None:
        """Bytes sent to followers of throttled replicas (the leader's replication quota)."""
        self._leader_throttled_child.value += size_bytes

    def follower_throttled(self, size_bytes: int) -> None:
        """Bytes fetched for throttled replicas (the follower's replication quota)."""
        self._follower_throttled_child.value += size_bytes


class ControllerMetrics(_Recorder):
    def __init__(self) -> None:
        self._queue_time = MetricFamily(m.CONTROLLER_QUEUE_TIME)
        self._activations = MetricFamily(m.CONTROLLER_ACTIVATIONS)
        self._elections = MetricFamily(m.LEADER_ELECTIONS)
        self._unclean = MetricFamily(m.UNCLEAN_LEADER_ELECTIONS)
        for family in (self._activations, self._elections, self._unclean):
            family.labels()
        self.families = (self._queue_time, self._activations, self._elections, self._unclean)

    def activated(self) -> None:
        """This broker won the controller election."""
        self._activations.labels().inc()

    def event_dequeued(self, waited_seconds: float) -> None:
        self._queue_time.labels().observe(waited_seconds)

    def leader_elected(self, *, unclean: bool = False, partitions: int = 1) -> None:
        self._elections.labels().inc(partitions)
        if unclean:
            self._unclean.labels().inc(partitions)


class TransactionMetrics(_Recorder):
    """The transaction coordinator's events (on the event loop: single writer)."""

    def __init__(self) -> None:
        self._started = MetricFamily(m.TXN_STARTED)
        self._committed = MetricFamily(m.TXN_COMMITTED)
        self._aborted = MetricFamily(m.TXN_ABORTED)
        self._timed_out = MetricFamily(m.TXN_TIMED_OUT)
        self._markers = MetricFamily(m.TXN_MARKER_DURATION)
        for family in (self._started, self._committed, self._aborted, self._timed_out):
            family.labels()
        self.families = (self._started, self._committed, self._aborted, self._timed_out,
                         self._markers)

    def started(self) -> None:
        self._started.labels().inc()

    def completed(self, *, committed: bool) -> None:
        (self._committed if committed else self._aborted).labels().inc()

    def timed_out(self) -> None:
        self._timed_out.labels().inc()

    def markers_written(self, seconds: float) -> None:
        self._markers.labels().observe(seconds)


class ZooKeeperMetrics(_Recorder):
    """Session state and request latency (thread-safe: kazoo calls back from its threads)."""

    def __init__(self) -> None:
        self._state = MetricFamily(m.ZK_SESSION_STATE)
        self._expirations = MetricFamily(m.ZK_EXPIRATIONS, thread_safe=True)
        self._latency = MetricFamily(m.ZK_REQUEST_DURATION, thread_safe=True)
        for state in ZOOKEEPER_STATES:
            self._state.labels(state)
        self._expirations.labels()
        self.families = (self._state, self._expirations, self._latency)

    def state_changed(self, state: str) -> None:
        """kazoo's ``KazooState`` name (CONNECTED, SUSPENDED, LOST); LOST counts an expiry."""
        state = state.lower()
        if state not in ZOOKEEPER_STATES:
            raise ValueError(f"unknown ZooKeeper session state {state!r}")
        for name in ZOOKEEPER_STATES:
            self._state.labels(name).set(1.0 if name == state else 0.0)
        if state == "lost":
            self._expirations.labels().inc()

    def request(self, operation: str, seconds: float) -> None:
        self._latency.labels(operation).observe(seconds)
