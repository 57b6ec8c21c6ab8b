"""A Rebalance resource's life: what to do next, from its phase and the user's annotation.

As Strimzi's KafkaRebalance: a proposal is computed and shown, nothing moves until a person
approves it, and a running rebalance can be stopped. The annotation
``odradek.dev/rebalance`` carries the person's word (``approve``, ``stop``, ``refresh``) and
is removed once acted on. The table below is the whole rule; the handler only carries it out.

======================  =========================  ===========================
phase                   annotation / spec change   action
======================  =========================  ===========================
(none), or spec changed  —                          PROPOSE
ProposalReady           approve                    EXECUTE (re-checks the plan)
ProposalReady           refresh                    PROPOSE
Rebalancing             stop                       STOP
Rebalancing             — (spec changes wait)      WATCH
Ready, Stopped,         refresh                    PROPOSE
NotReady
======================  =========================  ===========================

Any other pair does nothing: an ``approve`` on a finished rebalance is dropped with a
warning rather than replaying an old plan.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ANNOTATION", "Action", "Command", "Phase", "next_action", "parse_command"]

ANNOTATION = "odradek.dev/rebalance"


class Phase(StrEnum):
    PROPOSAL_READY = "ProposalReady"
    REBALANCING = "Rebalancing"
    READY = "Ready"
    STOPPED = "Stopped"
    NOT_READY = "NotReady"


class Command(StrEnum):
    APPROVE = "approve"
    STOP = "stop"
    REFRESH = "refresh"


class Action(StrEnum):
    PROPOSE = "propose"
    EXECUTE = "execute"
    WATCH = "watch"
    STOP = "stop"
    NOTHING = "nothing"


def parse_command(value: str | None) -> Command | None:
    """The annotation's command; None when unset. Raises ValueError for another value."""
    if value is None:
        return None
    try:
        return Command(value.strip().lower())
    except ValueError:
        raise ValueError(f"annotation {ANNOTATION}={value!r}: use one of "
                         f"{', '.join(Command)}") from None


def next_action(phase: Phase | None, command: Command | None, spec_changed: bool) -> Action:
    if phase is Phase.REBALANCING:
        return Action.STOP if command is Command.STOP else Action.WATCH
    if phase is None or spec_changed or command is Command.REFRESH:
        return Action.PROPOSE
    if phase is Phase.PROPOSAL_READY and command is Command.APPROVE:
        return Action.EXECUTE
    return Action.NOTHING
