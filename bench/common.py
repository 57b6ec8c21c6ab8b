"""Shared plumbing for `make bench`: every benchmark reports JSON lines through a Context.

A benchmark module is ``bench/bench_<area>.py`` with ``run(ctx: Context) -> None``. It
measures odradek and, in the same run, the reference it is compared with (raw file or socket
limits, a peer broker), and reports both plus their ratio. Benchmarks are not tests: they
never assert, they report numbers.
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Context:
    output_dir: Path
    quick: bool = False
    results: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self._lines = (self.output_dir / "results.jsonl").open("a")

    def scratch_dir(self, prefix: str) -> Path:
        """A fresh temporary directory for one benchmark's files (removed by the OS later)."""
        return Path(tempfile.mkdtemp(prefix=f"odradek-bench-{prefix}-"))

    def report(
        self,
        name: str,
        value: float,
        unit: str,
        *,
        reference: float | None = None,
        reference_name: str | None = None,
        goal: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Record one measurement; ``ratio`` is value / reference when a reference is given."""
        row: dict[str, Any] = {
            "name": name,
            "value": value,
            "unit": unit,
            "time": time.time(),
            "host": platform.node(),
        }
        if reference is not None:
            row["reference"] = reference
            row["reference_name"] = reference_name
            row["ratio"] = value / reference if reference else None
        if goal is not None:
            row["goal"] = goal
        row.update(extra)
        self.results.append(row)
        self._lines.write(json.dumps(row) + "\n")
        self._lines.flush()
        print(json.dumps(row), flush=True)
        return row

    def close(self) -> None:
        self._lines.close()
