"""The operator's metrics: names shared by the operator (which records them) and the dashboards.

The kopf operator (package ``odradek_operator``) imports this module and calls
``OperatorMetrics.reconciled(kind, result, seconds)`` once per handler run; the operator
dashboard and the docs read the same specs. ``result`` is one of :data:`RESULTS`: the
operator's errors are typed by what happens next (temporary: retried after a delay;
permanent: reported in status and not retried).
"""

from __future__ import annotations

from .catalog_types import Kind, MetricSpec
from .exposition import MetricsHTTPServer, render
from .families import MetricFamily

__all__ = ["KINDS", "OPERATOR_METRICS", "RESULTS", "OperatorMetrics"]

KINDS = ("BrokerCluster", "Topic", "ConsumerGroup")
RESULTS = ("success", "temporary_error", "permanent_error")
RECONCILE_SECONDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

RECONCILES = MetricSpec(
    "odradek_operator_reconcile_total", Kind.COUNTER,
    "Reconciliations finished, by resource kind and result (success, temporary_error, "
    "permanent_error).", ("kind", "result"), source="OperatorMetrics.reconciled")
RECONCILE_DURATION = MetricSpec(
    "odradek_operator_reconcile_duration_seconds", Kind.HISTOGRAM,
    "Duration of one reconciliation, by resource kind.", ("kind",),
    source="OperatorMetrics.reconciled", buckets=RECONCILE_SECONDS)
OPERATOR_METRICS = (RECONCILES, RECONCILE_DURATION)


class OperatorMetrics:
    """Thread-safe (kopf runs sync handlers in threads). Every kind/result starts at 0 so
    an error ratio is defined before the first error."""

    def __init__(self) -> None:
        self._reconciles = MetricFamily(RECONCILES, thread_safe=True)
        self._duration = MetricFamily(RECONCILE_DURATION, thread_safe=True)
        for kind in KINDS:
            for result in RESULTS:
                self._reconciles.labels(kind, result)
        self._server: MetricsHTTPServer | None = None

    def reconciled(self, kind: str, result: str, seconds: float) -> None:
        if result not in RESULTS:
            raise ValueError(f"result must be one of {RESULTS}, got {result!r}")
        self._reconciles.labels(kind, result).inc()
        self._duration.labels(kind).observe(seconds)

    def exposition(self) -> bytes:
        return render([self._reconciles.collect(), self._duration.collect()])

    def serve(self, host: str, port: int) -> int:
        self._server = MetricsHTTPServer(self.exposition, host, port)
        return self._server.port

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
