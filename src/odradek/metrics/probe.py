"""Event-loop lag: how late the loop runs a timer that should fire every ``interval``.

odradek serves the network and runs request handlers on one event loop, so Kafka's two
saturation gauges (network-processor and request-handler idle ratio) become one question:
is the loop keeping up? A probe task sleeps ``interval`` and records by how much it woke up
late; anything that hogs the loop (a per-record loop on a large batch, a blocking call)
shows up as lag, whichever request caused it.
"""

from __future__ import annotations

import asyncio
import contextlib

from .families import HistogramChild

__all__ = ["EventLoopLagProbe"]


class EventLoopLagProbe:
    def __init__(self, lag: HistogramChild, interval: float) -> None:
        self._lag = lag
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start probing the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="metrics-loop-lag-probe")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self._interval
            await asyncio.sleep(self._interval)
            self._lag.observe(max(0.0, loop.time() - due))
