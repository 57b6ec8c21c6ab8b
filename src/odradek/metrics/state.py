"""Scrape-time collection of broker state: one hop onto the event loop per scrape.

The sources (:mod:`odradek.metrics.sources`, :mod:`odradek.metrics.lag`) read structures
that the event loop mutates, so they are called **on the loop**: the scrape thread schedules
one callback with ``call_soon_threadsafe`` and waits for it. That callback only copies plain
numbers out of the sources (a few milliseconds for thousands of partitions); turning them
into metric families and text happens back in the scrape thread, off the loop. Without a
running loop (a test calling ``collect`` directly, or before the broker starts) the sources
are read inline. If the loop does not answer within ``timeout`` (it is stuck: exactly when
an operator looks at metrics), the scrape still returns the recorded metrics and the
filesystem gauges, logs a warning, and leaves the state families out.

Consumer lag takes up to two more hops (:class:`~odradek.metrics.lag.LagCollector`): one
before the snapshot to start refreshing the end offsets of partitions led by other brokers
(the scrape thread, not the loop, waits for the answers, at most their timeout), and one
after it for the record timestamps of lag in seconds, once the rows are sorted and capped
in the scrape thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from prometheus_client.core import CounterMetricFamily, Metric

from odradek.clock import wall_s
from odradek.quota import QuotaState, QuotaType

from . import catalog as m
from .exposition import GaugeRows
from .lag import LagCollector, LagInput, LagSnapshot
from .limits import SeriesLimit
from .sources import (
    BrokerInfo,
    ControllerSource,
    ControllerState,
    PartitionSource,
    PurgatorySource,
    QuotaSource,
    ReplicaSnapshot,
    TransactionSource,
)

__all__ = ["StateCollector", "StateSources"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass
class StateSources:
    """What the broker attaches (``odradek.broker.metrics_sources``); every part is optional
    so tests attach only some."""

    partitions: PartitionSource | None = None
    controller: ControllerSource | None = None
    purgatory: PurgatorySource | None = None
    quotas: QuotaSource | None = None
    transactions: TransactionSource | None = None
    lag: LagCollector | None = None
    log_dirs: Sequence[str] = ()


@dataclass(frozen=True)
class _Snapshot:
    partitions: tuple[ReplicaSnapshot, ...] | None
    controller: ControllerState | None
    purgatory: dict[str, int] | None
    quotas: tuple[QuotaState, ...] | None
    transactions: dict[str, int] | None
    lag: LagInput | None
    tasks: int | None


def _gauge(spec: m.MetricSpec) -> GaugeRows:
    return GaugeRows(spec)


class StateCollector:
    def __init__(self, info: Callable[[], BrokerInfo], *, timeout: float = 5.0,
                 partition_lso_lag: SeriesLimit | None = None) -> None:
        """``partition_lso_lag``: the caps when per-topic labels are on (then the LSO lag is
        exported per partition, for at most that many topics); None leaves it out."""
        self.sources = StateSources()
        self._lso_lag_limit = partition_lso_lag
        self.loop: asyncio.AbstractEventLoop | None = None
        self._info = info
        self._timeout = timeout

    def collect(self) -> Iterator[Metric | GaugeRows]:
        info = self._info()
        broker_info = _gauge(m.BROKER_INFO)
        broker_info.add((info.version, info.cluster_id, info.rack), 1)
        yield broker_info
        yield from self._log_dirs()
        lag = self.sources.lag
        if lag is not None and not self._refresh_lag(lag):
            return  # the loop is stuck: one timeout per scrape is enough
        snapshot = self._on_loop(self._snapshot)
        if snapshot is not None:
            lag_snapshot, data = None, snapshot.lag
            if lag is not None and data is not None:
                lag_snapshot = _guard("lag", lambda: lag.compute(data, self._on_loop))
            yield from self._families(snapshot, lag_snapshot)

    def _refresh_lag(self, lag: LagCollector) -> bool:
        """Let remote end offsets be refreshed, and wait for them here, off the loop;
        False if the loop did not answer."""
        answered = self._on_loop(lambda: (_guard("lag refresh", lag.refresh),))
        if answered is None:
            return False
        pending = answered[0]
        if pending is not None and not self._in_loop_thread():  # (there, it would deadlock)
            try:
                pending.result(self._timeout)
            except concurrent.futures.TimeoutError:
                log.warning("metrics: end offsets not refreshed within %.1fs", self._timeout)
        return True

    def _in_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def _on_loop(self, read: Callable[[], _T]) -> _T | None:
        """``read()`` on the broker's loop (inline without one); None if the loop is stuck."""
        loop = self.loop
        if loop is None or self._in_loop_thread() or not loop.is_running():
            return read()
        done: concurrent.futures.Future[_T] = concurrent.futures.Future()

        def take() -> None:
            if done.set_running_or_notify_cancel():
                try:
                    done.set_result(read())
                except BaseException as exc:
                    done.set_exception(exc)

        try:
            loop.call_soon_threadsafe(take)
            return done.result(self._timeout)
        except RuntimeError:  # the loop closed between the check and the call
            return None
        except concurrent.futures.TimeoutError:
            done.cancel()
            log.warning("metrics: the event loop did not answer within %.1fs; "
                        "scrape without what it holds", self._timeout)
            return None

    def _snapshot(self) -> _Snapshot:
        sources = self.sources
        partitions, purgatory, quotas = sources.partitions, sources.purgatory, sources.quotas
        transactions = sources.transactions
        return _Snapshot(
            partitions=_guard("partitions", lambda: tuple(partitions.partitions()))
            if partitions else None,
            controller=_guard("controller", sources.controller.controller_state)
            if sources.controller else None,
            purgatory=_guard("purgatory", lambda: dict(purgatory.purgatory_sizes()))
            if purgatory else None,
            quotas=_guard("quotas", lambda: tuple(quotas.quota_states())) if quotas else None,
            transactions=_guard("transactions", lambda: dict(transactions.transaction_states()))
            if transactions else None,
            lag=_guard("lag", sources.lag.read) if sources.lag else None,
            tasks=len(asyncio.all_tasks(self.loop)) if self.loop is not None else None,
        )

    def _families(self, snapshot: _Snapshot,
                  lag: LagSnapshot | None) -> Iterator[Metric | GaugeRows]:
        if snapshot.partitions is not None:
            yield from _partition_families(snapshot.partitions)
            yield from _transaction_partition_families(snapshot.partitions, self._lso_lag_limit)
        if snapshot.transactions is not None:
            family = _gauge(m.TXN_IDS)
            for state_name, count in sorted(snapshot.transactions.items()):
                family.add((state_name,), count)
            yield family
        if snapshot.controller is not None:
            state = snapshot.controller
            for spec, value in (
                (m.CONTROLLER_ACTIVE, 1 if state.active else 0),
                (m.OFFLINE_PARTITIONS, state.offline_partitions if state.active else 0),
                (m.CONTROLLER_TOPICS, state.topics if state.active else 0),
                (m.CONTROLLER_PARTITIONS, state.partitions if state.active else 0),
                (m.CONTROLLER_QUEUE_SIZE, state.event_queue_size),
            ):
                family = _gauge(spec)
                family.add((), value)
                yield family
        if snapshot.purgatory is not None:
            family = _gauge(m.PURGATORY_SIZE)
            for operation, size in sorted(snapshot.purgatory.items()):
                family.add((operation,), size)
            yield family
        if snapshot.quotas is not None:
            yield from _quota_families(snapshot.quotas)
        if lag is not None:
            yield from LagCollector.families(lag)
        if snapshot.tasks is not None:
            family = _gauge(m.EVENT_LOOP_TASKS)
            family.add((), snapshot.tasks)
            yield family

    def _log_dirs(self) -> Iterator[Metric | GaugeRows]:
        """statvfs needs no loop state: read here, in the scrape thread."""
        if not self.sources.log_dirs:
            return
        capacity, free = _gauge(m.LOG_DIR_CAPACITY), _gauge(m.LOG_DIR_FREE)
        for path in self.sources.log_dirs:
            try:
                stats = os.statvfs(path)
            except OSError as exc:
                log.warning("metrics: cannot stat log dir %s: %s", path, exc)
                continue
            capacity.add((path,), stats.f_blocks * stats.f_frsize)
            free.add((path,), stats.f_bavail * stats.f_frsize)
        yield capacity
        yield free


