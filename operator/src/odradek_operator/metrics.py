"""The operator's own Prometheus metrics (DESIGN.md §5 naming: ``odradek_`` prefix, base units).

Per kind (``BrokerCluster``, ``Topic``, ``ConsumerGroup``): reconciles by result, errors by
reason, reconcile duration; plus the consumer-group lag the ConsumerGroup resources observe,
so a dashboard can chart lag without a separate exporter.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

__all__ = ["REGISTRY", "observe_reconcile", "serve_metrics"]

REGISTRY = CollectorRegistry(auto_describe=True)

RECONCILES = Counter(
    "odradek_operator_reconciles", "Reconciles run, by kind and result "
    "(success, temporary, permanent, error).", ["kind", "result"], registry=REGISTRY)
ERRORS = Counter(
    "odradek_operator_reconcile_errors", "Reconciles that did not succeed, by kind and reason.",
    ["kind", "reason"], registry=REGISTRY)
DURATION = Histogram(
    "odradek_operator_reconcile_duration_seconds", "Time one reconcile took, by kind.",
    ["kind"], registry=REGISTRY,
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
GROUP_LAG = Gauge(
    "odradek_operator_consumergroup_lag_messages", "Total lag of a consumer group as last "
    "observed by its ConsumerGroup resource.", ["namespace", "name", "group"],
    registry=REGISTRY)
UNDER_REPLICATED = Gauge(
    "odradek_operator_brokercluster_under_replicated_partitions", "Under-replicated "
    "partitions of a BrokerCluster as last observed.", ["namespace", "name"], registry=REGISTRY)


class ReconcileRecord:
    def __init__(self) -> None:
        self.result = "success"
        self.reason = ""


@contextmanager
def observe_reconcile(kind: str) -> Iterator[ReconcileRecord]:
    """Time a reconcile; the caller sets ``record.result``/``record.reason`` when it fails."""
    record = ReconcileRecord()
    started = time.monotonic()
    try:
        yield record
    except BaseException:
        if record.result == "success":
            record.result, record.reason = "error", record.reason or "Unexpected"
        raise
    finally:
        DURATION.labels(kind).observe(time.monotonic() - started)
        RECONCILES.labels(kind, record.result).inc()
        if record.result != "success":
            ERRORS.labels(kind, record.reason or record.result).inc()


def serve_metrics(port: int) -> None:
    start_http_server(port, registry=REGISTRY)
