"""Dashboards as pictures: every panel's PromQL evaluated by a real Prometheus, drawn with
matplotlib, laid out on Grafana's 24-column grid. For looking at a dashboard without Grafana.

    python -m odradek_monitoring.render --prometheus http://127.0.0.1:9090 --output DIR \\
        [--var namespace=prod --var cluster=events] [--minutes 30] [--dashboard NAME ...]

Time series panels are range queries over the window; stat and table panels are instant
queries at its end. Grafana's variables are substituted the way Grafana does: ``$name`` by
the value given (an unset multi-value variable is "All", ``.*``), ``$__rate_interval`` by a
duration covering at least four scrapes.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import matplotlib
import matplotlib.dates as mdates
from matplotlib.ticker import FuncFormatter

from .dashboards import DASHBOARDS, dashboard_json
from .prometheus import PrometheusAPI

__all__ = [
    "PanelData",
    "draw_timeseries",
    "evaluate_panels",
    "format_value",
    "grafana_expr",
    "main",
    "render_dashboard",
    "series_lines",
]

COLUMNS = 24
ROW_INCHES = 0.42
WIDTH_INCHES = 22.0


class QueryAPI(Protocol):
    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]: ...

    def query_range(self, expr: str, start: float, end: float,
                    step: float) -> list[dict[str, Any]]: ...


def grafana_expr(expr: str, variables: Mapping[str, str], rate_interval: str) -> str:
    """A panel query as Prometheus gets it from Grafana."""
    expr = (expr.replace("$__rate_interval", rate_interval)
            .replace("$__interval", rate_interval).replace("$__range", "1h"))
    return re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), ".*"), expr)


@dataclass
class PanelData:
    panel: dict[str, Any]
    # per target: (legend format, result series)
    results: list[tuple[str, list[dict[str, Any]]]]

    @property
    def has_data(self) -> bool:
        """Whether the panel draws anything: some series has a value that is a number (a
        panel whose every value is NaN, like a quantile of a histogram without observations,
        draws nothing in Grafana either)."""
        return any(not math.isnan(float(value)) for _, series in self.results
                   for item in series for _, value in _points(item))


def _points(item: Mapping[str, Any]) -> list[tuple[float, str]]:
    """The (time, value) pairs of one result series, range (``values``) or instant (``value``)."""
    return list(item["values"]) if "values" in item else [item["value"]]


def evaluate_panels(model: dict[str, Any], api: QueryAPI, *, start: float, end: float,
                    step: float, variables: Mapping[str, str],
                    rate_interval: str) -> list[PanelData]:
    """Run every query of every panel (rows excluded)."""
    evaluated = []
    for panel in model["panels"]:
        if panel.get("type") == "row":
            continue
        results = []
        for target in panel.get("targets", []):
            expr = grafana_expr(target["expr"], variables, rate_interval)
            if panel["type"] == "timeseries":
                series = api.query_range(expr, start, end, step)
            else:
                series = api.query(expr, end)
            results.append((target.get("legendFormat", ""), series))
        evaluated.append(PanelData(panel, results))
    return evaluated


def _legend(template: str, labels: Mapping[str, str]) -> str:
    if not template:
        shown = (f"{k}={v}" for k, v in sorted(labels.items()) if k != "__name__")
        return ", ".join(shown) or "value"
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template).strip()


_UNITS: dict[str, tuple[str, float, tuple[str, ...]]] = {
    # Grafana unit id: (symbol, base, prefixes). Grafana's "bytes" is IEC, "Bps" SI.
    "bytes": ("B", 1024.0, ("Ki", "Mi", "Gi", "Ti")),
    "decbytes": ("B", 1000.0, ("k", "M", "G", "T")),
    "Bps": ("B/s", 1000.0, ("k", "M", "G", "T")),
    "binBps": ("B/s", 1024.0, ("Ki", "Mi", "Gi", "Ti")),
    "reqps": ("req/s", 1000.0, ("k", "M", "G", "T")),
    "ops": ("ops/s", 1000.0, ("k", "M", "G", "T")),
}
_PLAIN = ("", 1000.0, ("k", "M", "G", "T"))


def _number(value: float) -> str:
    """Three significant digits, never in exponent notation (an axis reads ``1000``, not
    ``1e+03``)."""
    text = f"{value:.3g}"
    if "e" not in text:
        return text
    return f"{value:.0f}" if abs(value) >= 1 else f"{value:.6f}".rstrip("0").rstrip(".")


def format_value(value: float, unit: str) -> str:
    """A value with Grafana's unit in human units (``1.5 kB/s``, ``12 MiB``, ``250 ms``)."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if unit == "percentunit":
        return f"{value * 100:.1f}%"
    if unit == "s":
        for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
            if abs(value) >= scale or scale == 1e-6:
                return f"{_number(value / scale)} {suffix}"
    symbol, base, prefixes = _UNITS.get(unit, _PLAIN)
    for power in range(len(prefixes), 0, -1):
        if abs(value) >= base**power:
            return f"{_number(value / base**power)} {prefixes[power - 1]}{symbol}"
    if not symbol and value == int(value):
        return str(int(value))
    return f"{_number(value)} {symbol}".strip()


