"""Prometheus metrics of odradek: catalog, recorders, scrape-time collectors, exposition.

The public surface is :class:`BrokerMetrics` (one per broker) and the protocols a broker
implements for scrape-time state (:mod:`odradek.metrics.sources`, :mod:`odradek.metrics.lag`).
Dashboards and alert rules are generated from the same names by the build-time tooling of
the separate package :mod:`odradek_monitoring`; ``docs/observability.md`` explains the whole.
"""

from .options import MetricsOptions
from .registry import BrokerMetrics

__all__ = ["BrokerMetrics", "MetricsOptions"]
