"""Partition reassignment as Kafka's ZK-mode controller does it (KIP-455), as pure values.

A partition being reassigned carries three lists in its topic znode::

    "partitions":        {"0": [4, 5, 1, 2]}   # RS: target first, then the rest of the original
    "adding_replicas":   {"0": [4, 5]}         # AR = RS - original
    "removing_replicas": {"0": [1, 2]}         # RR = RS - target

so the *target* is ``RS - RR`` (in the requested order, since it is RS's prefix) and the
*original* is ``RS - AR``. Keeping the whole reassignment in the topic znode is what makes
the controller stateless: a new controller re-reads it and carries on.

The steps (``Controller`` applies them; this module only computes):

1. **Start** — RS becomes ``distinct(target + original)``; the leader epoch is bumped so
   every broker re-reads the partition; the adding replicas start as followers and copy the
   data by ordinary replication. A new request for a partition already moving is computed
   from the *original* replicas, and replicas of the superseded request that are in neither
   list leave at once (Kafka's step A3) — which is also how cancellation works: it is a
   reassignment back to the original replicas.
2. **Wait** until every target replica is in the ISR (the leader adds followers that caught
   up; the controller re-reads on ``/isr_change_notification`` and state-znode watches).
3. **Complete** — a target replica leads (the current leader if it is one), the epoch is
   bumped, removed replicas leave the ISR, RS becomes the target and AR/RR are cleared —
   state and topic znodes in one ZooKeeper transaction. Brokers no longer listed as replicas
   delete their copies of the log.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from odradek.protocol.errors import InvalidReplicaAssignment


def _distinct(replicas: Sequence[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(replicas))


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """One partition's replica lists as the topic znode stores them."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """The assignment that starts moving to ``target`` (Kafka's ``reassignTo``)."""
        original = self.original
        full = _distinct((*target, *original))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in original),
            tuple(r for r in full if r not in target),
        )

    def cancelled(self) -> ReplicaAssignment:
        """Back to the original replicas; what was being added is dropped."""
        return ReplicaAssignment(self.original)

    def completed(self) -> ReplicaAssignment:
        return ReplicaAssignment(self.target)

    def unneeded_by(self, successor: ReplicaAssignment) -> tuple[int, ...]:
        """Replicas of this assignment that ``successor`` no longer lists at all."""
        return tuple(r for r in self.replicas if r not in successor.replicas)


def validate_target(target: Sequence[int], registered: Set[int]) -> tuple[int, ...]:
    """Kafka's checks on a requested replica list (INVALID_REPLICA_ASSIGNMENT)."""
    replicas = tuple(int(r) for r in target)
    if not replicas:
        raise InvalidReplicaAssignment("Empty replica list specified in partition reassignment.")
    if len(set(replicas)) != len(replicas):
        raise InvalidReplicaAssignment(
            f"Duplicate replica ids in partition reassignment replica list: {list(replicas)}"
        )
    if any(r < 0 for r in replicas):
        raise InvalidReplicaAssignment(f"Invalid broker id in replica list: {list(replicas)}")
    missing = [r for r in replicas if r not in registered]
    if missing:
        raise InvalidReplicaAssignment(
            f"Replica assignment has brokers that are not alive. Replica list: "
            f"{list(replicas)}, live broker list: {sorted(registered)}"
        )
    return replicas
