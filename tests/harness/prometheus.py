"""Prometheus for tests: the binaries (Debian's package, `make prometheus`), a server fixture
scraping given targets, and PromQL → metric names with a real parser (promql-parser)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Generator
from pathlib import Path
from typing import Any

import promql_parser
import pytest

from odradek_monitoring.prometheus import LocalPrometheus, ScrapeTarget

__all__ = [
    "GRAFANA_BUILTINS",
    "matching_samples",
    "metric_names",
    "prometheus_server",
    "promtool_binary",
    "selectors",
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


def dashboard_queries(model: dict[str, Any]) -> list[str]:
    """The PromQL of every panel target of a Grafana dashboard model, and the selector of
    every ``label_values(selector, label)`` variable."""
    queries = [target["expr"] for panel in model["panels"] if panel.get("type") != "row"
               for target in panel.get("targets", [])]
    for variable in model["templating"]["list"]:
        if variable["type"] == "query":
            selector = re.fullmatch(r"label_values\((.*), \w+\)", variable["query"])
            assert selector, variable["query"]
            queries.append(selector.group(1))
    return queries


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


def selectors(expr: str) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Every vector selector of a PromQL expression as (metric name, [(label, op, value)]),
    ``op`` one of ``=``, ``!=``, ``=~``, ``!~`` (the ``__name__`` matcher left out)."""
    match = promql_parser.MatchOp
    ops = ((match.Equal, "="), (match.NotEqual, "!="), (match.Re, "=~"), (match.NotRe, "!~"))
    found: list[tuple[str, list[tuple[str, str, str]]]] = []

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            fixed = [m.value for m in node.matchers.matchers if m.name == "__name__"]
            found.append((node.name or fixed[0],
                          [(m.name, next(text for op, text in ops if op == m.op), m.value)
                           for m in node.matchers.matchers if m.name != "__name__"]))

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def matching_samples(samples: list[tuple[str, dict[str, str]]], name: str,
                     matchers: list[tuple[str, str, str]]) -> list[dict[str, str]]:
    """The label sets of ``samples`` (name, labels) that a selector selects, matched the way
    Prometheus matches (a missing label is the empty string; regexes are anchored)."""

    def accepts(labels: dict[str, str], label: str, op: str, value: str) -> bool:
        actual = labels.get(label, "")
        return {"=": actual == value, "!=": actual != value,
                "=~": re.fullmatch(value, actual) is not None,
                "!~": re.fullmatch(value, actual) is None}[op]

    return [labels for sample_name, labels in samples if sample_name == name
            and all(accepts(labels, *matcher) for matcher in matchers)]


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
