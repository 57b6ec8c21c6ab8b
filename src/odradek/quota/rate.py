"""A rate over sliding sample windows, and the throttle time it implies (Kafka's way).

This is Kafka's ``Rate`` over a ``SampledTotal`` (``org.apache.kafka.common.metrics``):
``samples`` windows of ``window_ms`` each. A value is added to the current sample; a sample
older than ``window_ms`` is complete and recording moves on to the next slot (reusing the
oldest); samples older than ``samples * window_ms`` are reset before measuring. The rate
is the sum of the samples divided by the time since the oldest sample began, but never by
less than ``samples - 1`` full windows: a client that starts sending is not measured over
a few milliseconds (which would throttle its very first request).

When the rate exceeds a quota, :meth:`SampledRate.throttle_ms` is how long the client must
stay silent for the windowed rate to fall back to the quota,
``(rate - quota) / quota * window``, capped (Kafka caps it at one sample window) so a
burst never stalls a client for long.

Sans-IO: the caller passes the time (milliseconds of a monotonic clock). Recording is O(1);
measuring is O(samples) with ``samples`` a small constant (``quota.window.num``).
"""

from __future__ import annotations

__all__ = ["SampledRate"]


class SampledRate:
    __slots__ = ("_current", "_samples", "_starts", "_values", "_window_ms")

    def __init__(self, samples: int, window_ms: float) -> None:
        if samples < 1 or window_ms <= 0:
            raise ValueError("a rate needs at least one sample window of positive length")
        self._samples = samples
        self._window_ms = float(window_ms)
        self._starts: list[float] = []  # grows to ``samples`` slots, as Kafka's list does
        self._values: list[float] = []
        self._current = 0

    def record(self, value: float, now_ms: float) -> None:
        starts = self._starts
        if not starts:
            starts.append(now_ms)
            self._values.append(value)
            return
        current = self._current
        if now_ms - starts[current] >= self._window_ms:  # the current sample is complete
            current = self._current = (current + 1) % self._samples
            if current == len(starts):
                starts.append(now_ms)
                self._values.append(value)
                return
            starts[current] = now_ms
            self._values[current] = value
            return
        self._values[current] += value

    def _purge(self, now_ms: float) -> None:
        expire = self._samples * self._window_ms
        starts, values = self._starts, self._values
        for i, start in enumerate(starts):
            if now_ms - start >= expire:
                starts[i] = now_ms
                values[i] = 0.0

    def window_ms(self, now_ms: float) -> float:
        """The time the rate is measured over (Kafka's ``Rate.windowSize``)."""
        self._purge(now_ms)
        oldest = min(self._starts) if self._starts else now_ms
        elapsed = now_ms - oldest
        full = int(elapsed // self._window_ms)
        if full < self._samples - 1:
            elapsed += (self._samples - 1 - full) * self._window_ms
        return max(elapsed, 1.0)

    def total(self, now_ms: float) -> float:
        self._purge(now_ms)
        return sum(self._values)

    def per_second(self, now_ms: float) -> float:
        """The rate in units per second."""
        window = self.window_ms(now_ms)
        return sum(self._values) * 1000.0 / window

    def throttle_ms(self, bound: float, now_ms: float, max_ms: float) -> int:
        """How long (ms, rounded) until the rate is back at ``bound`` per second, at most
        ``max_ms``; 0 within the quota (Kafka's ``QuotaUtils.boundedThrottleTime``)."""
        window = self.window_ms(now_ms)
        value = sum(self._values) * 1000.0 / window
        if value <= bound:
            return 0
        if bound <= 0:
            return int(max_ms)
        return round(min((value - bound) / bound * window, max_ms))

    def idle_since(self) -> float:
        """When the newest sample began (for expiring rates nobody records into)."""
        return max(self._starts) if self._starts else float("-inf")


