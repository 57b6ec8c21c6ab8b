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

* **Controlled shutdown** — a broker that asked to shut down is neither elected nor kept in
  an ISR: its partitions move to the first live ISR member in assignment order. A partition
  with no other ISR member keeps it as leader (Kafka reports it as "remaining"): going
  offline early would only turn a clean stop into an outage.
* **Preferred leader** — the first replica leads again when it is live and in the ISR.
* **Unclean election on request** (ElectLeaders type 1) — only for a partition without a
  live leader: the first live replica, ISR reduced to it.
* **Reassignment completion** — the first live ISR member of the *target* replicas leads
  (the current leader stays if it is one of them); replicas being removed leave the ISR.

Every change bumps ``leader_epoch``. ISR shrink/expand by replication lag is the leader's
job (:mod:`odradek.cluster.isr`); the controller only re-reads the result.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from odradek.cluster.model import NO_LEADER, PartitionRegistration


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


def is_unclean(current: PartitionRegistration, decided: LeaderAndIsr) -> bool:
    """Did ``decided`` hand leadership to a replica outside the ISR (Kafka's unclean
    election: records acknowledged by the old ISR may be lost)?"""
    return (decided.leader != NO_LEADER and decided.leader != current.leader
            and decided.leader not in current.isr)


def initial_leader_and_isr(replicas: Sequence[int], live: Set[int]) -> LeaderAndIsr | None:
    live_replicas = tuple(r for r in replicas if r in live)
    if not live_replicas:
        return None
    return LeaderAndIsr(live_replicas[0], 0, live_replicas)


def next_leader_and_isr(
    current: PartitionRegistration, live: Set[int], *, unclean: bool = False
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


def decide(
    current: PartitionRegistration,
    live: Set[int],
    shutting_down: Set[int] = frozenset(),
    *,
    unclean: bool = False,
) -> LeaderAndIsr | None:
    """The reconcile rule: :func:`next_leader_and_isr` with shutting-down brokers treated
    as gone, except that a partition is never taken offline only because its leader is
    shutting down (there is nobody to move it to, so it stays until the broker stops)."""
    if not shutting_down:
        return next_leader_and_isr(current, live, unclean=unclean)
    electable = live - shutting_down
    leader_live = current.leader in live
    decided = next_leader_and_isr(current, electable, unclean=unclean and not leader_live)
    if decided is not None and decided.leader == NO_LEADER and leader_live:
        isr = tuple(r for r in current.isr if r in live)
        if isr == current.isr:
            return None
        return LeaderAndIsr(current.leader, current.leader_epoch + 1, isr)
    return decided


def preferred_leader_and_isr(
    current: PartitionRegistration, live: Set[int], shutting_down: Set[int] = frozenset()
) -> LeaderAndIsr | None:
    """Leadership back to the first replica, or None if it leads already or cannot."""
    if not current.replicas or current.leader == current.replicas[0]:
        return None
    preferred = current.replicas[0]
    if preferred in live and preferred in current.isr and preferred not in shutting_down:
        return LeaderAndIsr(preferred, current.leader_epoch + 1, current.isr)
    return None


def unclean_leader_and_isr(
    current: PartitionRegistration, live: Set[int], shutting_down: Set[int] = frozenset()
) -> LeaderAndIsr | None:
    """ElectLeaders' UNCLEAN type: a clean choice if there is one, else any live replica."""
    electable = live - shutting_down
    return next_leader_and_isr(current, electable, unclean=True)


def reassignment_complete_leader_and_isr(
    current: PartitionRegistration, target: Sequence[int], live: Set[int]
) -> LeaderAndIsr | None:
    """The state that ends a reassignment to ``target``, or None while it cannot end yet
    (some target replica is not in the ISR, or no target replica can lead)."""
    if any(r not in current.isr for r in target):
        return None
    isr = tuple(r for r in current.isr if r in target)
    if current.leader in target and current.leader in live:
        leader = current.leader
    else:
        found = next((r for r in target if r in live and r in isr), None)
        if found is None:
            return None
        leader = found
    return LeaderAndIsr(leader, current.leader_epoch + 1, isr)