def series_lines(data: PanelData) -> list[tuple[str, list[datetime], list[float]]]:
    """The lines of a time series panel: (legend text, times, values) per series."""
    lines = []
    for legend, series in data.results:
        for item in series:
            times = [datetime.fromtimestamp(float(t)) for t, _ in item["values"]]
            lines.append((_legend(legend, item["metric"]), times,
                          [float(v) for _, v in item["values"]]))
    return lines


def draw_timeseries(ax: Any, data: PanelData, unit: str) -> None:
    """Lines, axes in human units, and a legend naming every line. Handles and labels are
    passed explicitly: matplotlib leaves a label starting with ``_`` out of an automatic
    legend, which hid ``__consumer_offsets`` and ``__transaction_state``."""
    lines = series_lines(data)
    handles = [ax.plot(times, values, linewidth=1)[0] for _, times, values in lines]
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_value(v, unit)))
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    names = [name for name, _, _ in lines]
    if names:
        ax.legend(handles[:8], names[:8], fontsize=6, loc="upper left",
                  ncol=2 if len(names) > 4 else 1, framealpha=0.6)


def render_dashboard(model: dict[str, Any], panels: Sequence[PanelData], path: Path,
                     *, subtitle: str = "") -> Path:
    """One PNG for the whole dashboard, panels where Grafana would put them."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing Agg: pyplot fixes its backend on import

    bottom = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in model["panels"])
    height = bottom * ROW_INCHES + 0.8
    fig = plt.figure(figsize=(WIDTH_INCHES, height), dpi=80)
    fig.suptitle(f"{model['title']}  {subtitle}".strip(), x=0.01, ha="left", fontsize=14,
                 fontweight="bold")
    top = 1 - 0.6 / height

    def box(grid: Mapping[str, int], pad: float = 0.3) -> tuple[float, float, float, float]:
        x0 = grid["x"] / COLUMNS + 0.004
        w = grid["w"] / COLUMNS - 0.008
        y0 = top - (grid["y"] + grid["h"]) * ROW_INCHES / height
        h = (grid["h"] * ROW_INCHES - pad - 0.35) / height
        left = 0.6 / WIDTH_INCHES  # room for the y tick labels
        return (x0 + left, y0 + 0.25 / height, w - left, max(h, 0.01))

    for panel in model["panels"]:
        if panel.get("type") == "row":
            grid = panel["gridPos"]
            fig.text(0.005, top - (grid["y"] + 0.7) * ROW_INCHES / height, panel["title"],
                     fontsize=12, fontweight="bold", color="#444444")
    for data in panels:
        panel = data.panel
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
        ax = fig.add_axes(box(panel["gridPos"]))
        ax.set_title(panel["title"], fontsize=10, loc="left")
        if not data.has_data:
            ax.text(0.5, 0.5, "No data", ha="center", va="center", color="#999999")
            ax.set_axis_off()
        elif panel["type"] == "timeseries":
            draw_timeseries(ax, data, unit)
        elif panel["type"] == "stat":
            value = float(data.results[0][1][0]["value"][1])
            ax.text(0.5, 0.45, format_value(value, unit), ha="center", va="center",
                    fontsize=26, fontweight="bold", color="#2f7d32")
            ax.set_axis_off()
        else:  # table
            rows = []
            for _, series in data.results:
                for item in series:
                    labels = {k: v for k, v in item["metric"].items() if k != "__name__"}
                    rows.append((labels, format_value(float(item["value"][1]), unit)))
            columns = sorted({key for labels, _ in rows for key in labels})
            cells = [[labels.get(c, "") for c in columns] + [value] for labels, value in rows]
            shown = cells[: max(1, panel["gridPos"]["h"] - 2)]
            table = ax.table(cellText=shown, colLabels=[*columns, "value"], loc="upper center",
                             cellLoc="left")
            table.auto_set_font_size(False)
            table.set_fontsize(7)
            ax.set_axis_off()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m odradek_monitoring.render")
    parser.add_argument("--prometheus", required=True, help="URL of a Prometheus server")
    parser.add_argument("--output", type=Path, default=Path("build/dashboards"))
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--minutes", type=float, default=30.0, help="window to draw")
    parser.add_argument("--rate-interval", default="1m")
    parser.add_argument("--dashboard", action="append", choices=sorted(DASHBOARDS))
    args = parser.parse_args(argv)
    variables = dict(item.split("=", 1) for item in args.var)
    api = PrometheusAPI(args.prometheus)
    end = time.time()
    start = end - args.minutes * 60
    step = max(1.0, (end - start) / 300)
    for name in args.dashboard or DASHBOARDS:
        model = dashboard_json(name)
        panels = evaluate_panels(model, api, start=start, end=end, step=step,
                                 variables=variables, rate_interval=args.rate_interval)
        path = render_dashboard(model, panels, args.output / f"{name}.png")
        empty = [p.panel["title"] for p in panels if not p.has_data]
        print(json.dumps({"dashboard": name, "png": str(path), "panels": len(panels),
                          "without_data": empty}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
