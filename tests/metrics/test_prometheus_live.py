"""A real Prometheus server scraping real registries over HTTP (the demo brokers: real
exposition, synthetic workload): targets, every dashboard query, the rules, the renderer.

``test_cluster_live.py`` runs the same checks against a live 3-broker cluster."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.metrics.alerts import ALL_ALERTS
from odradek.metrics.dashboards import DASHBOARDS, dashboard_json
from odradek.metrics.generate import RULES_FILE
from odradek.metrics.prometheus import LocalPrometheus
from odradek.metrics.render import PanelData, evaluate_panels, render_dashboard
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
