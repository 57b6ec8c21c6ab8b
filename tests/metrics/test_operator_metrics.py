"""The operator's metrics against the operator dashboard: the operator's own recording code
(``odradek_operator.metrics.observe_reconcile``, as every handler runs it) must produce every
series each dashboard expression selects, with the label values the expressions filter on.
The names come from one place (:mod:`odradek.metrics.operator`); this proves the operator
uses it. ``e2e/test_monitoring.py`` runs the same expressions against the operator in a
cluster."""

from __future__ import annotations

import pytest
from odradek_operator import metrics as operator_metrics
from odradek_operator.metrics import METRICS, observe_reconcile
from prometheus_client.parser import text_string_to_metric_families

from odradek.metrics.operator import KINDS, RECONCILES, RESULTS, ReconcileOutcome
from odradek_monitoring.dashboards import dashboard_json
from tests.harness.prometheus import (
    dashboard_queries,
    matching_samples,
    selectors,
    to_promql,
)

NAMESPACE = "ops"  # the target label the scrape configuration adds (the operator's namespace)


class Expected(Exception):
    """A failure a handler expected and typed (Temporary/PermanentReconcileError)."""


def _run_every_outcome() -> None:
    """One reconcile of each kind per outcome, through the operator's own context manager."""
    for kind in KINDS:
        with observe_reconcile(kind):
            pass
        for outcome in (ReconcileOutcome.TEMPORARY_ERROR, ReconcileOutcome.PERMANENT_ERROR):
            with pytest.raises(Expected), observe_reconcile(kind) as record:
                record.result, record.reason = outcome, "ClusterUnreachable"
                raise Expected
        with pytest.raises(ZeroDivisionError), observe_reconcile(kind):
            _ = 1 / 0


def _scraped() -> list[tuple[str, dict[str, str]]]:
    """What Prometheus stores from one scrape of the operator: its samples plus the target
    label ``namespace``."""
    text = METRICS.exposition().decode()
    return [(sample.name, {**sample.labels, "namespace": NAMESPACE})
            for family in text_string_to_metric_families(text) for sample in family.samples]


def test_the_operator_records_through_the_catalogue() -> None:
    assert operator_metrics.METRICS.sample(RECONCILES.name, {
        "kind": "Topic", "result": ReconcileOutcome.SUCCESS}) is not None
    assert set(RESULTS) == {"success", "temporary_error", "permanent_error", "unexpected_error"}


@pytest.mark.parametrize("expr", dashboard_queries(dashboard_json("odradek-operator")))
def test_every_operator_dashboard_selector_finds_the_operators_series(expr: str) -> None:
    _run_every_outcome()
    samples = _scraped()
    for kind in KINDS:
        promql = to_promql(expr, {"namespace": NAMESPACE, "kind": kind})
        for name, matchers in selectors(promql):
            found = matching_samples(samples, name, matchers)
            exported = sorted({n for n, _ in samples})
            assert found, (f"{name}{{{matchers}}} selects no series the operator exports "
                           f"(kind {kind}); it exports {exported}")


def test_every_result_value_is_recorded_with_its_reason() -> None:
    before = {result: METRICS.sample(RECONCILES.name, {"kind": "Topic", "result": result})
              for result in RESULTS}
    _run_every_outcome()
    for result in RESULTS:
        after = METRICS.sample(RECONCILES.name, {"kind": "Topic", "result": result})
        assert after == (before[result] or 0) + 1, result
    assert METRICS.sample("odradek_operator_reconcile_errors_total",
                          {"kind": "Topic", "reason": "ZeroDivisionError"}) is None
    assert (METRICS.sample("odradek_operator_reconcile_errors_total",
                           {"kind": "Topic", "reason": "Unexpected"}) or 0) >= 1
