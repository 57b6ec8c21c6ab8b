"""Partition leader election rules (pure: state and live brokers in, new state out).

These are the rules of Kafka's ZK-mode controller, kept apart from ZooKeeper I/O so they
can be tested exhaustively:

* **New partition** — leader is the first *live* replica in assignment order (the
  preferred leader when it is up); ISR is every live replica; leader epoch 0. With no live
  replica the partition stays uninitialised until one registers.
* **Leader alive** — dead brokers leave the ISR; the leader epoch is bumped so followers
  and clients can tell the membership changed.
* **Leader dead** — the new leader is the first replica (assignment order) that is alive
  *and* in the ISR, so no committed message is lost; ISR drops the dead.
  If no ISR member is alive: with ``unclean.leader.election.enable`` the first live replica
  leads with ISR ``[it]`` (availability over durability — acknowledged writes may be lost);
  otherwise the partition goes offline (leader ``-1``) and the ISR keeps its last leader,
  so the partition comes back, cleanly, exactly when that broker does.

Every change bumps ``leader_epoch``. ISR shrink/expand driven by replication lag,
preferred-leader election and controlled shutdown add rules here in the next issue.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from odradek.cluster.model import NO_LEADER, PartitionState


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


def initial_leader_and_isr(replicas: Sequence[int], live: Set[int]) -> LeaderAndIsr | None:
    live_replicas = tuple(r for r in replicas if r in live)
    if not live_replicas:
        return None
    return LeaderAndIsr(live_replicas[0], 0, live_replicas)


def next_leader_and_isr(
    current: PartitionState, live: Set[int], *, unclean: bool = False
) -> LeaderAndIsr | None:
    """The state ``current`` should move to given the live brokers, or None if unchanged."""
    live_isr = tuple(r for r in current.isr if r in live)
    if current.leader != NO_LEADER and current.leader in live:
        if live_isr == current.isr:
            return None
        return LeaderAndIsr(current.leader, current.leader_epoch + 1, live_isr)
    clean = next((r for r in current.replicas if r in live and r in current.isr), None)
    if clean is not None:
        return LeaderAndIsr(clean, current.leader_epoch + 1, live_isr)
    if unclean:
        survivor = next((r for r in current.replicas if r in live), None)
        if survivor is not None:
            return LeaderAndIsr(survivor, current.leader_epoch + 1, (survivor,))
    if current.leader == NO_LEADER:
        return None  # already offline; wait for an ISR member to return
    last_isr = (current.leader,) if current.leader in current.isr else current.isr
    return LeaderAndIsr(NO_LEADER, current.leader_epoch + 1, last_isr)
