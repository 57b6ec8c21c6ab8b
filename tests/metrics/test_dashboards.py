"""The committed dashboards: generated (regeneration is a no-op), structurally valid for
Grafana, templated, and querying only metrics that odradek exports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from odradek.metrics import catalog, lag
from odradek.metrics.operator import OPERATOR_METRICS
from odradek_monitoring.alerts import ALL_ALERTS, prometheus_rule, rules_document
from odradek_monitoring.dashboards import DASHBOARDS
from odradek_monitoring.generate import DASHBOARD_DIR, RULES_FILE, generated_files, main
from tests.harness.prometheus import GRAFANA_BUILTINS, dashboard_queries, metric_names, to_promql

from .exported import exported_names

ROOT = Path(__file__).resolve().parents[2]
PANEL_TYPES = {"timeseries", "stat", "table", "row"}
CATALOG_NAMES = {name for spec in (*catalog.BROKER_METRICS, *lag.LAG_METRICS,
                                   *OPERATOR_METRICS) for name in spec.exposed_names}


def _load(name: str) -> dict[str, Any]:
    return json.loads((ROOT / DASHBOARD_DIR / f"{name}.json").read_text())


def _panels(model: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in model["panels"] if p["type"] != "row"]


def _exprs(model: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in _panels(model) for t in p["targets"]]


def test_regenerating_changes_nothing() -> None:
    for relative, content in generated_files().items():
        path = ROOT / relative
        assert path.exists(), f"{relative} is not committed"
        assert path.read_text() == content, f"{relative} is stale: make generate-monitoring"
    assert main(["--root", str(ROOT), "--check"]) == 0
    committed = {p.stem for p in (ROOT / DASHBOARD_DIR).glob("*.json")}
    assert committed == set(DASHBOARDS), "a dashboard JSON without a generator"


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_dashboard_structure(name: str) -> None:
    model = _load(name)
    assert model["uid"] == name and len(name) <= 40
    assert model["title"].startswith("odradek / ")
    assert isinstance(model["schemaVersion"], int)
    variables = {v["name"]: v for v in model["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    required = {"datasource", "namespace"} if name == "odradek-operator" else {
        "datasource", "namespace", "cluster"}
    assert required <= set(variables)
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) and i > 0 for i in ids)
    occupied: set[tuple[int, int]] = set()
    for panel in model["panels"]:
        assert panel["type"] in PANEL_TYPES
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        cells = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"])
                 for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not cells & occupied, f"{panel['title']} overlaps another panel"
        occupied |= cells
    for panel in _panels(model):
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["title"] and panel["description"], "every panel says what it shows"
        assert panel["options"] is not None
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert ref_ids and len(set(ref_ids)) == len(ref_ids) and all(ref_ids)
        for target in panel["targets"]:
            used = set(re.findall(r"\$(\w+)", target["expr"]))
            builtins = {b.lstrip("$") for b in GRAFANA_BUILTINS}
            assert used <= set(variables) | builtins, f"{panel['title']}: undefined {used}"


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_panel_titles_are_unique_within_a_dashboard(name: str) -> None:
    titles = [p["title"] for p in _panels(_load(name))]
    repeated = sorted({t for t in titles if titles.count(t) > 1})
    assert not repeated, f"{name}: panels share a title: {repeated}"


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_dashboard_queries_parse_and_use_exported_metrics(name: str) -> None:
    model = _load(name)
    used: set[str] = set()
    for expr in dashboard_queries(model):
        used |= metric_names(to_promql(expr))  # raises on a syntax error
    assert used, "a dashboard that queries nothing"
    assert used <= exported_names(), f"not exported: {sorted(used - exported_names())}"


def test_every_alert_uses_exported_metrics() -> None:
    """...or ``up``, which Prometheus writes for every target it scrapes."""
    for rule in ALL_ALERTS:
        used = metric_names(rule.expr) - {"up"}
        assert used <= CATALOG_NAMES, f"{rule.name}: {sorted(used - CATALOG_NAMES)}"


def test_prometheus_rule_carries_the_rules_file() -> None:
    import yaml

    manifest = prometheus_rule("odradek", "kafka", {"release": "odradek"})
    assert manifest["apiVersion"] == "monitoring.coreos.com/v1"
    assert manifest["kind"] == "PrometheusRule"
    assert manifest["spec"] == rules_document()
    assert yaml.safe_load((ROOT / RULES_FILE).read_text()) == rules_document()


def test_every_catalog_metric_is_served() -> None:
    """No spec is left out of collection: a fully fed broker serves every catalog name."""
    missing = CATALOG_NAMES - exported_names()
    assert not missing, f"defined but never served: {sorted(missing)}"
