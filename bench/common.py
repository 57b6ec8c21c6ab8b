"""Shared plumbing for `make bench`: every benchmark reports JSON lines through a Context.

A benchmark module is ``bench/bench_<area>.py`` with ``run(ctx: Context) -> None``. It
measures odradek and, in the same run, the reference it is compared with (raw file or socket
limits, a peer broker), and reports both plus their ratio. Benchmarks are not tests: they
never assert, they report numbers.

Every row carries ``system`` ("odradek", "apache-kafka", "rabbitmq", "activemq", or "limit"
for a raw hardware/OS limit), ``test`` (what was measured, stable across commits), the git
commit, the run id and the 1/5/15-minute load average when it was taken: this machine is
shared, and a number measured at load 6 on 2 cores is not the number of a quiet machine.
It also carries the ``interpreter`` that runs odradek's brokers (:mod:`bench.interpreter`):
an unoptimized CPython build costs odradek 14-23% more CPU per request.
Measurements of a load (:meth:`Context.measurement`) use the same field names everywhere:
``msgs_per_s``, ``mb_per_s``, ``p50_ms``/``p99_ms``/``p999_ms``, ``cpu_s`` and ``rss_mib`` of
the broker processes, and ``params`` (what the load was).
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.interpreter import describe

REPO_ROOT = Path(__file__).resolve().parents[1]

# The numbers a load reports; medians over repeats are taken of each.
METRICS = ("msgs_per_s", "mb_per_s", "p50_ms", "p99_ms", "p999_ms", "cpu_s", "rss_mib")


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain",
                            "--untracked-files=no", "--", "src"],
                           capture_output=True, text=True, timeout=10, check=False).stdout
    return out.stdout.strip() + ("+dirty-src" if dirty.strip() else "")


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(math.ceil(q * len(sorted_values)) - 1, 0)
    return sorted_values[min(rank, len(sorted_values) - 1)]


def median_row(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Median and [min, max] spread of every metric present in ``rows``."""
    rows = list(rows)
    out: dict[str, Any] = {"runs": len(rows), "spread": {}}
    for metric in METRICS:
        values = [r[metric] for r in rows if r.get(metric) is not None]
        if values:
            out[metric] = statistics.median(values)
            out["spread"][metric] = [min(values), max(values)]
    return out


SCALES = ("full", "quick", "tiny")


@dataclass
class Context:
    output_dir: Path
    quick: bool = False
    # "tiny": the smallest loads that still exercise every code path (the bench's own
    # behaviour tests, tests/bench); implies ``quick`` for modules that only know that.
    tiny: bool = False
    results: list[dict[str, Any]] = field(default_factory=list)
    # Rows of one module kept for later modules (e.g. limits for the fraction rows).
    shared: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.quick = self.quick or self.tiny
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self._lines = (self.output_dir / "results.jsonl").open("a")
        self.run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.commit = git_commit()
        self.interpreter = describe()

    @property
    def scale(self) -> str:
        return "tiny" if self.tiny else "quick" if self.quick else "full"

    def pick(self, full: Any, quick: Any, tiny: Any) -> Any:
        """The size for this run's scale."""
        return {"full": full, "quick": quick, "tiny": tiny}[self.scale]

    def scratch_dir(self, prefix: str) -> Path:
        """A fresh temporary directory for one benchmark's files (removed by the OS later)."""
        base = os.environ.get("ODRADEK_BENCH_SCRATCH")
        if base:
            Path(base).mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"odradek-bench-{prefix}-", dir=base or None))

    def report(
        self,
        name: str,
        value: float | None,
        unit: str,
        *,
        reference: float | None = None,
        reference_name: str | None = None,
        goal: str | None = None,
        system: str = "odradek",
        test: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Record one measurement; ``ratio`` is value / reference when a reference is given."""
        row: dict[str, Any] = {
            "name": name,
            "system": system,
            "test": test or name,
            "value": value,
            "unit": unit,
            "time": time.time(),
            "loadavg": load_average(),
            "host": platform.node(),
            "commit": self.commit,
            "run_id": self.run_id,
            "quick": self.quick,
            "scale": self.scale,
            "interpreter": self.interpreter,
        }
        if reference is not None:
            row["reference"] = reference
            row["reference_name"] = reference_name
            row["ratio"] = value / reference if reference and value is not None else None
        if goal is not None:
            row["goal"] = goal
        row.update(extra)
        self.results.append(row)
        self._lines.write(json.dumps(row) + "\n")
        self._lines.flush()
        print(json.dumps(row), flush=True)
        return row

    def measurement(self, system: str, test: str, params: Mapping[str, Any], *,
                    primary: str = "msgs_per_s", **fields: Any) -> dict[str, Any]:
        """One run of a load against one system: the standard row (see the module doc).

        ``primary`` names the field that is also the row's ``value`` (what plots and the
        ratio compare); the unit follows from it.
        """
        unit = {"msgs_per_s": "msgs/s", "mb_per_s": "MB/s", "cpu_s": "s",
                "rss_mib": "MiB"}.get(primary, "ms")
        return self.report(f"{test}.{system}", fields.get(primary), unit, system=system,
                           test=test, params=dict(params), primary=primary, **fields)

    def close(self) -> None:
        self._lines.close()
