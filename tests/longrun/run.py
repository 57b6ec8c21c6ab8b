"""One long run, soak or chaos: set up, load, inject faults, heal, read back, judge.

1. Create the topics (RF 3, min.insync.replicas 2) and start the ZooKeeper monitor.
2. Keep the producer and group-member slots filled until the load ends, while a fault
   thread runs the schedule; print a progress line every minute.
3. Stop the faults and undo any still in effect; let every worker finish (flush, commit,
   leave); wait, with a deadline, for every partition to be led with a full ISR.
4. Read every partition back from offset 0, read each group's committed offsets, take the
   final ZooKeeper state, and check every invariant (:mod:`tests.longrun.invariants`).

All of it is journaled in the evidence directory, which outlives the test.
"""

from __future__ import annotations

import random
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.longrun.cluster_state import StateFile
from tests.longrun.deployment import Deployment
from tests.longrun.evidence import load_evidence
from tests.longrun.faults import Faults
from tests.longrun.invariants import BatchWriter, ReplicaBatch, Verdict, Violation, check
from tests.longrun.replicas import read_replica
from tests.longrun.workload import Slot, WorkerPool

__all__ = ["LongRun", "Outcome", "RunPlan"]

Progress = Callable[[str], None]
FaultSchedule = Callable[[Faults], None]


@dataclass
class RunPlan:
    name: str
    seconds: float
    topics: list[dict[str, Any]]  # create-topics specs: name, partitions, replication, config
    producers: list[Slot]
    members: list[Slot]
    recovery_s: float = 180.0  # deadline for full ISRs after a fault and at the end
    max_ack_gap_s: float = 120.0
    readback_s: float = 1200.0
    notes: list[str] = field(default_factory=list)

    @property
    def topic_names(self) -> list[str]:
        return [t["name"] for t in self.topics]

    @property
    def groups(self) -> list[str]:
        return sorted({slot.spec["group"] for slot in self.members})


@dataclass
class Outcome:
    verdict: Verdict
    report: str


