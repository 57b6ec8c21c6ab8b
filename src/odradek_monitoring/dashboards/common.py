"""Building blocks shared by every dashboard: variables, selectors and panel shapes.

Every dashboard is templated by ``datasource`` (any Prometheus), ``namespace``, ``cluster``
and ``broker`` (the target labels added by the scrape configuration, see
:mod:`odradek_monitoring.prometheus`), so the JSON imports into any Grafana unchanged. Queries
use ``$__rate_interval`` for rates, as Grafana recommends for Prometheus.
"""

from __future__ import annotations

from typing import Any

from grafana_foundation_sdk.builders import common, prometheus, stat, table, timeseries
from grafana_foundation_sdk.builders.dashboard import (
    Dashboard,
    DatasourceVariable,
    QueryVariable,
)
from grafana_foundation_sdk.models.common import (
    GraphDrawStyle,
    LegendDisplayMode,
    LegendPlacement,
    SortOrder,
    TooltipDisplayMode,
)
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    VariableRefresh,
    VariableSort,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

__all__ = [
    "BROKERS",
    "CLUSTER",
    "DATASOURCE",
    "RATE",
    "base_dashboard",
    "quantile",
    "query_variable",
    "rate_sum",
    "stat_panel",
    "table_panel",
    "timeseries_panel",
]

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
CLUSTER = 'namespace="$namespace", cluster="$cluster"'
"""Label matchers selecting the chosen cluster."""
BROKERS = CLUSTER + ', broker=~"$broker"'
"""...and the chosen brokers (multi-select, "All" = ``.*``)."""
RATE = "$__rate_interval"
INFO = "odradek_broker_info"


def query_variable(name: str, query: str, *, multi: bool = False) -> QueryVariable:
    variable = (QueryVariable(name).label(name.capitalize()).datasource(DATASOURCE)
                .query(query).refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
                .sort(VariableSort.ALPHABETICAL_ASC))
    if multi:
        variable = variable.multi(True).include_all(True).all_value(".*")
    return variable


def base_dashboard(uid: str, title: str, description: str, *, brokers: bool = True,
                   extra: tuple[tuple[str, str], ...] = ()) -> Dashboard:
    """A dashboard with the datasource/namespace/cluster(/broker) variables, plus ``extra``
    multi-select variables given as (name, label_values query)."""
    dashboard = (
        Dashboard(title).uid(uid).description(description).tags(["odradek", "kafka"])
        .refresh("30s").time("now-1h", "now").timezone("browser").editable()
        .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(query_variable("namespace", f"label_values({INFO}, namespace)"))
        .with_variable(query_variable(
            "cluster", f'label_values({INFO}{{namespace="$namespace"}}, cluster)'))
    )
    if brokers:
        dashboard = dashboard.with_variable(
            query_variable("broker", f"label_values({INFO}{{{CLUSTER}}}, broker)", multi=True))
    for name, query in extra:
        dashboard = dashboard.with_variable(query_variable(name, query, multi=True))
    return dashboard


def _targets(panel: Any, queries: tuple[tuple[str, str], ...], *, instant: bool = False) -> Any:
    for index, (expr, legend) in enumerate(queries):
        query = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(chr(65 + index))
        panel = panel.with_target(query.instant() if instant else query.range())
    return panel


def timeseries_panel(title: str, description: str, unit: str,
                     *queries: tuple[str, str], width: int = 12, height: int = 8,
                     stacked: bool = False) -> timeseries.Panel:
    """A time series; ``queries`` are (PromQL, legend) pairs."""
    panel = (timeseries.Panel().title(title).description(description).datasource(DATASOURCE)
             .unit(unit).span(width).height(height).draw_style(GraphDrawStyle.LINE)
             .line_width(1).fill_opacity(30 if stacked else 10)
             .legend(common.VizLegendOptions().display_mode(LegendDisplayMode.LIST)
                     .placement(LegendPlacement.BOTTOM).show_legend(True).calcs([]))
             .tooltip(common.VizTooltipOptions().mode(TooltipDisplayMode.MULTI)
                      .sort(SortOrder.DESCENDING)))
    return _targets(panel, queries)


def stat_panel(title: str, description: str, unit: str, expr: str, *, width: int = 4,
               height: int = 4) -> stat.Panel:
    """One number: the last value of ``expr`` (an instant query)."""
    panel = (stat.Panel().title(title).description(description).datasource(DATASOURCE)
             .unit(unit).span(width).height(height)
             .reduce_options(common.ReduceDataOptions().calcs(["lastNotNull"]).values(False)))
    return _targets(panel, ((expr, ""),), instant=True)


def table_panel(title: str, description: str, unit: str, expr: str, *, width: int = 24,
                height: int = 8) -> table.Panel:
    """The series of an instant query as rows (labels as columns)."""
    panel = (table.Panel().title(title).description(description).datasource(DATASOURCE)
             .unit(unit).span(width).height(height).show_header(True))
    query = (prometheus.Dataquery().expr(expr).instant().ref_id("A").legend_format("")
             .format(PromQueryFormat.TABLE))
    return panel.with_target(query)


def quantile(q: float, histogram: str, selector: str, by: str) -> str:
    """``histogram_quantile`` of a catalog histogram over ``$__rate_interval``, kept ``by``,
    only where the window has observations: without any, every bucket's rate is 0 and the
    quantile is NaN (0/0), which draws nothing and used to pass for data."""
    return (f"histogram_quantile({q}, sum by (le, {by}) "
            f"(rate({histogram}_bucket{{{selector}}}[{RATE}])))"
            f" and on ({by}) sum by ({by}) (rate({histogram}_count{{{selector}}}[{RATE}])) > 0")


def rate_sum(counter: str, selector: str, by: str) -> str:
    return f"sum by ({by}) (rate({counter}{{{selector}}}[{RATE}]))"
