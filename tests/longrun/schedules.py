"""When and what to break: the soak's periodic kill -9 and the chaos run's seeded schedule.

A chaos schedule is drawn entirely from its seed before the run starts (kinds, roles,
durations, gaps), so the same seed replays the same sequence; which broker holds a role
(the controller, a leader) is looked up when the fault is injected, with a separate random
stream, and journaled.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tests.longrun.faults import Faults

__all__ = ["PlannedFault", "chaos_plan", "run_chaos", "run_periodic_kills"]

ROLES = ("controller", "leader", "any")


def run_periodic_kills(faults: Faults, seed: int, every_s: float, recovery_s: float) -> None:
    """kill -9 a broker every ``every_s`` (±25 %): the controller, a leader or any broker,
    restarted after up to 5 s; then wait for full ISRs before the next one."""
    rng, victims = random.Random(seed), random.Random(seed + 1)
    while not faults.stop.wait(rng.uniform(0.75 * every_s, 1.25 * every_s)):
        role = rng.choice(ROLES)
        broker = faults.pick(victims, role)
        faults.kill_and_restart(broker, rng.uniform(0, 5), role)
        faults.await_recovery(recovery_s, f"kill -9 of broker {broker} ({role})")


@dataclass(frozen=True)
class PlannedFault:
    kind: str  # kill-9, pause-broker, pause-zookeeper, partition
    role: str
    seconds: float  # how long the fault lasts (kill-9: time down)
    await_recovery: bool  # wait for full ISRs before the gap, or pile on
    gap_s: float  # quiet time before the next fault

    def __str__(self) -> str:
        target = "" if self.kind == "pause-zookeeper" else f" {self.role}"
        return f"{self.kind}{target} {self.seconds:.1f}s, gap {self.gap_s:.1f}s"


def chaos_plan(seed: int, seconds: float, session_s: float) -> list[PlannedFault]:
    """Faults filling ``seconds``: pauses both shorter than the ZooKeeper session timeout
    (nothing may move) and beyond it (leadership must move, the paused side must fence
    itself on waking); partitions from a fraction of the session to three of them."""
    rng = random.Random(seed)
    kinds = ["kill-9", "pause-broker", "pause-broker", "pause-zookeeper", "partition"]
    weights = [3, 2, 2, 2, 3]
    plan: list[PlannedFault] = []
    elapsed = 0.0
    while elapsed < seconds:
        kind = rng.choices(kinds, weights)[0]
        role = rng.choice(ROLES)
        long_pause = rng.random() < 0.5
        if kind == "kill-9":
            length = rng.uniform(0, 5)
        elif kind == "partition":
            length = rng.uniform(0.3 * session_s, 3 * session_s)
        elif long_pause:
            length = rng.uniform(1.5 * session_s, 2.5 * session_s)
        else:
            length = rng.uniform(0.1 * session_s, 0.5 * session_s)
        fault = PlannedFault(kind, role, length, rng.random() < 0.5, rng.uniform(2, 15))
        plan.append(fault)
        elapsed += fault.seconds + fault.gap_s + (20 if fault.await_recovery else 5)
    return plan


def run_chaos(faults: Faults, plan: list[PlannedFault], seed: int, recovery_s: float) -> None:
    victims = random.Random(seed + 1)
    for fault in plan:
        if faults.stop.is_set():
            return
        broker = faults.pick(victims, fault.role)
        if fault.kind == "kill-9":
            faults.kill_and_restart(broker, fault.seconds, fault.role)
        elif fault.kind == "pause-broker":
            faults.pause_broker(broker, fault.seconds, fault.role)
        elif fault.kind == "pause-zookeeper":
            faults.pause_zookeeper(fault.seconds)
        else:
            faults.partition(broker, fault.seconds, fault.role)
        if fault.await_recovery:
            faults.await_recovery(recovery_s, f"{fault} (broker {broker})")
        if faults.stop.wait(fault.gap_s):
            return
