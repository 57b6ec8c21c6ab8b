"""The operator's metrics: the one definition of their names, labels and label values.

The kopf operator (package ``odradek_operator``, module ``odradek_operator.metrics``) records
through :class:`OperatorMetrics`; the operator dashboard, the docs table and the tests read
the same specs, so a name or a ``result`` value cannot differ between what the operator
exports and what the dashboard queries.

``result`` is one of :class:`ReconcileOutcome`: the operator's errors are typed by what happens
next (temporary: retried after a delay; permanent: reported in status, not retried until the
spec changes); anything else a handler raises is a bug, counted as ``unexpected_error`` and
retried with backoff.
"""

from __future__ import annotations

from enum import StrEnum

from .catalog_types import Kind, MetricSpec
from .exposition import MetricsHTTPServer, render
from .families import MetricFamily

__all__ = [
    "KINDS",
    "OPERATOR_METRICS",
    "RESULTS",
    "OperatorMetrics",
    "ReconcileOutcome",
]

KINDS = ("BrokerCluster", "Topic", "ConsumerGroup")


class ReconcileOutcome(StrEnum):
    """The ``result`` label of :data:`RECONCILES`."""

    SUCCESS = "success"
    TEMPORARY_ERROR = "temporary_error"
    PERMANENT_ERROR = "permanent_error"
    UNEXPECTED_ERROR = "unexpected_error"


RESULTS = tuple(outcome.value for outcome in ReconcileOutcome)
RECONCILE_SECONDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

RECONCILES = MetricSpec(
    "odradek_operator_reconciles_total", Kind.COUNTER,
    f"Reconciliations finished, by resource kind and result ({', '.join(RESULTS)}).",
    ("kind", "result"), source="OperatorMetrics.reconciled")
RECONCILE_ERRORS = MetricSpec(
    "odradek_operator_reconcile_errors_total", Kind.COUNTER,
    "Reconciliations that did not succeed, by resource kind and reason (the condition "
    "reason, or the exception type of an unexpected error).", ("kind", "reason"),
    source="OperatorMetrics.reconciled")
RECONCILE_DURATION = MetricSpec(
    "odradek_operator_reconcile_duration_seconds", Kind.HISTOGRAM,
    "Duration of one reconciliation, by resource kind.", ("kind",),
    source="OperatorMetrics.reconciled", buckets=RECONCILE_SECONDS)
GROUP_LAG = MetricSpec(
    "odradek_operator_consumergroup_lag_records", Kind.GAUGE,
    "Total lag of a consumer group as last observed by its ConsumerGroup resource.",
    ("namespace", "name", "group"), source="OperatorMetrics.group_lag_observed")
UNDER_REPLICATED = MetricSpec(
    "odradek_operator_brokercluster_under_replicated_partitions", Kind.GAUGE,
    "Under-replicated partitions of a BrokerCluster as last observed by the operator.",
    ("namespace", "name"), source="OperatorMetrics.under_replicated_observed")
OPERATOR_METRICS = (RECONCILES, RECONCILE_ERRORS, RECONCILE_DURATION, GROUP_LAG,
                    UNDER_REPLICATED)


class OperatorMetrics:
    """Thread-safe (kopf may run handlers in threads). Every kind/result starts at 0 so an
    error ratio is defined, and every result is on the dashboard, before the first error."""

    def __init__(self) -> None:
        self._reconciles = MetricFamily(RECONCILES, thread_safe=True)
        self._errors = MetricFamily(RECONCILE_ERRORS, thread_safe=True)
        self._duration = MetricFamily(RECONCILE_DURATION, thread_safe=True)
        self._group_lag = MetricFamily(GROUP_LAG, thread_safe=True)
        self._under_replicated = MetricFamily(UNDER_REPLICATED, thread_safe=True)
        self._families = (self._reconciles, self._errors, self._duration, self._group_lag,
                          self._under_replicated)
        for kind in KINDS:
            for result in RESULTS:
                self._reconciles.labels(kind, result)
        self._server: MetricsHTTPServer | None = None

    def reconciled(self, kind: str, result: ReconcileOutcome, seconds: float,
                   reason: str = "") -> None:
        """One handler run finished; ``reason`` says why one that did not succeed failed."""
        outcome = ReconcileOutcome(result)  # a ValueError for anything not in RESULTS
        self._reconciles.labels(kind, outcome.value).inc()
        self._duration.labels(kind).observe(seconds)
        if outcome is not ReconcileOutcome.SUCCESS:
            self._errors.labels(kind, reason or outcome.value).inc()

    def group_lag_observed(self, namespace: str, name: str, group: str, lag: float) -> None:
        self._group_lag.labels(namespace, name, group).set(lag)

    def group_forgotten(self, namespace: str, name: str, group: str) -> None:
        """A ConsumerGroup resource was deleted: its series goes with it."""
        self._group_lag.remove(namespace, name, group)

    def under_replicated_observed(self, namespace: str, name: str, partitions: int) -> None:
        self._under_replicated.labels(namespace, name).set(partitions)

    def cluster_forgotten(self, namespace: str, name: str) -> None:
        """A BrokerCluster was deleted: its series goes with it."""
        self._under_replicated.remove(namespace, name)

    def exposition(self) -> bytes:
        return render([family.collect() for family in self._families])

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """One sample's value (None if absent), like ``BrokerMetrics.sample``: for tests."""
        for family in self._families:
            for sample in family.collect().samples:
                if sample.name == name and sample.labels == (labels or {}):
                    return float(sample.value)
        return None

    def serve(self, host: str, port: int) -> int:
        self._server = MetricsHTTPServer(self.exposition, host, port)
        return self._server.port

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
