"""The faults a long run injects, each undone by the same object that did it.

- kill -9 of a broker, then a restart (its old ZooKeeper session may still hold the broker
  id; the broker waits for it to expire, as a supervisor-restarted broker does);
- SIGSTOP / SIGCONT of a broker (a GC pause or a frozen VM: the process keeps its sockets
  and, past the session timeout, its leaderships are moved and it must notice on waking);
- SIGSTOP / SIGCONT of ZooKeeper (every broker loses its coordination service at once; past
  the session timeout, ZooKeeper expires every session when it resumes);
- a network partition isolating one broker (it keeps running, unlike kill -9).

Every fault is journaled to ``faults.jsonl`` with its wall time and the cluster state at
injection, and :meth:`Faults.heal_all` undoes whatever is still in effect, so a failing or
interrupted run never leaves a process stopped or a broker cut off.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from odradek.local_cluster import ManagedProcess
from tests.longrun.cluster_state import StateFile
from tests.longrun.deployment import Deployment

__all__ = ["Faults"]


class Faults:
    def __init__(self, deployment: Deployment, state: StateFile, journal: Path,
                 data_topics: set[str], stop: threading.Event) -> None:
        self.deployment = deployment
        self.state = state
        self.journal = journal
        self.data_topics = data_topics
        self.stop = stop
        self.counts: Counter[str] = Counter()
        self.unrecovered: list[str] = []
        self.recovery_times: list[float] = []
        self._paused: set[int] = set()  # pids
        self._cut: set[int] = set()  # broker ids
        self._down: set[int] = set()  # broker ids killed on purpose, not yet restarted
        self.crashes: list[str] = []  # processes that exited without being killed
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ victims

    def pick(self, rng: random.Random, role: str) -> int:
        """A broker id by role: ``controller``, ``leader`` (of a random data partition) or
        ``any``. Falls back to any broker when the role has no holder right now."""
        state = self.state.read()
        size = len(self.deployment.brokers)
        if state is not None and role == "controller" and 0 <= state.controller < size:
            return state.controller
        if state is not None and role == "leader":
            leaders = state.leaders(self.data_topics)
            if leaders:
                return rng.choice(leaders)
        return rng.randrange(size)

    # ------------------------------------------------------------------ faults

    def kill_and_restart(self, broker_id: int, down_s: float, role: str) -> None:
        broker = self.deployment.brokers[broker_id]
        self._record("kill-9", broker=broker_id, role=role, down_s=round(down_s, 1))
        with self._lock:
            self._down.add(broker_id)
        broker.kill()
        self._hold(down_s)
        self.deployment.restart_broker(broker_id, 90)
        with self._lock:
            self._down.discard(broker_id)

    def pause_broker(self, broker_id: int, seconds: float, role: str) -> None:
        self._record("pause-broker", broker=broker_id, role=role, seconds=round(seconds, 1))
        self._pause_for(self.deployment.brokers[broker_id], seconds)

    def pause_zookeeper(self, seconds: float) -> None:
        zookeeper = self.deployment.zookeeper
        if zookeeper is None:
            raise RuntimeError("this deployment's ZooKeeper is shared: it cannot be paused")
        self._record("pause-zookeeper", seconds=round(seconds, 1))
        self._pause_for(zookeeper, seconds)

    def partition(self, broker_id: int, seconds: float, role: str) -> None:
        self._record("partition", broker=broker_id, role=role, seconds=round(seconds, 1))
        with self._lock:
            self._cut.add(broker_id)
        self.deployment.cut(broker_id)
        try:
            self._hold(seconds)
        finally:
            self.deployment.heal(broker_id)
            with self._lock:
                self._cut.discard(broker_id)

    def await_recovery(self, timeout: float, after: str) -> float | None:
        """Wait for the cluster to be healthy again; a miss is noted as unrecovered (unless
        the run is stopping, when the final check takes over)."""
        took = self.state.wait_healthy(len(self.deployment.brokers), timeout, self.stop)
        if took is not None:
            self.recovery_times.append(took)
        elif not self.stop.is_set():
            state = self.state.read()
            note = (f"{after}: not healthy {timeout:.0f}s later "
                    f"({state.describe() if state else 'no state'})")
            self.unrecovered.append(note)
            self._record("unrecovered", detail=note)
        return took

    def watch(self) -> None:
        """Notice a broker or ZooKeeper that exited although nobody killed it (a crash is
        a finding of the run), and start it again so the run goes on."""
        with self._lock:
            down = set(self._down)
        for broker_id, broker in enumerate(self.deployment.brokers):
            if broker_id in down or broker.running or broker.process is None:
                continue
            code = broker.process.returncode
            note = f"broker {broker_id} exited by itself (code {code}); log: {broker.log_path}"
            self.crashes.append(note)
            self._record("crash", detail=note)
            self.deployment.restart_broker(broker_id, 90)
        zookeeper = self.deployment.zookeeper
        if zookeeper is not None and zookeeper.process is not None and not zookeeper.running:
            note = f"ZooKeeper exited by itself; log: {zookeeper.log_path}"
            self.crashes.append(note)
            self._record("crash", detail=note)
            zookeeper.start()

    def heal_all(self) -> None:
        """Resume every paused process, reconnect every cut broker, start every dead one."""
        with self._lock:
            paused, cut = set(self._paused), set(self._cut)
            self._paused.clear()
            self._cut.clear()
        for pid in paused:
            _signal(pid, signal.SIGCONT)
        for broker_id in cut:
            self.deployment.heal(broker_id)
        self.watch()
        for broker_id, broker in enumerate(self.deployment.brokers):
            if not broker.running:
                self.deployment.restart_broker(broker_id, 90)

    # ------------------------------------------------------------------ helpers

    def _pause_for(self, process: ManagedProcess, seconds: float) -> None:
        pid = process.pid
        if pid is None or not process.running:
            return
        with self._lock:
            self._paused.add(pid)
        _signal(pid, signal.SIGSTOP)
        try:
            self._hold(seconds)
        finally:
            _signal(pid, signal.SIGCONT)
            with self._lock:
                self._paused.discard(pid)

    def _hold(self, seconds: float) -> None:
        """Keep a fault in effect for ``seconds`` (cut short when the run stops)."""
        self.stop.wait(seconds)

    def _record(self, kind: str, **details: Any) -> None:
        self.counts[kind] += 1
        state = self.state.read()
        entry = {"at": round(time.time(), 3), "fault": kind, **details,
                 "state": state.describe() if state else None}
        with self.journal.open("a") as out:
            out.write(json.dumps(entry) + "\n")


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # it died meanwhile
        os.kill(pid, sig)
