"""Prometheus for tests: the binaries (Debian's package, `make prometheus`), a server fixture
scraping given targets, and PromQL → metric names with a real parser (promql-parser)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Generator
from pathlib import Path

import promql_parser
import pytest

from odradek.metrics.prometheus import LocalPrometheus, ScrapeTarget

__all__ = [
    "GRAFANA_BUILTINS",
    "metric_names",
    "prometheus_server",
    "promtool_binary",
    "to_promql",
]

GRAFANA_BUILTINS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}
"""What Grafana substitutes for its own variables, for parsing and evaluating panel queries."""


def promtool_binary() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is missing: run `make prometheus` (Debian's prometheus package)")
    return found


def to_promql(expr: str, variables: dict[str, str] | None = None) -> str:
    """A Grafana panel query as plain PromQL: built-ins become durations, ``$name`` the
    given values (by default ``.*``, which every ``=~`` matcher accepts)."""
    for name, value in GRAFANA_BUILTINS.items():
        expr = expr.replace(name, value)
    values = variables or {}
    return re.sub(r"\$(\w+)", lambda m: values.get(m.group(1), ".*"), expr)


def metric_names(expr: str) -> set[str]:
    """Every metric name a PromQL expression selects, from promql-parser's syntax tree
    (``name{...}`` and ``{__name__="name"}`` alike); a selector with no fixed name fails."""
    names: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                names.add(node.name)
                return
            fixed = [m.value for m in node.matchers.matchers
                     if m.name == "__name__" and m.op == promql_parser.MatchOp.Equal]
            if not fixed:
                raise ValueError(f"{expr!r} selects metrics without a fixed name")
            names.update(fixed)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def prometheus_server(tmp_path: Path, targets: list[ScrapeTarget],
                      rule_files: tuple[Path, ...] = ()
                      ) -> Generator[LocalPrometheus, None, None]:
    """A started LocalPrometheus, stopped (by PID) when the generator closes."""
    server = LocalPrometheus(tmp_path / "prometheus", targets, rule_files=rule_files)
    server.start()
    try:
        yield server
    finally:
        server.stop()