def _guard(what: str, read: Callable[[], _T]) -> _T | None:
    """A failing source costs its own families, never the whole scrape."""
    try:
        return read()
    except Exception:
        log.exception("metrics: reading %s state failed", what)
        return None


def _partition_families(partitions: tuple[ReplicaSnapshot, ...]) -> Iterator[Metric | GaugeRows]:
    size, segments, start, end = (_gauge(spec) for spec in (
        m.LOG_SIZE, m.LOG_SEGMENTS, m.LOG_START_OFFSET, m.LOG_END_OFFSET))
    replicas, isr, under = (_gauge(spec) for spec in (
        m.PARTITION_REPLICAS, m.PARTITION_ISR, m.PARTITION_UNDER_REPLICATED))
    # the rows' list appends, bound once: this loop runs once per partition per scrape
    add_size, add_segments = size.rows.append, segments.rows.append
    add_start, add_end = start.rows.append, end.rows.append
    add_replicas, add_isr, add_under = replicas.rows.append, isr.rows.append, under.rows.append
    leaders = under_replicated = under_min = at_min = 0
    max_fetch_lag = 0
    for p in partitions:
        labels = (p.topic, str(p.partition))
        add_size((labels, p.size_bytes))
        add_segments((labels, p.segments))
        add_start((labels, p.log_start_offset))
        add_end((labels, p.log_end_offset))
        if p.is_leader:
            leaders += 1
            in_sync = p.in_sync_replicas
            short = in_sync < p.replicas
            under_replicated += short
            under_min += in_sync < p.min_insync_replicas
            at_min += in_sync == p.min_insync_replicas
            add_replicas((labels, p.replicas))
            add_isr((labels, in_sync))
            add_under((labels, 1 if short else 0))
        elif p.leader_end_offset is not None:
            max_fetch_lag = max(max_fetch_lag, p.leader_end_offset - p.log_end_offset)
    yield from (size, segments, start, end, replicas, isr, under)
    for spec, value in (
        (m.PARTITIONS, len(partitions)), (m.LEADER_PARTITIONS, leaders),
        (m.UNDER_REPLICATED, under_replicated), (m.UNDER_MIN_ISR, under_min),
        (m.AT_MIN_ISR, at_min), (m.FETCHER_MAX_LAG, max_fetch_lag),
    ):
        family = _gauge(spec)
        family.add((), value)
        yield family


