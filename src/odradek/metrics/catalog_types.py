"""What a metric is, as data: name, kind, help, labels, buckets, and who feeds it.

Every metric odradek exports is one :class:`MetricSpec` in :mod:`odradek.metrics.catalog`
(broker), :mod:`odradek.metrics.lag` (consumer groups) or :mod:`odradek.metrics.operator`
(operator). Recorders, scrape-time collectors, the docs table, the dashboards and the alert
tests all read these specs, so a name is spelled in exactly one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

__all__ = ["Feed", "Kind", "MetricSpec"]

_NAME = re.compile(r"odradek_[a-z][a-z0-9_]*")
_UNIT_SUFFIXES = ("_bytes", "_seconds", "_records", "_ratio")


class Kind(Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


class Feed(Enum):
    """How values reach a metric: decides where phase-2 wiring goes."""

    RECORDED = "recorded"  # the broker calls a recorder on the event (hot path: cheap)
    SCRAPED = "scraped"  # read from broker state when Prometheus scrapes (no hot-path cost)


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric family.

    ``source`` names the component that feeds it (a recorder attribute or a source protocol);
    the docs table and the phase-2 wiring list are generated from it.
    """

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    feed: Feed = Feed.RECORDED
    source: str = ""
    buckets: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"{self.name}: metric names are odradek_ plus snake_case")
        if self.kind is Kind.COUNTER and not self.name.endswith("_total"):
            raise ValueError(f"{self.name}: a counter's name ends in _total")
        if self.kind is not Kind.COUNTER and self.name.endswith("_total"):
            raise ValueError(f"{self.name}: only counters end in _total")
        if self.kind is Kind.HISTOGRAM:
            if not self.buckets or list(self.buckets) != sorted(set(self.buckets)):
                raise ValueError(f"{self.name}: a histogram needs strictly increasing buckets")
            if not self.name.endswith(_UNIT_SUFFIXES):
                raise ValueError(f"{self.name}: a histogram's name carries its base unit")
        elif self.buckets:
            raise ValueError(f"{self.name}: only histograms have buckets")
        if "le" in self.labels or len(set(self.labels)) != len(self.labels):
            raise ValueError(f"{self.name}: labels must be distinct and not 'le'")

    @property
    def exposed_names(self) -> tuple[str, ...]:
        """Every sample name this family puts on the wire (what PromQL can select)."""
        if self.kind is Kind.HISTOGRAM:
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)
