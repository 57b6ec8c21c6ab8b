"""The two clocks, named for what they measure.

* :func:`wall_ms` — milliseconds since the Unix epoch. For timestamps that leave the
  process or outlive it: record timestamps, segment and file ages (retention, roll),
  commit and expiry times of offsets, znode timestamps. It can jump (NTP, an operator).
* :func:`monotonic_ms` — a clock that never goes back, with an arbitrary origin. For
  deadlines and intervals inside one process: replica lag, retry backoffs, timeouts.

:func:`wall_s` and :func:`monotonic_s` are the same clocks in float seconds, for code
whose settings and deadlines are in seconds (the client's timeouts, durations observed
into histograms, Prometheus' seconds-since-epoch gauges).

Comparing a value of one with a value of the other is always a bug; the names keep it
visible. Every reading of the time goes through this module.
"""

from __future__ import annotations

import time

__all__ = ["monotonic_ms", "monotonic_s", "wall_ms", "wall_s"]


def wall_ms() -> int:
    """Milliseconds since the Unix epoch (wall clock)."""
    return time.time_ns() // 1_000_000


def monotonic_ms() -> int:
    """Milliseconds on the monotonic clock (deadlines and intervals only)."""
    return time.monotonic_ns() // 1_000_000


def wall_s() -> float:
    """Seconds since the Unix epoch (wall clock)."""
    return time.time()


def monotonic_s() -> float:
    """Seconds on the monotonic clock (deadlines and intervals only)."""
    return time.monotonic()
