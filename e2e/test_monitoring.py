"""Prometheus scrapes every broker: a chart-installed cluster with ``cluster.metrics`` on, and a
real Prometheus (Debian's package, ``make prometheus``) whose targets are the broker pods'
``metrics`` ports — the port the operator's PodMonitor selects — must report every one ``up``
with odradek series in it.

Prometheus runs beside pytest, inside the local stack's network namespace, where pod IPs are
routed; on kind the pods are not reachable from the test process, so the scenario skips there.
It also skips while the broker does not start its ``/metrics`` server (``metrics.port`` exists in
the config, but the broker does not serve ``odradek.metrics.BrokerMetrics`` yet): the skip
reason says so, and the scenario runs by itself once the broker wires it.

The operator's ``/metrics`` (its pod's ``metrics`` port, the one the chart's PodMonitor
scrapes) is scraped the same way, and every query of the shipped Operator dashboard must
return data from it: the dashboard and the operator share their metric definitions
(:mod:`odradek.metrics.operator`), and this proves it against the image that runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from e2e.conftest import Images
from e2e.helm import REPO_ROOT
from e2e.kube import Kube, conditions
from e2e.platform import BROKER_SELECTOR, CLUSTER, Platform, platform_values
from tests.harness.prometheus import dashboard_queries

pytestmark = pytest.mark.e2e

METRICS_PORT = 9404
OPERATOR_DASHBOARD = "odradek-operator"
RATE_WINDOW_S = 120  # the rate window of the queries: each kind reconciles at least every 60 s


def broker_serves_metrics() -> bool:
    """Whether the broker starts the metrics registry (and with it ``/metrics``): the image is
    built from this tree, so its sources say what the pods will do."""
    broker = REPO_ROOT / "src" / "odradek"
    return any("BrokerMetrics" in path.read_text()
               for folder in ("broker", "cluster", "cli")
               for path in (broker / folder).rglob("*.py"))


@pytest.mark.skipif(not broker_serves_metrics(), reason="broker metrics endpoint not wired")
@pytest.mark.timeout(1200)
def test_prometheus_scrapes_every_broker(kube: Kube, images: Images, namespace: str,
                                         platform: Platform, backend, tmp_path: Path) -> None:
    if backend.name != "local":
        pytest.skip("pod IPs are reachable from the test process only on the local backend")
    from odradek_monitoring.prometheus import LocalPrometheus, ScrapeTarget

    platform.install(platform_values(images, backend.storage_class,
                                     metrics={"enabled": True, "port": METRICS_PORT}))
    pods = kube.core.list_namespaced_pod(namespace, label_selector=BROKER_SELECTOR).items
    ports = {p.name: p.container_port for c in pods[0].spec.containers for p in c.ports or []}
    assert ports.get("metrics") == METRICS_PORT, f"broker pods expose no metrics port: {ports}"
    targets = [ScrapeTarget(f"{pod.status.pod_ip}:{METRICS_PORT}", {"pod": pod.metadata.name})
               for pod in pods]
    assert len(targets) == 3
    with LocalPrometheus(tmp_path / "prometheus", targets) as prom:
        prom.wait_for("every broker up", lambda: prom.value("sum(up)") == len(targets),
                      timeout=120)
        rows = prom.query('count by (pod) ({__name__=~"odradek_.+"})')
        scraped = {row["metric"]["pod"] for row in rows}
    print(f"Prometheus scraped {sorted(scraped)}")
    assert scraped == {pod.metadata.name for pod in pods}


def _operator_selector(release: str) -> str:
    return (f"app.kubernetes.io/name=odradek,app.kubernetes.io/instance={release},"
            "app.kubernetes.io/component=operator")


@pytest.mark.timeout(1200)
def test_every_operator_dashboard_query_has_data_from_the_running_operator(
        kube: Kube, images: Images, namespace: str, platform: Platform, backend,
        tmp_path: Path) -> None:
    if backend.name != "local":
        pytest.skip("pod IPs are reachable from the test process only on the local backend")
    from odradek_monitoring.dashboards import dashboard_json
    from odradek_monitoring.prometheus import LocalPrometheus, ScrapeTarget
    from odradek_monitoring.render import evaluate_panels, grafana_expr

    platform.install(platform_values(images, backend.storage_class))
    (operator,) = kube.core.list_namespaced_pod(
        namespace, label_selector=_operator_selector(platform.release)).items
    assert operator.spec is not None and operator.status is not None
    ports = {p.name: p.container_port for c in operator.spec.containers for p in c.ports or []}
    assert "metrics" in ports, f"the operator pod exposes no metrics port: {ports}"
    # the target label the PodMonitor's scrape adds: the operator's namespace
    target = ScrapeTarget(f"{operator.status.pod_ip}:{ports['metrics']}",
                          {"namespace": namespace})
    variables = {"namespace": namespace}  # kind: unset, so "All"
    with LocalPrometheus(tmp_path / "prometheus", [target]) as prom:
        prom.wait_for("the operator's target up", lambda: prom.value("sum(up)") == 1,
                      timeout=120)
        started = time.time()
        # every kind reconciles while Prometheus watches: the BrokerCluster on its timer,
        # a Topic and a ConsumerGroup from their creation on
        kube.custom.create_namespaced_custom_object(
            "odradek.dev", "v1beta1", namespace, "topics", {
                "apiVersion": "odradek.dev/v1beta1", "kind": "Topic",
                "metadata": {"name": "watched", "namespace": namespace},
                "spec": {"clusterRef": {"name": CLUSTER}, "partitions": 3,
                         "replicationFactor": 3}})
        kube.wait_condition(namespace, "topics", "watched", "Ready", timeout=180)
        kube.custom.create_namespaced_custom_object(
            "odradek.dev", "v1beta1", namespace, "consumergroups", {
                "apiVersion": "odradek.dev/v1beta1", "kind": "ConsumerGroup",
                "metadata": {"name": "watchers", "namespace": namespace},
                "spec": {"clusterRef": {"name": CLUSTER}, "groupId": "watchers",
                         "topics": ["watched"]}})
        kube.wait_resource(namespace, "consumergroups", "watchers", "to be reconciled",
                           lambda group: bool(conditions(group)), timeout=180)
        time.sleep(max(0.0, started + RATE_WINDOW_S + 30 - time.time()))
        end = time.time()
        model = dashboard_json(OPERATOR_DASHBOARD)
        rate_interval = f"{RATE_WINDOW_S}s"
        for query in dashboard_queries(model):
            expr = grafana_expr(query, variables, rate_interval)
            assert prom.query_range(expr, started, end, 5.0), f"no data for {expr}"
        panels = evaluate_panels(model, prom, start=started, end=end, step=5.0,
                                 variables=variables, rate_interval=rate_interval)
        empty = [p.panel["title"] for p in panels if not p.has_data]
        assert not empty, f"Operator dashboard panels without data: {empty}"
        (reconciles,) = [p for p in panels if p.panel["title"] == "Reconciles"]
        kinds = {series["metric"]["kind"] for _, found in reconciles.results for series in found}
        print(f"operator reconciles seen for {sorted(kinds)}")
        assert kinds >= {"BrokerCluster", "Topic", "ConsumerGroup"}
