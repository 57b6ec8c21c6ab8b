"""The operator: reconciliations, errors and durations per resource kind.

Templated by datasource and the operator's namespace only: the operator serves every
cluster, and its series carry no cluster or broker label.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, Row

from odradek.metrics.operator import RECONCILE_DURATION, RECONCILES

from .common import RATE, quantile, query_variable, timeseries_panel

SELECTOR = 'namespace="$namespace", kind=~"$kind"'


def dashboard() -> Dashboard:
    return (
        Dashboard("odradek / Operator").uid("odradek-operator")
        .description("Reconciliations of the odradek operator by resource kind.")
        .tags(["odradek", "kafka"]).refresh("30s").time("now-1h", "now").timezone("browser")
        .editable()
        .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(query_variable("namespace", f"label_values({RECONCILES.name}, namespace)"))
        .with_variable(query_variable(
            "kind", f'label_values({RECONCILES.name}{{namespace="$namespace"}}, kind)',
            multi=True))
        .with_row(Row("Reconciliations"))
        .with_panel(timeseries_panel(
            "Reconciles", "Per second, by kind and result.", "ops",
            (f"sum by (kind, result) (rate({RECONCILES.name}{{{SELECTOR}}}[{RATE}]))",
             "{{kind}} {{result}}")))
        .with_panel(timeseries_panel(
            "Error ratio", "Share of reconciliations that failed, by kind (none drawn for a "
            "kind without reconciliations in the window).", "percentunit",
            (f'sum by (kind) (rate({RECONCILES.name}{{{SELECTOR}, result!="success"}}[{RATE}]))'
             f" / (sum by (kind) (rate({RECONCILES.name}{{{SELECTOR}}}[{RATE}])) > 0)",
             "{{kind}}")))
        .with_panel(timeseries_panel(
            "Duration p50 / p99", "Time of one reconciliation, by kind.", "s",
            (quantile(0.5, RECONCILE_DURATION.name, SELECTOR, "kind"), "p50 {{kind}}"),
            (quantile(0.99, RECONCILE_DURATION.name, SELECTOR, "kind"), "p99 {{kind}}")))
        .with_panel(timeseries_panel(
            "Errors", "Failed reconciliations in the last hour, by kind and result.", "short",
            (f'sum by (kind, result) (increase({RECONCILES.name}{{{SELECTOR}, '
             f'result!="success"}}[1h]))', "{{kind}} {{result}}")))
    )
