"""`make bench`: run every ``bench/bench_*.py`` module, write JSON lines and a plot.

Usage: ``python -m bench [--output DIR] [--quick] [--only NAME ...]``. Each module's
``run(ctx)`` reports rows through :class:`bench.common.Context`; a module that raises is
reported as an ``error`` row and the others still run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import time
import traceback
from pathlib import Path

from bench.common import Context


def discover() -> list[str]:
    here = Path(__file__).parent
    return sorted(path.stem for path in here.glob("bench_*.py"))


def goal_met(row: dict) -> bool | None:
    """Whether ``row["ratio"]`` meets its goal: "≥ 0.7" / "<= 1.5", or "higher" / "lower"
    (than the reference, i.e. a ratio above / below 1); None if there is no goal."""
    goal = str(row.get("goal") or "")
    if goal in ("higher", "lower") and row.get("ratio") is not None:
        return row["ratio"] >= 1 if goal == "higher" else row["ratio"] <= 1
    match = re.search(r"(≥|>=|≤|<=)\s*([0-9.]+)", goal)
    if match is None or row.get("ratio") is None:
        return None
    bound = float(match.group(2))
    return row["ratio"] >= bound if match.group(1) in ("≥", ">=") else row["ratio"] <= bound


def plot(results: list[dict], path: Path) -> None:
    """One horizontal bar per measurement that has a reference: odradek / reference,
    green when its goal is met, red when missed, grey when it has no goal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in results if row.get("ratio") is not None]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.5))
    names = [row["name"] for row in rows]
    ratios = [row["ratio"] for row in rows]
    colors = {True: "#55a868", False: "#c44e52", None: "#8c8c8c"}
    ax.barh(names, ratios, color=[colors[goal_met(row)] for row in rows])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("odradek / reference (same run)")
    ax.invert_yaxis()
    for y, (ratio, row) in enumerate(zip(ratios, rows, strict=True)):
        goal = f" (goal {row['goal']})" if row.get("goal") else ""
        ax.text(ratio, y, f" {ratio:.2f} vs {row.get('reference_name') or 'reference'}{goal}",
                va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--output", type=Path, default=Path("bench/results"))
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for smoke runs")
    parser.add_argument("--only", nargs="*", help="module names, e.g. bench_storage")
    args = parser.parse_args()
    ctx = Context(args.output, quick=args.quick)
    for name in args.only or discover():
        started = time.monotonic()
        try:
            module = importlib.import_module(f"bench.{name}")
            module.run(ctx)
        except Exception as exc:
            traceback.print_exc()
            ctx.report(f"{name}.error", 0, "error", error=repr(exc))
        print(f"# {name} took {time.monotonic() - started:.1f}s", file=sys.stderr)
    ctx.close()
    summary = args.output / "summary.json"
    summary.write_text(json.dumps(ctx.results, indent=1))
    plot(ctx.results, args.output / "ratios.png")
    print(f"# results: {args.output / 'results.jsonl'}, plot: {args.output / 'ratios.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
