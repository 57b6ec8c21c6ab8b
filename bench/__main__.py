"""`make bench`: run ``bench/bench_*.py`` modules, write JSON lines, a summary and plots.

Usage: ``python -m bench [--output DIR] [--quick | --tiny] [--only NAME ...] [--skip NAME ...]``.
Each module's ``run(ctx)`` reports rows through :class:`bench.common.Context`; a module that
raises is reported as an ``error`` row and the others still run. ``bench_limits`` runs
first so the report can give every system's throughput as a fraction of the machine's
limits. Rows are appended to ``DIR/results.jsonl`` (every run, for comparisons across
commits); ``DIR/summary.md`` and the PNG plots describe this run only (``bench.report``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from pathlib import Path

from bench.common import Context
from bench.interpreter import summary_line
from bench.report import write_all


def discover() -> list[str]:
    here = Path(__file__).parent
    names = sorted(path.stem for path in here.glob("bench_*.py"))
    return sorted(names, key=lambda n: n != "bench_limits")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--output", type=Path, default=Path("bench/results"))
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for smoke runs")
    parser.add_argument("--tiny", action="store_true",
                        help="smallest loads, for the bench's own tests (tests/bench)")
    parser.add_argument("--only", nargs="*", help="module names, e.g. bench_storage")
    parser.add_argument("--skip", nargs="*", default=[], help="module names to leave out")
    args = parser.parse_args()
    ctx = Context(args.output, quick=args.quick, tiny=args.tiny)
    print(f"# odradek's brokers run on {summary_line(ctx.interpreter)}", file=sys.stderr)
    started_all = time.monotonic()
    for name in args.only or discover():
        if name in args.skip:
            continue
        started = time.monotonic()
        try:
            module = importlib.import_module(f"bench.{name}")
            module.run(ctx)
        except Exception as exc:
            traceback.print_exc()
            ctx.report(f"{name}.error", None, "error", test=name, kind="error",
                       error=repr(exc)[:500])
        took = time.monotonic() - started
        ctx.report(f"{name}.duration", took, "s", system="bench", test=f"{name}.duration",
                   kind="duration")
        print(f"# {name} took {took:.1f}s", file=sys.stderr)
    ctx.report("bench.duration", time.monotonic() - started_all, "s", system="bench",
               test="bench.duration", kind="duration")
    write_all(ctx)
    ctx.close()
    (args.output / "summary.json").write_text(json.dumps(ctx.results, indent=1))
    print(f"# results: {args.output / 'results.jsonl'}, summary: "
          f"{args.output / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
