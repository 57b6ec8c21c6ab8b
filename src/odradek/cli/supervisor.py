"""Keeping the dev cluster's processes up: each one that exits on its own is started again.

``odradek cluster`` is where people try failover, so killing a broker (``kill -9``) must not
take the rest down. The supervisor notices the exit, says in one line which process ended,
how, and when it comes back, and restarts it after a backoff; ZooKeeper and the other
brokers keep running. ZooKeeper itself is restarted the same way: the brokers reconnect to
it, as they would to a real ensemble that lost and regained its quorum.

The schedule is :class:`RestartBackoff`, pure arithmetic on the times it is given: 1 s,
then doubling up to 30 s for a process that keeps dying, back to 1 s once it has stayed up
for a minute. That way a broker that cannot start (a broken ``--override``) does not spin a
core, and a one-off kill comes back at once. Shutting down is not the supervisor's job: the
caller stops calling :meth:`Supervisor.check`, so a pending restart simply never happens.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from odradek.local_cluster import ManagedProcess

__all__ = ["RestartBackoff", "Supervisor", "describe_exit"]

_MAX_DOUBLINGS = 30  # 2**30 s is past any cap; keeps the power finite for any failure count


@dataclass
class RestartBackoff:
    """When to restart a process after it exited: ``initial`` seconds, doubled for each
    further exit, at most ``cap``; an exit after ``stable_after`` seconds of uptime counts
    as the first again."""

    initial: float = 1.0
    cap: float = 30.0
    stable_after: float = 60.0
    consecutive_exits: int = 0
    started_at: float = 0.0

    def started(self, now: float) -> None:
        self.started_at = now

    def delay_after_exit(self, now: float) -> float:
        """Seconds to wait before restarting a process that exited at ``now``."""
        if now - self.started_at >= self.stable_after:
            self.consecutive_exits = 0
        doublings = min(self.consecutive_exits, _MAX_DOUBLINGS)
        self.consecutive_exits += 1
        return float(min(self.cap, self.initial * 2**doublings))


def describe_exit(code: int | None) -> str:
    """``killed by SIGKILL`` / ``exited with code 1``, from a ``Popen.returncode``."""
    if code is None:
        return "exited"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


@dataclass
class _Watched:
    process: ManagedProcess
    backoff: RestartBackoff
    restart_at: float | None = None
    """When the pending restart is due (``clock`` time); None while the process runs."""
    awaiting_ready: bool = False


class Supervisor:
    """Restarts the given processes when they exit; ``report`` gets one line per event.

    :meth:`check` does one round (no waiting): call it every fraction of a second.
    """

    def __init__(self, processes: Sequence[ManagedProcess], report: Callable[[str], None],
                 *, clock: Callable[[], float] = time.monotonic) -> None:
        self._report = report
        self._clock = clock
        now = clock()
        self._watched = [_Watched(process, RestartBackoff()) for process in processes]
        for watched in self._watched:
            watched.backoff.started(now)

    def check(self) -> None:
        now = self._clock()
        for watched in self._watched:
            if watched.restart_at is not None:
                if now >= watched.restart_at:
                    self._restart(watched, now)
            elif not watched.process.running:
                self._schedule_restart(watched, now)
            elif watched.awaiting_ready and watched.process.ready():
                watched.awaiting_ready = False
                where = watched.process.address
                self._report(f"{_clock_time()} {watched.process.name} is serving again"
                             + (f" on {where}" if where else ""))

    def _schedule_restart(self, watched: _Watched, now: float) -> None:
        process = watched.process
        code = process.exit_code
        delay = watched.backoff.delay_after_exit(now)
        watched.restart_at = now + delay
        watched.awaiting_ready = False
        how = describe_exit(code)
        log = f" (log: {process.log_path})" if code is not None and code >= 0 else ""
        self._report(f"{_clock_time()} {process.name} (pid {process.pid}) {how}{log}; "
                     f"restarting it in {delay:g} s")

    def _restart(self, watched: _Watched, now: float) -> None:
        process = watched.process
        watched.restart_at = None
        try:
            process.start()
        except OSError as exc:
            delay = watched.backoff.delay_after_exit(now)
            watched.restart_at = now + delay
            self._report(f"{_clock_time()} {process.name} could not be started ({exc}); "
                         f"trying again in {delay:g} s")
            return
        watched.backoff.started(now)
        watched.awaiting_ready = True
        self._report(f"{_clock_time()} {process.name} restarted (pid {process.pid})")


def _clock_time() -> str:
    return time.strftime("%H:%M:%S")
