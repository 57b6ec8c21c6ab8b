"""`make dashboards`: render every dashboard to PNG from a real Prometheus.

    python -m tests.harness.render_demo [--output build/dashboards] [--seconds 120]
                                        [--source live|demo]

``live`` (the default): three real brokers (``odradek.local_cluster``, one ZooKeeper)
configured as a default install of the chart configures them (its ``cluster.config``: so
per-topic series are on exactly when a default install has them), with a producer, a
committing consumer group and a compacted topic; Prometheus scrapes their ``/metrics`` from
before they start, and each panel's PromQL is evaluated over the run. The operator dashboard needs
a running operator, which only exists on Kubernetes, so the live run leaves it out.
``demo``: the synthetic cluster of :mod:`tests.harness.metrics_demo` (real registries and
exposition, simulated brokers and an operator), which draws every dashboard in seconds. The
alert rules are loaded too, so the run also shows whether they evaluate.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from odradek.local_cluster import LocalCluster, free_port
from odradek_monitoring.dashboards import DASHBOARDS, dashboard_json
from odradek_monitoring.generate import RULES_FILE
from odradek_monitoring.prometheus import LocalPrometheus, ScrapeTarget
from odradek_monitoring.render import evaluate_panels, render_dashboard
from tests.harness.chart_defaults import default_broker_config
from tests.harness.metrics_demo import LABELS as DEMO_LABELS
from tests.harness.metrics_demo import demo_cluster
from tests.harness.metrics_workload import FLUSHED_TOPIC_CONFIG, Workload, create_compacted_topic

ROOT = Path(__file__).resolve().parents[2]
LIVE_LABELS = {"namespace": "live", "cluster": "live"}
OPERATOR_DASHBOARD = "odradek-operator"


LIVE_OVERRIDES = {
    # what a three-broker test cluster needs to start quickly; nothing of metrics.*: the
    # brokers export what a default install's do (the chart's cluster.config)
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.backoff.ms": "1000",
}


@contextmanager
def live_run(scratch: Path, seconds: float) -> Iterator[LocalPrometheus]:
    """Prometheus first, then three brokers configured like a default install, their topics
    and a bounded workload: the window drawn starts before the brokers, so it holds their
    start (ZooKeeper registration, controller elections) as well as the steady traffic."""
    metrics_ports = [free_port() for _ in range(3)]
    targets = [ScrapeTarget(f"127.0.0.1:{port}", {**LIVE_LABELS, "broker": str(i)})
               for i, port in enumerate(metrics_ports)]
    cluster = LocalCluster(
        3, scratch / "cluster", zookeeper_port=free_port(),
        overrides={**default_broker_config(), **LIVE_OVERRIDES},
        ports=[free_port() for _ in range(3)], metrics_ports=metrics_ports)
    workload = None
    with LocalPrometheus(scratch / "prometheus", targets,
                         rule_files=[ROOT / RULES_FILE]) as prometheus:
        cluster.start()
        try:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            admin.create_topics([NewTopic("events", 3, 3, config=FLUSHED_TOPIC_CONFIG)]
                                )["events"].result(30)
            create_compacted_topic(cluster.bootstrap)
            workload = Workload(cluster.bootstrap, "events", "dashboards", seconds + 120).start()
            yield prometheus
        finally:
            if workload is not None:
                workload.stop()
            cluster.stop()


@contextmanager
def demo_run(scratch: Path) -> Iterator[LocalPrometheus]:
    with demo_cluster() as cluster, LocalPrometheus(
            scratch / "prometheus", [*cluster.targets(), cluster.operator_target()],
            rule_files=[ROOT / RULES_FILE]) as prometheus:
        yield prometheus


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.harness.render_demo")
    parser.add_argument("--output", type=Path, default=ROOT / "build" / "dashboards")
    parser.add_argument("--seconds", type=float, default=120.0,
                        help="how long Prometheus scrapes before drawing")
    parser.add_argument("--source", choices=("live", "demo"), default="live")
    args = parser.parse_args()
    live = args.source == "live"
    labels = LIVE_LABELS if live else DEMO_LABELS
    names = [name for name in DASHBOARDS if not (live and name == OPERATOR_DASHBOARD)]
    with tempfile.TemporaryDirectory(prefix="odradek-dashboards-") as scratch:
        started = time.time()
        run = live_run(Path(scratch), args.seconds) if live else demo_run(Path(scratch))
        with run as prom:
            print(f"prometheus {prom.url} scraping {len(prom.targets)} targets for "
                  f"{args.seconds:.0f}s", flush=True)
            time.sleep(args.seconds)
            end = time.time()
            for name in names:
                model = dashboard_json(name)
                panels = evaluate_panels(model, prom, start=started, end=end, step=2.0,
                                         variables=dict(labels), rate_interval="15s")
                path = render_dashboard(model, panels, args.output / f"{name}.png",
                                        subtitle=f"({args.source} run, 3 brokers)")
                print(json.dumps({"dashboard": name, "png": str(path),
                                  "without_data": [p.panel["title"] for p in panels
                                                   if not p.has_data]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
