"""Cardinality caps: how many series a label-exploding family may export, and what was refused.

A Prometheus server degrades with the number of series, and some of ours grow with things
users create (topics, consumer groups). Each such family has a cap; a series beyond it is
not exported, and ``odradek_metrics_series_dropped_total{metric}`` counts each distinct
series refused, so a dashboard or alert can say "the cap is too low" instead of data just
going missing.

Admission is first come, first kept: a series admitted stays until it is released (a topic
deleted, a group's offsets expired), so the same series are exported scrape after scrape.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable
from typing import TypeVar

from prometheus_client.core import Metric

from . import catalog as m
from .families import MetricFamily

__all__ = ["SeriesLimit"]

_K = TypeVar("_K", bound=Hashable)


class SeriesLimit:
    """Per-metric caps, shared by every family of one broker."""

    def __init__(self, caps: dict[str, int]) -> None:
        self._caps = dict(caps)
        self._admitted: dict[str, set[Hashable]] = {name: set() for name in caps}
        self._refused: dict[str, set[Hashable]] = {name: set() for name in caps}
        self._dropped = MetricFamily(m.SERIES_DROPPED)
        self._lock = threading.Lock()
        for name in caps:
            self._dropped.labels(name)  # a zero is an answer; a missing series is not

    def admit(self, metric: str, key: Hashable) -> bool:
        """May ``key`` (one series of ``metric``) be exported? Counts it if refused."""
        with self._lock:
            admitted = self._admitted[metric]
            if key in admitted:
                return True
            if len(admitted) < self._caps[metric]:
                admitted.add(key)
                self._refused[metric].discard(key)
                return True
            refused = self._refused[metric]
            if key not in refused:
                refused.add(key)
                self._dropped.labels(metric).inc()
            return False

    def admit_all(self, metric: str, keys: Iterable[_K]) -> list[_K]:
        """The ``keys`` that may be exported, in order: :meth:`admit` for each under one
        lock acquisition (thousands of lag rows per scrape, on the event loop)."""
        kept = []
        with self._lock:
            admitted, refused = self._admitted[metric], self._refused[metric]
            cap = self._caps[metric]
            for key in keys:
                if key in admitted:
                    kept.append(key)
                elif len(admitted) < cap:
                    admitted.add(key)
                    refused.discard(key)
                    kept.append(key)
                elif key not in refused:
                    refused.add(key)
                    self._dropped.labels(metric).inc()
        return kept

    def release(self, metric: str, key: Hashable) -> None:
        with self._lock:
            self._admitted[metric].discard(key)
            self._refused[metric].discard(key)

    def retain_only(self, metric: str, present: Iterable[Hashable]) -> None:
        """Forget series (admitted or refused) whose subject no longer exists."""
        keep = set(present)
        with self._lock:
            self._admitted[metric] &= keep
            self._refused[metric] &= keep

    def collect(self) -> Metric:
        return self._dropped.collect()
