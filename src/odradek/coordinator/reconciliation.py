"""How one member of a consumer group moves from its current assignment towards its target
(Kafka's ``CurrentAssignmentBuilder``) — everything that decides member states lives here.

::

    STABLE ──target epoch moved, member must give partitions up──▶ UNREVOKED_PARTITIONS
      ▲  ▲                                                              │ heartbeat shows the
      │  │                                                              │ partitions revoked
      │  └── every target partition is free and owned ◀─────────────────┤
      │                                                                 ▼
      └──────── the other members released them ◀──────────── UNRELEASED_PARTITIONS

The rules keep the one invariant the protocol exists for: **a partition is never owned by
two members at once**. A member keeps its epoch while it still owns partitions it must give
up (``partitions_pending_revocation``); it reaches the target epoch only once it has
acknowledged the revocation (its heartbeat's owned partitions no longer include them).
A partition of the target that another member still holds (assigned or pending revocation)
is withheld until that member releases it, which the ``partition_owner`` callback reports.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, replace

from odradek.types import TopicPartition

__all__ = ["MemberAssignment", "MemberState", "next_assignment"]

Partitions = frozenset[TopicPartition]


class MemberState(enum.Enum):
    """Kafka's names (ConsumerGroupDescribe does not send them, but its tools print them)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """A member's epochs and partitions; replaced as a whole at every step."""

    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Partitions = frozenset()
    pending_revocation: Partitions = frozenset()

    @property
    def owned(self) -> Partitions:
        """Everything the member may still be consuming (what no one else may get)."""
        return self.assigned | self.pending_revocation


def next_assignment(
    current: MemberAssignment,
    target_epoch: int,
    target: Partitions,
    owned: Partitions | None,
    partition_owner: Callable[[TopicPartition], str | None],
    member_id: str,
) -> MemberAssignment:
    """The member's next step given the group's target epoch and its target partitions.

    ``owned`` is what the member's heartbeat says it owns (None: it did not say, which
    counts as still owning everything). ``partition_owner`` names the member that holds a
    partition now, or None.
    """
    state = current.state
    if state is MemberState.UNREVOKED_PARTITIONS:
        if owned is None or owned & current.pending_revocation:
            return current  # still consuming what it must give up: wait
        current = replace(current, pending_revocation=frozenset())  # released
    elif state is MemberState.STABLE and current.member_epoch == target_epoch:
        return current
    return _compute(current, target_epoch, target, owned, partition_owner, member_id)


def _compute(
    current: MemberAssignment,
    target_epoch: int,
    target: Partitions,
    owned: Partitions | None,
    partition_owner: Callable[[TopicPartition], str | None],
    member_id: str,
) -> MemberAssignment:
    kept = current.assigned & target
    revoke = current.assigned - target
    wanted = target - kept
    free = frozenset(tp for tp in wanted if partition_owner(tp) in (None, member_id))
    unreleased = wanted - free
    if revoke and (owned is None or owned & revoke):
        return MemberAssignment(
            MemberState.UNREVOKED_PARTITIONS, current.member_epoch,
            current.previous_member_epoch, kept, revoke,
        )
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    previous = (current.member_epoch if current.member_epoch != target_epoch
                else current.previous_member_epoch)
    return MemberAssignment(state, target_epoch, previous, kept | free, frozenset())
