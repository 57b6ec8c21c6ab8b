"""Rebalance: a goal-based proposal, executed only when a person approves it.

The Strimzi counterpart is KafkaRebalance with Cruise Control: ``kubectl apply`` a Rebalance,
read the proposal in its status (moves, data to copy, balance before and after), then
``kubectl annotate rebalance NAME odradek.dev/rebalance=approve``. While the moves run the
resource is ``Rebalancing``, checked every 10 s (the change handler requeues itself, and
:func:`watch_rebalance` covers a running rebalance no handler is working on);
``odradek.dev/rebalance=stop`` cancels the moves still running; ``refresh`` computes a new
proposal. The rules are :mod:`..decisions.rebalance_phase` (what next) and
:mod:`..decisions.rebalance` (the plan); this module reads and writes the cluster and the
status.

An approval re-plans first: if the cluster changed since the proposal was shown, the new
proposal is shown instead and must be approved again — an old plan is never executed blind.
Deleting a Rebalance does not stop moves already started (annotate ``stop`` first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from ..conditions import READY, RECONCILING, Condition
from ..decisions.placement import Assignment
from ..decisions.rebalance import Goal, Mode, PlanError, Proposal, propose
from ..decisions.rebalance_phase import ANNOTATION, Action, Phase, next_action, parse_command
from ..errors import PermanentReconcileError
from ..kafka.rebalance import (
    cancel_moves,
    clear_throttles,
    observe_model,
    running_moves,
    start_moves,
)
from ..kafka.session import admin_session
from ..manifests.common import API_GROUP, CRD_VERSION
from ..runtime import kube
from ..spec import RebalanceSpec
from .common import ReconcileResult, reconcile_guarded, resolve_access, sync_time

__all__ = ["POLL_INTERVAL_S", "proposal_status", "stored_moves", "watch_rebalance"]

GROUP, VERSION, PLURAL = API_GROUP, CRD_VERSION, "rebalances"
POLL_INTERVAL_S = 10.0



def proposal_status(proposal: Proposal, current: Assignment
                    ) -> dict[str, Any]:
    """The proposal as status shows it: totals, balance before and after, every move."""
    return {
        "partitionsToMove": len(proposal.moves),
        "replicaMoves": proposal.replica_moves,
        "leaderMoves": proposal.leader_moves,
        "dataToMoveBytes": proposal.data_to_move_bytes,
        "before": proposal.before.summary(),
        "after": proposal.after.summary(),
        "unmetGoals": [str(g) for g in proposal.unmet],
        "moves": [{"topic": t, "partition": p, "from": list(current[(t, p)]), "to": list(r)}
                  for (t, p), r in sorted(proposal.moves.items())],
    }


def stored_moves(status: Mapping[str, Any]) -> tuple[Assignment, Assignment]:
    """(new replicas, replicas before) of the proposal in ``status``."""
    rows = ((status.get("proposal") or {}).get("moves")) or []
    return ({(str(m["topic"]), int(m["partition"])): tuple(m["to"]) for m in rows},
            {(str(m["topic"]), int(m["partition"])): tuple(m["from"]) for m in rows})


def _phase(status: Mapping[str, Any]) -> Phase | None:
    try:
        return Phase(str(status.get("state")))
    except ValueError:
        return None


def _result(phase: Phase, message: str, status: Mapping[str, Any] | None = None
            ) -> ReconcileResult:
    result = ReconcileResult({"state": str(phase), **(status or {}),
                              "lastSyncTime": sync_time()})
    result.conditions += [Condition(READY, phase is Phase.READY, str(phase), message),
                          Condition(RECONCILING, phase is Phase.REBALANCING, str(phase),
                                    message if phase is Phase.REBALANCING else "")]
    return result


async def _reconcile(body: kopf.Body, namespace: str, name: str) -> ReconcileResult:
    spec = RebalanceSpec.parse(body.spec)
    status = dict(body.get("status") or {})
    try:
        command = parse_command((body.metadata.get("annotations") or {}).get(ANNOTATION))
    except ValueError as exc:
        raise PermanentReconcileError(str(exc), reason="InvalidAnnotation") from None
    generation = body.metadata.get("generation")
    action = next_action(_phase(status), command,
                         spec_changed=status.get("observedGeneration") != generation)
    if action is Action.NOTHING:
        result = ReconcileResult({})
        if command is not None:
            result.annotations[ANNOTATION] = None
            result.event("AnnotationIgnored", f"{ANNOTATION}={command} does nothing in state "
                                              f"{status.get('state')}", warning=True)
        return result
    moves, before = stored_moves(status)
    access = await resolve_access(kube(), namespace, spec.cluster)
    async with admin_session(access.bootstrap_servers, security=access.settings) as admin:
        if action is Action.WATCH:
            running = await running_moves(admin, moves)
            if running:
                result = _result(Phase.REBALANCING, f"{len(running)} of {len(moves)} "
                                                    f"partition(s) still moving")
                result.requeue_after, result.requeue_reason = POLL_INTERVAL_S, "moving"
                return result
            await clear_throttles(admin, moves, before)
            result = _result(Phase.READY, f"moved {len(moves)} partition(s)")
            result.event("RebalanceComplete", f"moved {len(moves)} partition(s)")
            return result
        if action is Action.STOP:
            await cancel_moves(admin, moves)
            await clear_throttles(admin, moves, before)
            result = _result(Phase.STOPPED, "stopped: moves still running were cancelled")
            result.annotations[ANNOTATION] = None
            result.event("RebalanceStopped", "running moves cancelled", warning=True)
            return result
        model = await observe_model(admin)
        try:
            proposal = propose(model, mode=Mode(spec.mode), brokers=spec.brokers,
                               goals=[Goal(g) for g in spec.goals])
        except PlanError as exc:
            result = _result(Phase.NOT_READY, str(exc), {"proposal": None})
            result.annotations[ANNOTATION] = None
            result.event("ProposalFailed", str(exc), warning=True)
            return result
        shown = proposal_status(proposal, model.assignment)
        result = _result(Phase.PROPOSAL_READY, "", {"proposal": shown})
        result.annotations[ANNOTATION] = None
        if action is Action.EXECUTE and proposal.moves != moves:
            result.conditions[0] = Condition(READY, False, str(Phase.PROPOSAL_READY),
                                             "the cluster changed since the proposal: "
                                             "review the new one and approve again")
            result.event("ProposalChanged", "not executed: the cluster changed since the "
                                            "proposal was made; approve the new one",
                         warning=True)
            return result
        if action is Action.EXECUTE:
            if not moves:
                return _result(Phase.READY, "nothing to move", {"proposal": shown})
            await start_moves(admin, moves, before, spec.replication_throttle)
            result = _result(Phase.REBALANCING, f"moving {len(moves)} partition(s)",
                             {"proposal": shown})
            result.annotations[ANNOTATION] = None
            result.event("RebalanceStarted", f"moving {len(moves)} partition(s), "
                                             f"{proposal.data_to_move_bytes} bytes")
            result.requeue_after, result.requeue_reason = POLL_INTERVAL_S, "moving"
            return result
        message = (f"{len(proposal.moves)} partition(s) to move, "
                   f"{proposal.data_to_move_bytes} bytes; approve with "
                   f"kubectl annotate rebalance {name} {ANNOTATION}=approve")
        if not proposal.moves:
            message = "balanced: nothing to move"
        result.conditions[0] = Condition(READY, False, str(Phase.PROPOSAL_READY), message)
        result.event("ProposalReady", message)
        return result


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
async def reconcile_rebalance(**kwargs: Any) -> None:
    await reconcile_guarded("Rebalance", kwargs, _reconcile)


@kopf.timer(GROUP, VERSION, PLURAL, interval=POLL_INTERVAL_S, initial_delay=POLL_INTERVAL_S,
            idle=POLL_INTERVAL_S)
async def watch_rebalance(**kwargs: Any) -> None:
    """Advance a Rebalance whose moves are running (Ready once they end) when no change
    handler is working on it: the change handler's requeue belongs to one change, and a
    later one (the command annotation removed, a spec edit that must wait) or kopf giving
    up its retries ends it. ``idle``: never while changes are still arriving. Any other
    phase waits for a person or a spec change."""
    if _phase(kwargs["body"].get("status") or {}) is Phase.REBALANCING:
        await reconcile_guarded("Rebalance", kwargs, _reconcile)
