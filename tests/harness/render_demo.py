"""`make dashboards`: render every dashboard to PNG from a real Prometheus.

    python -m tests.harness.render_demo [--output build/dashboards] [--seconds 120]
                                        [--source live|demo]

``live`` (the default): three real brokers (``odradek.local_cluster``, one ZooKeeper) with
a producer, a committing consumer group and a compacted topic; Prometheus scrapes their
``/metrics`` and each panel's PromQL is evaluated over the run. The operator dashboard needs
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
from odradek.metrics.dashboards import DASHBOARDS, dashboard_json
from odradek.metrics.generate import RULES_FILE
from odradek.metrics.prometheus import LocalPrometheus, ScrapeTarget
from odradek.metrics.render import evaluate_panels, render_dashboard
from tests.harness.metrics_demo import LABELS as DEMO_LABELS
from tests.harness.metrics_demo import demo_cluster
from tests.harness.metrics_workload import Workload, create_compacted_topic

ROOT = Path(__file__).resolve().parents[2]
LIVE_LABELS = {"namespace": "live", "cluster": "live"}
OPERATOR_DASHBOARD = "odradek-operator"


@contextmanager
def live_targets(scratch: Path, seconds: float) -> Iterator[list[ScrapeTarget]]:
    """Three brokers with metrics endpoints under a bounded workload; their scrape targets."""
    cluster = LocalCluster(
        3, scratch / "cluster", zookeeper_port=free_port(),
        overrides={"default.replication.factor": "3", "min.insync.replicas": "2",
                   "offsets.topic.replication.factor": "3",
                   "offsets.topic.num.partitions": "3",
                   "transaction.state.log.num.partitions": "3",
                   "group.initial.rebalance.delay.ms": "0",
                   "metrics.topic.labels.enable": "true", "log.cleaner.backoff.ms": "1000"},
        ports=[free_port() for _ in range(3)], metrics_ports=[free_port() for _ in range(3)])
    cluster.start()
    workload = None
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("events", 3, 3)])["events"].result(30)
        create_compacted_topic(cluster.bootstrap)
        workload = Workload(cluster.bootstrap, "events", "dashboards", seconds + 120).start()
        yield [ScrapeTarget(f"127.0.0.1:{broker.metrics_port}",
                            {**LIVE_LABELS, "broker": str(i)})
               for i, broker in enumerate(cluster.brokers)]
    finally:
        if workload is not None:
            workload.stop()
        cluster.stop()


@contextmanager
def demo_targets() -> Iterator[list[ScrapeTarget]]:
    with demo_cluster() as cluster:
        yield [*cluster.targets(), cluster.operator_target()]


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
        targets_of = live_targets(Path(scratch), args.seconds) if live else demo_targets()
        with targets_of as targets, LocalPrometheus(
                Path(scratch) / "prometheus", targets, rule_files=[ROOT / RULES_FILE]) as prom:
            started = time.time()
            print(f"prometheus {prom.url} scraping {len(targets)} targets for "
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
