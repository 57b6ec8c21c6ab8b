"""A tiny single-thread scheduler for storage background work (Kafka's ``KafkaScheduler``).

Tasks run one at a time on one daemon thread, so background jobs never race each other;
the long-running cleaner has its own thread in ``LogManager``. Exceptions are logged and
never kill the thread.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable

from odradek.clock import monotonic_s

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)


class Scheduler:
    def __init__(self, name: str = "odradek-storage") -> None:
        self._tasks: list[tuple[float, int, Callable[[], object], float | None, str]] = []
        self._counter = itertools.count()
        self._condition = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def schedule(
        self,
        name: str,
        task: Callable[[], object],
        *,
        delay_ms: float = 0,
        period_ms: float | None = None,
    ) -> None:
        """Run ``task`` after ``delay_ms``, then every ``period_ms`` if given."""
        with self._condition:
            if self._stopped:
                return
            due = monotonic_s() + delay_ms / 1000
            heapq.heappush(self._tasks, (due, next(self._counter), task, period_ms, name))
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._stopped and (
                    not self._tasks or self._tasks[0][0] > monotonic_s()
                ):
                    timeout = self._tasks[0][0] - monotonic_s() if self._tasks else None
                    self._condition.wait(timeout)
                if self._stopped:
                    return
                _due, _n, task, period, name = heapq.heappop(self._tasks)
            try:
                task()
            except Exception:
                log.exception("background task %s failed", name)
            if period is not None:
                self.schedule(name, task, delay_ms=period, period_ms=period)

    def shutdown(self, timeout: float = 30.0) -> None:
        """Stop after the running task (pending tasks are dropped)."""
        with self._condition:
            self._stopped = True
            self._condition.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