def _transaction_partition_families(
    partitions: tuple[ReplicaSnapshot, ...], lso_lag_limit: SeriesLimit | None
) -> Iterator[GaugeRows]:
    """Open transactions and the oldest one's age over the partitions led here, and (with
    per-topic labels on, capped by topics) each led partition's LSO lag."""
    open_count = 0
    oldest = -1
    for p in partitions:
        if p.open_transactions:
            open_count += p.open_transactions
            if oldest < 0 or 0 <= p.oldest_open_transaction_ms < oldest:
                oldest = p.oldest_open_transaction_ms
    age = max(0.0, wall_s() - oldest / 1000) if oldest >= 0 else 0.0
    for spec, value in ((m.OPEN_TRANSACTIONS, float(open_count)),
                        (m.OLDEST_OPEN_TRANSACTION, age)):
        family = _gauge(spec)
        family.add((), value)
        yield family
    if lso_lag_limit is None:
        return
    leaders = [p for p in partitions if p.is_leader and p.last_stable_offset >= 0]
    name = m.PARTITION_LSO_LAG.name
    topics = sorted({p.topic for p in leaders})
    lso_lag_limit.retain_only(name, topics)
    admitted = set(lso_lag_limit.admit_all(name, topics))
    lag = _gauge(m.PARTITION_LSO_LAG)
    for p in leaders:
        if p.topic in admitted:
            lag.add((p.topic, str(p.partition)), p.log_end_offset - p.last_stable_offset)
    yield lag


_QUOTA_RATES = {QuotaType.PRODUCE: (m.QUOTA_PRODUCE_RATE, 1.0),
                QuotaType.FETCH: (m.QUOTA_FETCH_RATE, 1.0),
                QuotaType.REQUEST: (m.QUOTA_REQUEST_TIME, 0.01)}  # percent -> ratio
_QUOTA_NAMES = {QuotaType.PRODUCE: "produce", QuotaType.FETCH: "fetch",
                QuotaType.REQUEST: "request"}


def _quota_families(states: tuple[QuotaState, ...]) -> Iterator[Metric | GaugeRows]:
    rates = {kind: (_gauge(spec), scale) for kind, (spec, scale) in _QUOTA_RATES.items()}
    throttle_time = CounterMetricFamily(m.QUOTA_THROTTLE_TIME.name, m.QUOTA_THROTTLE_TIME.help,
                                        labels=m.QUOTA_THROTTLE_TIME.labels)
    throttled = CounterMetricFamily(m.QUOTA_THROTTLED.name, m.QUOTA_THROTTLED.help,
                                    labels=m.QUOTA_THROTTLED.labels)
    for state in states:
        family, scale = rates[state.kind]
        family.add((state.user, state.client_id), state.rate * scale)
        labels = [_QUOTA_NAMES[state.kind], state.user, state.client_id]
        throttle_time.add_metric(labels, state.throttle_seconds_total)
        throttled.add_metric(labels, state.throttled_total)
    for family, _scale in rates.values():
        yield family
    yield throttle_time
    yield throttled
