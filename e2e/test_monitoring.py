"""Prometheus scrapes every broker: a chart-installed cluster with ``cluster.metrics`` on, and a
real Prometheus (Debian's package, ``make prometheus``) whose targets are the broker pods'
``metrics`` ports — the port the operator's PodMonitor selects — must report every one ``up``
with odradek series in it.

Prometheus runs beside pytest, inside the local stack's network namespace, where pod IPs are
routed; on kind the pods are not reachable from the test process, so the scenario skips there.
It also skips while the broker does not start its ``/metrics`` server (``metrics.port`` exists in
the config, but the broker does not serve ``odradek.metrics.BrokerMetrics`` yet): the skip
reason says so, and the scenario runs by itself once the broker wires it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.conftest import Images
from e2e.helm import REPO_ROOT
from e2e.kube import Kube
from e2e.platform import BROKER_SELECTOR, Platform, platform_values

pytestmark = pytest.mark.e2e

METRICS_PORT = 9404


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
    from odradek.metrics.prometheus import LocalPrometheus, ScrapeTarget

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