class LongRun:
    def __init__(self, plan: RunPlan, deployment: Deployment, directory: Path, seed: int,
                 progress: Progress) -> None:
        self.plan = plan
        self.deployment = deployment
        self.directory = directory
        self.seed = seed
        directory.mkdir(parents=True, exist_ok=True)
        self._emit = progress
        self.state = StateFile(directory / "state.json")
        self.stop_faults = threading.Event()
        self.faults = Faults(deployment, self.state, directory / "faults.jsonl",
                             set(plan.topic_names), self.stop_faults)
        self.pool = WorkerPool(deployment, directory, random.Random(seed + 2))
        self.fault_errors: list[str] = []
        self.replicas: dict[tuple[str, int], dict[int, list[ReplicaBatch]]] = {}
        self.writers: dict[tuple[str, int], list[BatchWriter]] = {}

    def execute(self, schedule: FaultSchedule) -> Outcome:
        size = len(self.deployment.brokers)
        monitor_stop = self.directory / "monitor.stop"
        self.pool.run("create-topics", {"bootstrap": self.deployment.bootstrap,
                                        "topics": self.plan.topics}, timeout=120)
        monitor = self.pool.spawn("monitor", "monitor", {
            "zk_connect": self.deployment.zookeeper_connect, "out": str(self.state.path),
            "history": str(self.directory / "state-history.jsonl"),
            "stop": str(monitor_stop), "seconds": self.plan.seconds + 3 * 3600})
        fault_thread: threading.Thread | None = None
        try:
            if self.state.wait_healthy(size, 120) is None:
                raise AssertionError(f"the new cluster never became healthy: {self._state()}")
            for slot in [*self.plan.producers, *self.plan.members]:
                self.pool.add(slot)
            load_start, started = time.time(), time.monotonic()
            load_end = started + self.plan.seconds
            fault_thread = threading.Thread(target=self._faults, args=(schedule,),
                                            name="faults", daemon=True)
            fault_thread.start()
            next_progress = started + 60
            while time.monotonic() < load_end:
                self.pool.tick(load_end)
                self.faults.watch()
                if time.monotonic() >= next_progress:
                    self._report_progress(started)
                    next_progress += 60
                time.sleep(0.5)
            load_stop = time.time()
            self.progress(f"[{self.plan.name}] load over after {self.plan.seconds:.0f}s; "
                          "healing and draining")
            self.stop_faults.set()
            fault_thread.join(180)
            self.faults.heal_all()
            self.pool.drain()
            final_recovery = self.state.wait_healthy(size, self.plan.recovery_s)
            if final_recovery is None:
                self.faults.unrecovered.append(
                    f"after the run: not healthy {self.plan.recovery_s:.0f}s after the heal "
                    f"({self._state()})")
            shutil.copyfile(self.state.path, self.directory / "state.final.json")
            self.pool.run("read-back", {"bootstrap": self.deployment.bootstrap,
                                        "topics": self.plan.topic_names,
                                        "journal": str(self.directory / "readback.journal"),
                                        "seconds": self.plan.readback_s},
                          timeout=self.plan.readback_s + 120)
            self.replicas = self._read_replicas()
            self.pool.run("committed", {"bootstrap": self.deployment.bootstrap,
                                        "topics": self.plan.topic_names,
                                        "groups": self.plan.groups,
                                        "out": str(self.directory / "committed.json")},
                          timeout=300)
        finally:
            self.stop_faults.set()
            if fault_thread is not None:
                fault_thread.join(180)
            self.faults.heal_all()
            self.pool.stop_all()
            monitor_stop.touch()
            try:
                monitor.wait(30)
            except Exception:
                monitor.kill()
                monitor.wait(10)
        return self._judge((load_start, load_stop), final_recovery)

    def progress(self, line: str) -> None:
        """A line to the terminal and to ``progress.log``."""
        self._emit(line)
        with (self.directory / "progress.log").open("a") as out:
            out.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    def _faults(self, schedule: FaultSchedule) -> None:
        try:
            schedule(self.faults)
        except Exception as exc:  # reported as a failure of the run, with the traceback
            import traceback

            self.fault_errors.append("".join(traceback.format_exception(exc)))

    def _judge(self, load_window: tuple[float, float], final_recovery: float | None) -> Outcome:
        evidence, counts = load_evidence(self.directory, load_window)
        evidence.unrecovered = list(self.faults.unrecovered)
        evidence.replicas = self.replicas
        evidence.writers = self.writers
        verdict = check(evidence, max_ack_gap_s=self.plan.max_ack_gap_s)
        totals = self.pool.totals()
        recoveries = self.faults.recovery_times
        lines = [
            f"[{self.plan.name}] seed {self.seed}, load {self.plan.seconds:.0f}s, "
            f"evidence in {self.directory}",
            *[f"  {note}" for note in self.plan.notes],
            f"  produced: sent {totals['producers.sent']}, acked {len(evidence.acks)}, "
            f"failed {counts['produce.failed']}, incarnations "
            f"{sum(s.incarnation for s in self.plan.producers)}",
            f"  consumed: {len(evidence.consumed)} records by "
            f"{sum(s.incarnation for s in self.plan.members)} member incarnations "
            f"({counts['members.confluent']} librdkafka, {counts['members.odradek']} odradek), "
            f"{counts['assignments']} partition assignments, {len(evidence.commits)} commits "
            f"acked, {counts['commits.failed']} failed, {counts['consumed.unowned']} "
            "records for unowned partitions",
            f"  faults: {dict(sorted(self.faults.counts.items()))}",
            f"  recovery to full ISRs: {len(recoveries)} waits, max "
            f"{max(recoveries, default=0):.1f}s; final "
            + (f"{final_recovery:.1f}s" if final_recovery is not None else "NOT REACHED"),
            verdict.summary(),
        ]
        problems = [*self.fault_errors,
                    *[f"crash: {c}" for c in self.faults.crashes],
                    *[f"worker crashed: {c}" for c in self.pool.crashes],
                    *[f"worker overran and was killed: {o}" for o in self.pool.overruns]]
        lines += [f"  PROBLEM {p}" for p in problems]
        report = "\n".join(lines)
        (self.directory / "report.txt").write_text(report + "\n")
        if problems:
            verdict.violations.append(_problems(problems))
        return Outcome(verdict, report)

    def _read_replicas(self) -> dict[tuple[str, int], dict[int, list[ReplicaBatch]]]:
        """Each data partition's batches on each of its replicas (segment files on disk;
        the load is over, so nothing appends to them any more), and the writers of the
        leader's batches in ``self.writers``."""
        state = self.state.read()
        assert state is not None
        topics = set(self.plan.topic_names)
        out: dict[tuple[str, int], dict[int, list[ReplicaBatch]]] = {}
        for topic, partition, leader, _isr, replicas in state.partitions:
            if topic not in topics:
                continue
            out[(topic, partition)] = {}
            for broker in replicas:
                batches, writers = read_replica(Path(self.deployment.brokers[broker].overrides[
                    "log.dirs"]), topic, partition)
                out[(topic, partition)][broker] = batches
                if broker == leader or (topic, partition) not in self.writers:
                    self.writers[(topic, partition)] = writers
        return out

    def _report_progress(self, started: float) -> None:
        totals = self.pool.totals()
        elapsed = (time.monotonic() - started) / 60
        self.progress(
            f"[{self.plan.name} {elapsed:.0f}/{self.plan.seconds / 60:.0f} min] "
            f"sent {totals['producers.sent']}, acked {totals['producers.acked']}, "
            f"failed {totals['producers.failed']}, consumed {totals['members.consumed']}, "
            f"commits {totals['members.commits']}, workers {self.pool.alive()}, "
            f"faults {dict(sorted(self.faults.counts.items()))}; {self._state()}")

    def _state(self) -> str:
        state = self.state.read()
        return state.describe() if state else "no ZooKeeper state yet"


def _problems(problems: list[str]) -> Violation:
    return Violation("run-problems", len(problems), tuple(p[:500] for p in problems[:5]))
