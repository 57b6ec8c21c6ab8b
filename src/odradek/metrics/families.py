"""Metric families that cost a few hundred nanoseconds to record.

prometheus-client's own ``Counter``/``Histogram`` take a lock on every ``inc``/``observe``
and resolve label values through a dict on every ``labels()`` call: about a microsecond or
two per observation. The broker records on the produce path, once per request and partition,
so these families keep plain Python numbers instead and are read when Prometheus scrapes:

* a child (one label combination) is resolved once by the caller and kept
  (``child = family.labels("Produce")``), so recording is an attribute update;
* writes come from one thread, the broker's event loop (the single writer). A scrape runs in
  the exposition thread and only reads: it copies each child's numbers (a list copy is atomic
  under the GIL), so a sample may miss an observation in flight but never sees a torn one;
* families written from other threads (kazoo callbacks, fsync in an executor, the operator's
  sync handlers) are built with ``thread_safe=True`` and take a lock per observation: those
  events are milliseconds apart, so the lock costs nothing that matters.

A histogram child keeps non-cumulative bucket counts (one ``bisect`` and one increment per
observation); cumulative counts and ``_count`` are computed at scrape time, so the exposed
``+Inf`` bucket always equals ``_count``.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from .catalog_types import Kind, MetricSpec

__all__ = [
    "CounterChild",
    "GaugeChild",
    "HistogramChild",
    "MetricFamily",
    "format_bound",
]


class CounterChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class _LockedCounterChild(CounterChild):
    __slots__ = ("_lock",)

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            self.value += amount


class GaugeChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = value

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class HistogramChild:
    """Bucket counts for one label combination: ``counts[i]`` counts the values in
    ``(bounds[i-1], bounds[i]]``; the last slot is +Inf."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    def snapshot(self) -> tuple[list[int], float]:
        return self.counts.copy(), self.sum


class _LockedHistogramChild(HistogramChild):
    __slots__ = ("_lock",)

    def __init__(self, bounds: tuple[float, ...]) -> None:
        super().__init__(bounds)
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        with self._lock:
            self.counts[bisect_left(self.bounds, value)] += 1
            self.sum += value

    def snapshot(self) -> tuple[list[int], float]:
        with self._lock:
            return self.counts.copy(), self.sum


def format_bound(bound: float) -> str:
    """The ``le`` label as prometheus-client writes it (``0.005``, ``1.0``, ``+Inf``)."""
    return floatToGoString(bound)


class MetricFamily:
    """All children of one :class:`MetricSpec`, keyed by their label values."""

    def __init__(self, spec: MetricSpec, *, thread_safe: bool = False) -> None:
        self.spec = spec
        self._children: dict[tuple[str, ...], Any] = {}
        self._thread_safe = thread_safe
        self._create_lock = threading.Lock()
        self._le = [format_bound(b) for b in spec.buckets] + ["+Inf"]

    def labels(self, *values: str) -> Any:
        """The child for these label values, created on first use (keep it: it is the fast path)."""
        child = self._children.get(values)
        if child is not None:
            return child
        if len(values) != len(self.spec.labels):
            raise ValueError(f"{self.spec.name} takes labels {self.spec.labels}, got {values}")
        with self._create_lock:  # two threads must not create two children for one key
            child = self._children.get(values)
            if child is None:
                child = self._children[values] = self._new_child()
        return child

    def remove(self, *values: str) -> None:
        """Forget one label combination (a deleted topic, a closed listener)."""
        with self._create_lock:
            self._children.pop(values, None)

    def _new_child(self) -> Any:
        kind = self.spec.kind
        if kind is Kind.COUNTER:
            return _LockedCounterChild() if self._thread_safe else CounterChild()
        if kind is Kind.GAUGE:
            return GaugeChild()
        if self._thread_safe:
            return _LockedHistogramChild(self.spec.buckets)
        return HistogramChild(self.spec.buckets)

    def collect(self) -> Metric:
        """The family as prometheus-client's exposition types (called by the scrape thread)."""
        spec = self.spec
        children = self._children.copy()  # one C call under the GIL: a consistent view
        if spec.kind is Kind.HISTOGRAM:
            histogram = HistogramMetricFamily(spec.name, spec.help, labels=spec.labels)
            for values, child in children.items():
                counts, total = child.snapshot()
                cumulative, buckets = 0, []
                for le, count in zip(self._le, counts, strict=True):
                    cumulative += count
                    buckets.append((le, cumulative))
                histogram.add_metric(list(values), buckets, total)
            return histogram
        metric: Metric
        if spec.kind is Kind.COUNTER:
            metric = CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
        else:
            metric = GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)
        for values, child in children.items():
            metric.add_metric(list(values), child.value)
        return metric
