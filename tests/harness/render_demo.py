"""`make dashboards`: render every dashboard to PNG from a real Prometheus.

    python -m tests.harness.render_demo [--output build/dashboards] [--seconds 120]

Prometheus scrapes the demo cluster of :mod:`tests.harness.metrics_demo` (real registries
and exposition, synthetic workload: every panel has data in two minutes). Rendering from a
live ``odradek.local_cluster`` is not done yet; ``odradek cluster --prometheus`` gives the
live queries. The alert rules are loaded too, so the run also shows whether they evaluate.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from odradek.metrics.dashboards import DASHBOARDS, dashboard_json
from odradek.metrics.generate import RULES_FILE
from odradek.metrics.prometheus import LocalPrometheus
from odradek.metrics.render import evaluate_panels, render_dashboard
from tests.harness.metrics_demo import LABELS, demo_cluster

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.harness.render_demo")
    parser.add_argument("--output", type=Path, default=ROOT / "build" / "dashboards")
    parser.add_argument("--seconds", type=float, default=120.0,
                        help="how long Prometheus scrapes before drawing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="odradek-dashboards-") as scratch, \
            demo_cluster() as cluster:
        targets = [*cluster.targets(), cluster.operator_target()]
        with LocalPrometheus(Path(scratch), targets, rule_files=[ROOT / RULES_FILE]) as prom:
            started = time.time()
            print(f"prometheus {prom.url} scraping {len(targets)} targets for "
                  f"{args.seconds:.0f}s", flush=True)
            time.sleep(args.seconds)
            end = time.time()
            for name in DASHBOARDS:
                model = dashboard_json(name)
                panels = evaluate_panels(model, prom, start=started, end=end, step=2.0,
                                         variables=dict(LABELS), rate_interval="15s")
                path = render_dashboard(model, panels, args.output / f"{name}.png",
                                        subtitle="(demo workload, phase 1)")
                print(json.dumps({"dashboard": name, "png": str(path),
                                  "without_data": [p.panel["title"] for p in panels
                                                   if not p.has_data]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
