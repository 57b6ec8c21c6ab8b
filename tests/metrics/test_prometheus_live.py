"""A real Prometheus server scraping real registries over HTTP (the demo brokers: real
exposition, synthetic workload): targets, every dashboard query, the rules, the renderer.

``test_cluster_live.py`` runs the same checks against a live 3-broker cluster."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek_monitoring.alerts import ALL_ALERTS
from odradek_monitoring.dashboards import DASHBOARDS, dashboard_json
from odradek_monitoring.generate import RULES_FILE
from odradek_monitoring.prometheus import LocalPrometheus
from odradek_monitoring.render import PanelData, evaluate_panels, render_dashboard, series_lines
from tests.harness.metrics_demo import LABELS, DemoCluster, demo_cluster
from tests.harness.prometheus import prometheus_server

ROOT = Path(__file__).resolve().parents[2]
SCRAPED_FOR = 20.0  # seconds of 1 s scrapes before the queries: enough for a 15 s rate window


class Run:
    def __init__(self, cluster: DemoCluster, prometheus: LocalPrometheus, started: float) -> None:
        self.cluster, self.prometheus, self.started = cluster, prometheus, started
        self.end = time.time()

    def evaluate(self, name: str) -> list[PanelData]:
        return evaluate_panels(dashboard_json(name), self.prometheus, start=self.started,
                               end=self.end, step=1.0, variables=dict(LABELS),
                               rate_interval="15s")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    with demo_cluster(interval=0.1) as cluster:
        targets = [*cluster.targets(), cluster.operator_target()]
        servers = prometheus_server(tmp_path_factory.mktemp("prom"), targets,
                                    rule_files=(ROOT / RULES_FILE,))
        prometheus = next(servers)
        try:
            started = time.time()
            prometheus.wait_for("every target up", lambda: all(
                t["health"] == "up" for t in prometheus.active_targets()), timeout=30)
            time.sleep(SCRAPED_FOR)
            yield Run(cluster, prometheus, started)
        finally:
            servers.close()


def test_every_broker_is_scraped_with_its_target_labels(run: Run) -> None:
    infos = run.prometheus.query("odradek_broker_info")
    assert sorted(i["metric"]["broker"] for i in infos) == ["0", "1", "2"]
    for info in infos:
        assert info["metric"]["namespace"] == "demo" and info["metric"]["cluster"] == "demo"
        assert info["metric"]["cluster_id"] == "demo-cluster-id"
    assert run.prometheus.value('sum(odradek_controller_active{cluster="demo"})') == 1
    bytes_in = run.prometheus.value(
        'sum(rate(odradek_broker_bytes_in_total{cluster="demo"}[15s]))')
    assert bytes_in is not None and bytes_in > 0


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_panel_query_is_accepted_and_returns_data(run: Run, name: str) -> None:
    panels = run.evaluate(name)  # a query Prometheus rejects raises PrometheusError here
    empty = [p.panel["title"] for p in panels if not p.has_data]
    assert not empty, f"{name}: panels without data: {empty}"


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_legend_tells_its_series_apart(run: Run, name: str) -> None:
    """Two lines of a panel never share a legend text (the legend format covers every
    label the series differ in)."""
    for panel in run.evaluate(name):
        if panel.panel["type"] != "timeseries":
            continue
        legends = [legend for legend, _, _ in series_lines(panel)]
        repeated = sorted({legend for legend in legends if legends.count(legend) > 1})
        assert not repeated, f"{name} / {panel.panel['title']}: {repeated} name several lines"


def test_alert_rules_load_and_evaluate(run: Run) -> None:
    groups = run.prometheus.api("rules")["groups"]
    rules = {rule["name"]: rule for group in groups for rule in group["rules"]}
    assert set(rules) == {rule.name for rule in ALL_ALERTS}
    assert all(rule["health"] == "ok" for rule in rules.values()), rules


def test_renderer_draws_stats_time_series_and_tables(run: Run, tmp_path: Path) -> None:
    # two dashboards cover the three panel types; `make dashboards` draws them all
    for name in ("odradek-overview", "odradek-consumer-groups"):
        path = render_dashboard(dashboard_json(name), run.evaluate(name),
                                tmp_path / f"{name}.png")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 20_000, f"{name}: suspiciously small picture"


def _alert_states(prometheus: LocalPrometheus, name: str) -> list[tuple[str, dict[str, str]]]:
    return [(alert["state"], alert["labels"]) for alert in prometheus.alerts()
            if alert["labels"].get("alertname") == name]


def test_stopping_every_broker_raises_brokers_down(tmp_path: Path) -> None:
    """The generated rules in a real Prometheus: up, then the whole cluster stops."""
    with demo_cluster(interval=0.1) as cluster:
        servers = prometheus_server(tmp_path, cluster.targets(), rule_files=(ROOT / RULES_FILE,))
        prometheus = next(servers)
        try:
            prometheus.wait_for("every broker up", lambda: prometheus.value(
                'sum(up{cluster="demo"})') == len(cluster.ports), timeout=30)
            assert _alert_states(prometheus, "OdradekBrokersDown") == []
            cluster.stop()
            prometheus.wait_for("OdradekBrokersDown pending or firing", lambda: any(
                state in ("pending", "firing") and labels["cluster"] == "demo"
                and labels["namespace"] == "demo"
                for state, labels in _alert_states(prometheus, "OdradekBrokersDown")),
                timeout=30)
            assert _alert_states(prometheus, "OdradekBrokersAbsent") == []
        finally:
            servers.close()


def test_no_broker_target_raises_brokers_absent(tmp_path: Path) -> None:
    """A Prometheus that scrapes only the operator, which reports a BrokerCluster (the
    brokers' PodMonitor selects nothing)."""
    with demo_cluster(interval=0.1) as cluster:
        servers = prometheus_server(tmp_path, [cluster.operator_target()],
                                    rule_files=(ROOT / RULES_FILE,))
        prometheus = next(servers)
        try:
            prometheus.wait_for("OdradekBrokersAbsent pending or firing", lambda: any(
                state in ("pending", "firing")
                for state, _ in _alert_states(prometheus, "OdradekBrokersAbsent")), timeout=30)
            assert _alert_states(prometheus, "OdradekBrokersDown") == []
        finally:
            servers.close()
