"""May this broker be restarted now, and in which order do outdated brokers roll?

A restart takes the broker out of every ISR it is in. A partition whose ISR would then hold
fewer than ``min.insync.replicas`` members refuses acks=all writes (NOT_ENOUGH_REPLICAS), so
the roll waits while any such partition exists — typically because the broker restarted just
before has not caught up yet.

One exception: a partition configured so that no restart can keep it writable
(``min.insync.replicas >= replication factor``, e.g. RF 1) is reported, not waited for; waiting
would block the roll forever and the restart costs it no more than any other restart would.

The active controller rolls last: every restart of the controller moves the controller role,
and a controller that moves once per roll instead of once per broker keeps metadata churn
(leader elections, UpdateMetadata fan-out) to a single round.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .state import ClusterState, PartitionState

__all__ = ["RestartVerdict", "restart_blockers", "restart_order", "restart_verdict"]


@dataclass(frozen=True)
class RestartVerdict:
    broker: int
    allowed: bool
    blocking: tuple[PartitionState, ...]  # partitions that would go below min ISR
    unavoidable: tuple[PartitionState, ...]  # min ISR >= RF: unavailable in any restart

    def reason(self, limit: int = 5) -> str:
        if self.allowed:
            return f"broker {self.broker} can restart"
        shown = ", ".join(f"{p.topic}-{p.partition} (isr {list(p.isr)})"
                          for p in self.blocking[:limit])
        more = f" and {len(self.blocking) - limit} more" if len(self.blocking) > limit else ""
        return (f"restarting broker {self.broker} would leave {len(self.blocking)} partition(s)"
                f" below min.insync.replicas: {shown}{more}")


def restart_blockers(state: ClusterState, broker: int
                     ) -> tuple[list[PartitionState], list[PartitionState]]:
    """(blocking, unavoidable) partitions for a restart of ``broker``."""
    blocking: list[PartitionState] = []
    unavoidable: list[PartitionState] = []
    for part in state.partitions:
        if broker not in part.isr:
            continue  # not in the ISR: its restart changes no ISR
        min_isr = state.min_isr(part.topic)
        if min_isr >= len(part.replicas):
            unavoidable.append(part)
            continue
        remaining = len([r for r in part.isr if r != broker and r in state.brokers])
        if remaining < min_isr:
            blocking.append(part)
    return blocking, unavoidable


def restart_verdict(state: ClusterState, broker: int) -> RestartVerdict:
    """Whether ``broker`` may restart now. A broker that is not even registered (crashed,
    not started) may always be restarted: it holds no ISR membership to lose."""
    if broker not in state.brokers:
        return RestartVerdict(broker, True, (), ())
    blocking, unavoidable = restart_blockers(state, broker)
    return RestartVerdict(broker, not blocking, tuple(blocking), tuple(unavoidable))


def restart_order(outdated: Iterable[int], controller: int) -> list[int]:
    """Ascending broker ids, the active controller last."""
    ids = sorted(set(outdated))
    if controller in ids:
        ids.remove(controller)
        ids.append(controller)
    return ids
