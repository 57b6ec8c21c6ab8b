"""The classic group states and which transitions are legal — everything about the state
machine's *shape* lives here; :mod:`odradek.coordinator.group` decides *when* to move.

::

    Empty ──join──▶ PreparingRebalance ──all joined / rebalance timeout──▶ CompletingRebalance
      ▲                  ▲    │ (nobody left)                                   │ leader's SyncGroup
      │                  │    └──────────────────────────▶ Empty                 ▼
      │                  └──── join / leave / expiry ─────────────────────── Stable
      └─ (every state) ──▶ Dead  (deleted, expired, or unloaded)

Kafka's names are part of the protocol (DescribeGroups and ListGroups send them as strings),
so the enum values are exactly those strings.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["VALID_PREVIOUS_STATES", "GroupState", "IllegalStateTransition"]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS_STATES: Final[dict[GroupState, frozenset[GroupState]]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(AssertionError):
    """A bug: the coordinator tried a transition the table above forbids."""
