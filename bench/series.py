"""Repeated, alternating runs of one load against several systems, and their medians.

A *series* is one named load (``test``) with fixed ``params``, run ``repeats`` times against
each system, the systems' order alternating between repeats (A B, B A, A B, ...) so a drift
of the shared machine (another helper's build starting) lands on both. Every run is a row
(``kind: "run"``); after the last repeat each system gets a ``kind: "median"`` row (median
and [min, max] spread of every metric), and each compared metric a ``kind: "comparison"``
row: odradek's median over the reference system's, with the goal and whether it is met.
A run that fails is an ``error`` row; the series goes on.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.common import Context, median_row

# A load: run once and return the metric fields of the row.
Load = Callable[[], Mapping[str, Any]]

_LOWER_IS_BETTER = ("p50_ms", "p99_ms", "p999_ms", "cpu_s", "rss_mib")


@dataclass
class Comparison:
    metric: str
    goal: str | None = None  # e.g. "≥ 1.0" on odradek / reference; None: just report


@dataclass
class Series:
    ctx: Context
    test: str
    params: Mapping[str, Any]
    primary: str = "msgs_per_s"
    comparisons: Sequence[Comparison] = ()
    reference: str = "apache-kafka"
    subject: str = "odradek"
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def run_once(self, system: str, load: Load, repeat: int) -> dict[str, Any] | None:
        """One run; its row (None when it failed)."""
        try:
            fields = dict(load())
        except Exception as exc:  # a benchmark reports failures, it does not raise them
            traceback.print_exc()
            self.ctx.measurement(system, self.test, self.params, primary=self.primary,
                                 kind="error", repeat=repeat,
                                 error=f"{type(exc).__name__}: {exc}".splitlines()[0][:400])
            return None
        row = self.ctx.measurement(system, self.test, self.params, primary=self.primary,
                                   kind="run", repeat=repeat, **fields)
        self.runs.setdefault(system, []).append(row)
        return row

    def finish(self, **extra: Any) -> dict[str, dict[str, Any]]:
        medians: dict[str, dict[str, Any]] = {}
        for system, rows in self.runs.items():
            med = median_row(rows)
            medians[system] = med
            self.ctx.measurement(system, self.test, self.params, primary=self.primary,
                                 kind="median", **med, **extra)
        ours, theirs = medians.get(self.subject), medians.get(self.reference)
        for comparison in self.comparisons:
            value = ours.get(comparison.metric) if ours else None
            reference = theirs.get(comparison.metric) if theirs else None
            lower = comparison.metric in _LOWER_IS_BETTER
            self.ctx.report(
                f"{self.test}.{comparison.metric}", value,
                "ms" if comparison.metric.endswith("_ms") else comparison.metric,
                reference=reference, reference_name=self.reference,
                goal=comparison.goal or ("lower" if lower else "higher"),
                system=self.subject, test=self.test, params=dict(self.params),
                metric=comparison.metric, kind="comparison", has_goal=comparison.goal is not None,
                **extra)
        return medians


def alternate(systems: Sequence[str], repeat: int) -> list[str]:
    """The order for one repeat: as given on even repeats, reversed on odd ones."""
    return list(systems) if repeat % 2 == 0 else list(reversed(systems))


def measured(pids: Sequence[int], load: Callable[..., Mapping[str, Any]], *args: Any,
             **extra: Any) -> dict[str, Any]:
    """Run ``load(*args)`` once, with the broker processes' CPU and peak RSS sampled;
    ``extra`` fields are added to the row."""
    from bench.systems import ProcessSampler, settle

    settle()
    with ProcessSampler(pids) as sampler:
        fields = dict(load(*args))
    return {**fields, **sampler.fields(), **extra}
