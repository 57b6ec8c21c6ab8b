"""After a run: fraction-of-limit rows, ``summary.md`` and the PNG plots.

Everything here is derived from the rows of the current run only (``ctx.results``);
``results.jsonl`` keeps every run's rows for comparisons across commits.
"""

from __future__ import annotations

import os
import platform
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import Context
from bench.interpreter import summary_line

SYSTEM_ORDER = ("odradek", "apache-kafka", "rabbitmq", "activemq", "limit")
# Which limit bounds which kind of load (see bench_limits): produced bytes cross loopback
# and are appended and CRC-checked; consumed bytes are sent from the page cache.
LIMITS_FOR = {"produce": ("loopback_tcp", "sequential_append", "crc32c"),
              "consume": ("sendfile", "loopback_tcp")}


def goal_met(row: dict[str, Any]) -> bool | None:
    """Whether ``row["ratio"]`` meets its goal: "≥ 0.7" / "<= 1.5", or "higher" / "lower"
    (than the reference, i.e. a ratio above / below 1); None if there is no goal."""
    goal = str(row.get("goal") or "")
    if row.get("ratio") is None:
        return None
    if goal.startswith(("higher", "lower")):
        return row["ratio"] >= 1 if goal.startswith("higher") else row["ratio"] <= 1
    match = re.search(r"(≥|>=|≤|<=)\s*([0-9.]+)", goal)
    if match is None:
        return None
    bound = float(match.group(2))
    return row["ratio"] >= bound if match.group(1) in ("≥", ">=") else row["ratio"] <= bound


def add_fractions(ctx: Context) -> None:
    limits = ctx.shared.get("limits")
    if not limits:
        return
    for row in list(ctx.results):
        if row.get("kind") != "median" or row.get("mb_per_s") is None:
            continue
        kind = "consume" if ".consume" in row["test"] else (
            "produce" if ".produce" in row["test"] else None)
        if kind is None:
            continue
        fractions = {name: row["mb_per_s"] / limits[name] for name in LIMITS_FOR[kind]
                     if limits.get(name)}
        ctx.report(f"{row['test']}.{row['system']}.fraction_of_limits",
                   max(fractions.values()) if fractions else None, "fraction",
                   system=row["system"], test=row["test"], kind="fraction",
                   mb_per_s=row["mb_per_s"], fractions=fractions,
                   note="value: the largest fraction, i.e. of the tightest limit")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return str(value)


def _spread(row: dict[str, Any], metric: str) -> str:
    value = row.get(metric)
    spread = (row.get("spread") or {}).get(metric)
    if value is None:
        return "-"
    if not spread or row.get("runs", 1) < 2:
        return _fmt(value)
    return f"{_fmt(value)} ({_fmt(spread[0])}-{_fmt(spread[1])})"


def _load(rows: list[dict[str, Any]]) -> str:
    loads = [r["loadavg"][0] for r in rows if r.get("loadavg")]
    return f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"


