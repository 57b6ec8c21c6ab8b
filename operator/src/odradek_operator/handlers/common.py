"""What every handler does around its reconcile: one at a time per object, metrics, typed
errors turned into conditions, Events and kopf's retry policy.

A reconcile function returns the status it wants (plus conditions); it raises
:class:`~..errors.TemporaryReconcileError` to come back later and
:class:`~..errors.PermanentReconcileError` to stop until the spec changes. Anything else is a
bug: it is logged, counted, reported as a condition and retried with backoff by kopf — the
operator never crash-loops on one bad object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import kopf

from odradek.metrics.operator import ReconcileOutcome

from ..conditions import READY, RECONCILING, Condition, merge_conditions, now_rfc3339
from ..errors import (
    ClusterUnreachable,
    InvalidSpec,
    PermanentReconcileError,
    TemporaryReconcileError,
    backoff_delay,
)
from ..kafka.access import ClusterAccess
from ..kube.api import KubeApi
from ..manifests.common import ClusterNames
from ..metrics import observe_reconcile
from ..spec import BrokerClusterSpec, ClusterRef
from .secrets import load_cluster_secrets

__all__ = ["MANAGED_ANNOTATION", "ReconcileResult", "is_managed", "reconcile_guarded",
           "resolve_access"]

MANAGED_ANNOTATION = "odradek.dev/managed"


class ReconcileResult:
    """What a reconcile wants written: status fields, conditions, Events to post."""

    def __init__(self, status: Mapping[str, Any] | None = None,
                 conditions: list[Condition] | None = None) -> None:
        self.status: dict[str, Any] = dict(status or {})
        self.conditions: list[Condition] = list(conditions or [])
        self.events: list[tuple[str, str, str]] = []  # (type Normal|Warning, reason, message)
        #: Annotations to set (None: remove), e.g. a command annotation once acted on.
        self.annotations: dict[str, str | None] = {}
        #: Set when work is still under way: come back after this many seconds.
        self.requeue_after: float | None = None
        self.requeue_reason = ""

    def event(self, reason: str, message: str, *, warning: bool = False) -> None:
        self.events.append(("Warning" if warning else "Normal", reason, message))


def is_managed(meta: Mapping[str, Any]) -> bool:
    return (meta.get("annotations") or {}).get(MANAGED_ANNOTATION, "true").lower() != "false"


def _lock(memo: Any) -> asyncio.Lock:
    lock = getattr(memo, "reconcile_lock", None)
    if lock is None:
        lock = asyncio.Lock()
        memo.reconcile_lock = lock
    return lock


async def reconcile_guarded(kind: str, kwargs: Mapping[str, Any],
                            reconcile: Callable[[kopf.Body, str, str],
                                                Awaitable[ReconcileResult]]) -> None:
    """Run ``reconcile`` for one object (never two at once: timers and change handlers
    share the lock), write its status and conditions, translate failures."""
    body: kopf.Body = kwargs["body"]
    patch, memo, logger = kwargs["patch"], kwargs["memo"], kwargs["logger"]
    retry = int(kwargs.get("retry") or 0)  # timers get no retry count: start from 0
    namespace, name = str(kwargs.get("namespace") or ""), str(kwargs["name"])
    generation = body.get("metadata", {}).get("generation")
    current = (body.get("status") or {}).get("conditions")
    async with _lock(memo):
        with observe_reconcile(kind) as record:
            try:
                result = await reconcile(body, namespace, name)
            except TemporaryReconcileError as exc:
                record.result, record.reason = ReconcileOutcome.TEMPORARY_ERROR, exc.reason
                delay = backoff_delay(retry) if isinstance(exc, ClusterUnreachable) \
                    else (exc.delay or 10)
                logger.warning(f"{kind} waits ({exc.reason}): {exc}; retry in {delay:.0f}s")
                patch.status["conditions"] = merge_conditions(current, [
                    Condition(READY, False, exc.reason, str(exc)),
                    Condition(RECONCILING, True, exc.reason, str(exc))], generation)
                if isinstance(exc, ClusterUnreachable) and retry == 0:
                    kopf.warn(body, reason=exc.reason, message=str(exc))
                raise kopf.TemporaryError(str(exc), delay=delay) from exc
            except PermanentReconcileError as exc:
                record.result, record.reason = ReconcileOutcome.PERMANENT_ERROR, exc.reason
                logger.error(f"{kind} cannot be reconciled ({exc.reason}): {exc}")
                patch.status["conditions"] = merge_conditions(current, [
                    Condition(READY, False, exc.reason, str(exc)),
                    Condition(RECONCILING, False, exc.reason, str(exc))], generation)
                patch.status["observedGeneration"] = generation
                kopf.warn(body, reason=exc.reason, message=str(exc))
                raise
            except kopf.TemporaryError:
                raise
            except Exception as exc:
                record.reason = type(exc).__name__
                logger.exception(f"{kind} reconcile failed unexpectedly")
                patch.status["conditions"] = merge_conditions(current, [
                    Condition(READY, False, "ReconcileError", f"{type(exc).__name__}: {exc}")],
                    generation)
                raise kopf.TemporaryError(f"{type(exc).__name__}: {exc}",
                                          delay=backoff_delay(retry)) from exc
        for key, value in result.status.items():
            patch.status[key] = value
        patch.status["conditions"] = merge_conditions(current, result.conditions, generation)
        patch.status["observedGeneration"] = generation
        for key, annotation in result.annotations.items():
            patch.metadata.annotations[key] = annotation
        for event_type, reason, message in result.events:
            (kopf.warn if event_type == "Warning" else kopf.info)(body, reason=reason,
                                                                    message=message)
        if result.requeue_after is not None:
            raise kopf.TemporaryError(result.requeue_reason or "work in progress",
                                      delay=result.requeue_after)


async def resolve_access(api: KubeApi, namespace: str, ref: ClusterRef) -> ClusterAccess:
    """How to reach a clusterRef: bootstrap servers given directly (PLAINTEXT), or the
    BrokerCluster's inter-broker listener (its status once it reported one, else its
    bootstrap Service), with its TLS trust and the operator's credentials: the same access
    as the BrokerCluster's own reconcile."""
    if ref.bootstrap_servers:
        return ClusterAccess(ref.bootstrap_servers)
    assert ref.name is not None
    cluster = await api.get("BrokerCluster", namespace, ref.name)
    if cluster is None:
        raise TemporaryReconcileError(
            f"BrokerCluster {ref.name!r} does not exist in namespace {namespace!r}",
            reason="ClusterNotFound", delay=30)
    try:
        spec = BrokerClusterSpec.parse(cluster.get("spec") or {})
    except InvalidSpec as exc:
        raise TemporaryReconcileError(f"BrokerCluster {ref.name!r} has an invalid spec: {exc}",
                                      reason="ClusterInvalid", delay=30) from None
    access = (await load_cluster_secrets(api, ClusterNames(ref.name, namespace), spec)).access
    status_servers = (cluster.get("status") or {}).get("bootstrapServers")
    if status_servers:  # what the BrokerCluster's own reconcile reached
        return ClusterAccess(str(status_servers), access.settings)
    return access


def sync_time() -> str:
    return now_rfc3339()
