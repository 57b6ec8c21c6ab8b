"""The cluster as the ZooKeeper monitor last saw it, and what "healthy" means for a run.

The monitor worker (:func:`tests.longrun.observe.monitor`) rewrites ``state.json`` every
second; the run and its faults read it here to pick victims (the controller, a leader) and to
wait, with a deadline, for the cluster to heal: every broker registered, every partition led,
every ISR equal to its replica set.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ClusterState", "StateFile"]

#: A snapshot older than this says nothing about now (ZooKeeper paused or monitor stuck).
FRESH_S = 5.0


@dataclass(frozen=True)
class ClusterState:
    at: float
    controller: int
    brokers: tuple[int, ...]
    partitions: tuple[tuple[str, int, int, tuple[int, ...], tuple[int, ...]], ...]

    @classmethod
    def parse(cls, data: dict[str, Any]) -> ClusterState:
        return cls(data["at"], data["controller"], tuple(data["brokers"]),
                   tuple((t, p, leader, tuple(isr), tuple(replicas))
                         for t, p, leader, isr, replicas in data["partitions"]))

    @property
    def offline(self) -> int:
        return sum(1 for _t, _p, leader, _isr, _r in self.partitions if leader < 0)

    @property
    def under_replicated(self) -> int:
        return sum(1 for _t, _p, _l, isr, replicas in self.partitions
                   if set(isr) != set(replicas))

    def healthy(self, size: int) -> bool:
        return (time.time() - self.at < FRESH_S and len(self.brokers) == size
                and self.controller >= 0 and self.offline == 0 and self.under_replicated == 0)

    def leaders(self, topics: set[str]) -> list[int]:
        return [leader for t, _p, leader, _isr, _r in self.partitions
                if t in topics and leader >= 0]

    def describe(self) -> str:
        return (f"controller {self.controller}, brokers {list(self.brokers)}, "
                f"{len(self.partitions)} partitions: {self.offline} offline, "
                f"{self.under_replicated} under-replicated "
                f"(seen {time.time() - self.at:.0f}s ago)")


class StateFile:
    """Reads the monitor's ``state.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> ClusterState | None:
        try:
            return ClusterState.parse(json.loads(self.path.read_text()))
        except (OSError, ValueError, KeyError):
            return None

    def wait_healthy(self, size: int, timeout: float, stop: Any = None) -> float | None:
        """Seconds until the cluster was healthy, or None after ``timeout`` (or as soon as
        the optional ``stop`` event is set)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            state = self.read()
            if state is not None and state.healthy(size):
                return time.monotonic() - started
            if stop is not None and stop.is_set():
                return None
            time.sleep(0.5)
        return None
