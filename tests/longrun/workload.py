"""The long runs' load: worker processes in slots, each replaced when its lifetime ends.

A slot is one producer or one group member. Its incarnations run one after another, each
for a random lifetime, so producers get new producer ids and groups keep rebalancing as
members leave and join. Every worker is bounded in time (its own ``seconds``, plus a kill by
PID when it overruns) and in count; no incarnation starts too close to the end of the load.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.longrun.deployment import Deployment
from tests.longrun.journal import read_stats

__all__ = ["Slot", "WorkerPool"]

REPO = Path(__file__).resolve().parents[2]
#: Beyond its own ``seconds``, how long a worker may take to flush and close.
OVERRUN_S = 180.0
#: No new incarnation with less than this left of the load.
MIN_LIFETIME_S = 15.0


@dataclass
class Slot:
    name: str  # prefix of each incarnation's name: "confA" -> "confA.3"
    action: str  # a worker action, e.g. "produce-confluent"
    spec: dict[str, Any]  # the action's spec without name, journal, seconds, seed
    lifetime_s: tuple[float, float]
    near_broker: int | None = None  # run inside that broker's network namespace
    incarnation: int = 0
    process: subprocess.Popen[bytes] | None = None
    deadline: float = 0.0
    journals: list[Path] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "producers" if self.action.startswith("produce") else "members"


class WorkerPool:
    def __init__(self, deployment: Deployment, directory: Path, rng: random.Random) -> None:
        self.deployment = deployment
        self.directory = directory
        self.rng = rng
        self.slots: list[Slot] = []
        self.crashes: list[str] = []
        self.overruns: list[str] = []
        self._logs: list[IO[bytes]] = []
        for sub in ("producers", "members", "workers"):
            (directory / sub).mkdir(parents=True, exist_ok=True)

    def command(self, action: str, spec: dict[str, Any], near_broker: int | None = None
                ) -> list[str]:
        return self.deployment.client_command(
            [sys.executable, "-m", "tests.longrun.worker", action, json.dumps(spec)],
            near_broker)

    def run(self, action: str, spec: dict[str, Any], timeout: float) -> None:
        """Run one worker to completion (topic setup, read-back); raise if it fails."""
        log = self.directory / "workers" / f"{action}.log"
        with log.open("ab") as out:
            result = subprocess.run(self.command(action, spec), cwd=REPO, stdout=out,
                                    stderr=subprocess.STDOUT, timeout=timeout)
        if result.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            raise AssertionError(f"worker {action} failed (exit {result.returncode}):\n{tail}")

    def spawn(self, name: str, action: str, spec: dict[str, Any],
              near_broker: int | None = None) -> subprocess.Popen[bytes]:
        log = (self.directory / "workers" / f"{name}.log").open("ab")
        self._logs.append(log)
        return subprocess.Popen(self.command(action, spec, near_broker), cwd=REPO,
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def add(self, slot: Slot) -> None:
        self.slots.append(slot)

    def tick(self, load_end: float) -> None:
        """Replace every finished incarnation (while the load lasts); kill overrunners."""
        now = time.monotonic()
        for slot in self.slots:
            if slot.process is not None:
                if slot.process.poll() is None:
                    if now > slot.deadline:
                        self._kill_overrun(slot)
                    continue
                self._reap(slot)
            remaining = load_end - now
            if remaining >= MIN_LIFETIME_S:
                self._start(slot, min(self.rng.uniform(*slot.lifetime_s), remaining))

    def drain(self) -> None:
        """Wait for every incarnation to finish on its own (killing overrunners)."""
        while any(slot.process is not None for slot in self.slots):
            now = time.monotonic()
            for slot in self.slots:
                if slot.process is None:
                    continue
                if slot.process.poll() is not None:
                    self._reap(slot)
                elif now > slot.deadline:
                    self._kill_overrun(slot)
            time.sleep(0.5)

    def stop_all(self) -> None:
        """Teardown: kill by PID whatever still runs (normal runs have drained already)."""
        for slot in self.slots:
            if slot.process is not None and slot.process.poll() is None:
                slot.process.kill()
                slot.process.wait(10)
            slot.process = None
        for log in self._logs:
            log.close()

    def totals(self) -> Counter[str]:
        """Counters summed over every journal's stats file (producers and members)."""
        totals: Counter[str] = Counter()
        for slot in self.slots:
            for journal in slot.journals:
                for key, value in read_stats(journal).items():
                    if isinstance(value, int):
                        totals[f"{slot.kind}.{key}"] += value
        return totals

    def alive(self) -> int:
        return sum(1 for s in self.slots if s.process is not None and s.process.poll() is None)

    def _start(self, slot: Slot, seconds: float) -> None:
        slot.incarnation += 1
        name = f"{slot.name}.{slot.incarnation}"
        journal = self.directory / slot.kind / f"{name}.journal"
        slot.journals.append(journal)
        spec = {**slot.spec, "name": name, "journal": str(journal), "seconds": seconds,
                "seed": self.rng.randrange(2**31)}
        slot.process = self.spawn(name, slot.action, spec, slot.near_broker)
        slot.deadline = time.monotonic() + seconds + OVERRUN_S

    def _reap(self, slot: Slot) -> None:
        assert slot.process is not None
        code = slot.process.wait()
        if code != 0:
            name = f"{slot.name}.{slot.incarnation}"
            self.crashes.append(f"{name} exited {code} (workers/{name}.log)")
        slot.process = None

    def _kill_overrun(self, slot: Slot) -> None:
        assert slot.process is not None
        self.overruns.append(f"{slot.name}.{slot.incarnation}")
        slot.process.kill()
        slot.process.wait(10)
        slot.process = None