def write_summary(ctx: Context, path: Path) -> None:
    rows = ctx.results
    lines = [
        "# odradek benchmark summary",
        "",
        f"Run `{ctx.run_id}`, commit `{ctx.commit}`, {ctx.scale} mode, "
        f"host `{platform.node()}` ({os.cpu_count()} CPUs). 1-minute load average during "
        f"the run: {_load(rows)} (the machine is shared; see docs/benchmarks.md).",
        "",
        f"odradek's brokers ran on {summary_line(ctx.interpreter)}.",
        "",
        "Medians over the repeats, with [min-max] in brackets. msgs/s and MB/s are of record",
        "values; latencies in ms; CPU seconds and peak RSS are of all broker processes of",
        "the system during the load. Load average: the 1-minute values while the runs ran.",
        "",
    ]
    medians = [r for r in rows if r.get("kind") == "median"]
    runs_by_test: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("kind") == "run":
            runs_by_test[(r["test"], r["system"])].append(r)
    if medians:
        lines += ["## Loads (medians)", "",
                  "| test | system | client | msgs/s | MB/s | p50 ms | p99 ms | p99.9 ms "
                  "| CPU s | RSS MiB | runs | load |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        order = {s: i for i, s in enumerate(SYSTEM_ORDER)}
        for r in sorted(medians, key=lambda r: (r["test"], order.get(r["system"], 9))):
            params = r.get("params") or {}
            client = params.get("client") or params.get("producer") or ""
            runs = runs_by_test[(r["test"], r["system"])]
            client = runs[0].get("client", client) if runs else client
            lines.append(
                f"| {r['test']} | {r['system']} | {client} | {_spread(r, 'msgs_per_s')} "
                f"| {_spread(r, 'mb_per_s')} | {_spread(r, 'p50_ms')} | {_spread(r, 'p99_ms')} "
                f"| {_spread(r, 'p999_ms')} | {_spread(r, 'cpu_s')} | {_spread(r, 'rss_mib')} "
                f"| {r.get('runs')} | {_load(runs)} |")
        lines.append("")
    comparisons = [r for r in rows if r.get("kind") == "comparison"]
    if comparisons:
        lines += ["## odradek against the reference (goals)", "",
                  "| test | metric | odradek | reference | ratio | goal | met |",
                  "|---|---|---|---|---|---|---|"]
        for r in comparisons:
            met = goal_met(r) if r.get("has_goal") else None
            mark = {True: "met", False: "**not met**", None: "-"}[met]
            lines.append(
                f"| {r['test']} | {r.get('metric')} | {_fmt(r.get('value'))} "
                f"| {_fmt(r.get('reference'))} ({r.get('reference_name')}) "
                f"| {_fmt(r.get('ratio'))} | {r.get('goal') if r.get('has_goal') else '-'} "
                f"| {mark} |")
        lines.append("")
    limits = [r for r in rows if r.get("kind") == "limit"]
    fractions = [r for r in rows if r.get("kind") == "fraction"]
    if limits:
        lines += ["## Limits of this machine, and each system as a fraction of them", "",
                  "| limit | MB/s |", "|---|---|"]
        lines += [f"| {r['test']} | {_fmt(r['value'])} |" for r in limits]
        lines.append("")
    if fractions:
        names = sorted({k for r in fractions for k in r["fractions"]})
        lines += ["| test | system | MB/s | " + " | ".join(names) + " |",
                  "|---|---|---|" + "---|" * len(names)]
        for r in fractions:
            cells = " | ".join(_fmt(r["fractions"].get(n), 2) for n in names)
            lines.append(f"| {r['test']} | {r['system']} | {_fmt(r['mb_per_s'])} | {cells} |")
        lines.append("")
    flat = [r for r in rows if r.get("kind") == "flatness"]
    if flat:
        lines += ["## Log growth (last quarter's MB/s over the first quarter's)", "",
                  "| test | system | stored GB | first MB/s | last MB/s | last/first |",
                  "|---|---|---|---|---|---|"]
        for r in flat:
            lines.append(f"| {r['test']} | {r['system']} | {_fmt(r['stored_gb'])} "
                         f"| {_fmt(r['first_quarter_mb_per_s'])} "
                         f"| {_fmt(r['last_quarter_mb_per_s'])} | {_fmt(r['value'])} |")
        lines.append("")
    errors = [r for r in rows if r.get("kind") == "error" or r.get("unit") == "error"]
    if errors:
        lines += ["## Errors", ""] + [f"- `{r['name']}`: {r.get('error')}" for r in errors]
        lines.append("")
    other = [r for r in rows if r.get("kind") is None and r.get("unit") != "error"]
    if other:
        lines += ["## Other benchmarks (single runs)", "",
                  "| name | system | value | unit | reference | ratio | goal | load |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in other:
            lines.append(f"| {r['name']} | {r.get('system')} | {_fmt(r.get('value'))} "
                         f"| {r.get('unit')} | {_fmt(r.get('reference'))} "
                         f"| {_fmt(r.get('ratio'))} | {r.get('goal') or '-'} "
                         f"| {r['loadavg'][0] if r.get('loadavg') else '-'} |")
        lines.append("")
    lines += ["Plots: `ratios.png`, `throughput.png`, `latency.png`, `log_growth.png`.", ""]
    path.write_text("\n".join(lines))


# ---------------------------------------------------------------------------------- plots


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


COLORS = {"odradek": "#4c72b0", "apache-kafka": "#dd8452", "rabbitmq": "#55a868",
          "activemq": "#c44e52"}


def plot_ratios(results: list[dict[str, Any]], path: Path) -> None:
    """One horizontal bar per comparison: odradek / reference, green when its goal is met,
    red when missed, grey when it has no goal."""
    rows = [r for r in results if r.get("ratio") is not None and r.get("kind") != "limit"]
    if not rows:
        return
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 0.38 * len(rows) + 1.5))
    names = [r["name"] for r in rows]
    ratios = [r["ratio"] for r in rows]
    colors = {True: "#55a868", False: "#c44e52", None: "#8c8c8c"}
    met = [goal_met(r) if r.get("has_goal", True) else None for r in rows]
    ax.barh(names, ratios, color=[colors[m] for m in met])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("odradek / reference (same run; log scale)")
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=7)
    for y, (ratio, row) in enumerate(zip(ratios, rows, strict=True)):
        goal = f" (goal {row['goal']})" if row.get("goal") and row.get("has_goal", True) else ""
        ax.text(ratio, y, f" {ratio:.2f} vs {row.get('reference_name') or 'ref'}{goal}",
                va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_throughput(results: list[dict[str, Any]], path: Path) -> None:
    medians = [r for r in results if r.get("kind") == "median" and r.get("msgs_per_s")
               and not r["test"].startswith(("latency.", "kafka_tools.e2e"))]
    if not medians:
        return
    plt = _plt()
    tests = sorted({r["test"] for r in medians})
    systems = [s for s in SYSTEM_ORDER if any(r["system"] == s for r in medians)]
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(tests) * len(systems) / 2 + 2))
    height = 0.8 / len(systems)
    for i, system in enumerate(systems):
        ys, xs, errs = [], [], [[], []]
        for j, test in enumerate(tests):
            row = next((r for r in medians if r["test"] == test and r["system"] == system),
                       None)
            if row is None:
                continue
            lo, hi = (row.get("spread") or {}).get("msgs_per_s", [row["msgs_per_s"]] * 2)
            ys.append(j + i * height)
            xs.append(row["msgs_per_s"])
            errs[0].append(row["msgs_per_s"] - lo)
            errs[1].append(hi - row["msgs_per_s"])
        ax.barh(ys, xs, height=height, xerr=errs, color=COLORS.get(system), label=system,
                capsize=2)
    ax.set_yticks([j + 0.4 - height / 2 for j in range(len(tests))], tests, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("messages/s (median, bars: min-max; log scale)")
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_latency(results: list[dict[str, Any]], path: Path) -> None:
    medians = [r for r in results if r.get("kind") == "median"
               and r["test"].startswith("latency.e2e.")]
    if not medians:
        return
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, acks in zip(axes, ("1", "all"), strict=True):
        for system in ("odradek", "apache-kafka"):
            rows = sorted((r for r in medians if r["system"] == system
                           and r["params"].get("acks") == acks),
                          key=lambda r: r["params"]["rate"])
            if not rows:
                continue
            rates = [r["params"]["rate"] for r in rows]
            for metric, style in (("p50_ms", "-o"), ("p99_ms", "--s"), ("p999_ms", ":^")):
                ax.plot(rates, [r.get(metric) for r in rows], style,
                        color=COLORS[system], label=f"{system} {metric[:-3]}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"end-to-end latency, acks={acks}, RF 3")
        ax.set_xlabel("offered rate (msgs/s)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ms (median of repeats)")
    for ax in axes:
        if ax.lines:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_growth(results: list[dict[str, Any]], path: Path) -> None:
    runs = [r for r in results if r.get("kind") == "run"
            and r["test"].startswith("log_growth.")]
    if not runs:
        return
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for system in ("odradek", "apache-kafka"):
        for test, style in (("log_growth.produce", "-o"), ("log_growth.consume", "--s")):
            rows = [r for r in runs if r["system"] == system and r["test"] == test]
            if rows:
                ax.plot([r["stored_gb"] for r in rows], [r["mb_per_s"] for r in rows], style,
                        color=COLORS[system], label=f"{system} {test.split('.')[1]}")
    ax.set_xlabel("GB stored in the partition")
    ax.set_ylabel("MB/s for that GB")
    ax.set_ylim(bottom=0)
    ax.set_title("throughput as the log grows (1 partition, 1,000-byte records)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_all(ctx: Context) -> None:
    add_fractions(ctx)
    out = ctx.output_dir
    write_summary(ctx, out / "summary.md")
    plot_ratios(ctx.results, out / "ratios.png")
    plot_throughput(ctx.results, out / "throughput.png")
    plot_latency(ctx.results, out / "latency.png")
    plot_growth(ctx.results, out / "log_growth.png")
