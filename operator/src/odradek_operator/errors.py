"""Errors typed by what should happen next.

* :class:`PermanentReconcileError` — retrying cannot help (an invalid spec, a request Kafka
  refuses for good): report it in status with its ``reason`` and stop until the spec changes.
* :class:`TemporaryReconcileError` — the world is not ready yet (cluster unreachable, a pod
  still starting, a restart that would drop a partition below min.insync.replicas): report it
  and retry after ``delay`` seconds.

Both are kopf's own error classes underneath, so kopf applies the right policy (no retry vs a
delayed retry) and an operator never crash-loops on them.
"""

from __future__ import annotations

import kopf

__all__ = [
    "ClusterUnreachable",
    "InvalidSpec",
    "PermanentReconcileError",
    "TemporaryReconcileError",
    "backoff_delay",
]


class PermanentReconcileError(kopf.PermanentError):
    reason = "ReconcileFailed"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        if reason:
            self.reason = reason


class TemporaryReconcileError(kopf.TemporaryError):
    reason = "Waiting"

    def __init__(self, message: str, *, delay: float = 10.0, reason: str | None = None) -> None:
        super().__init__(message, delay=delay)
        if reason:
            self.reason = reason


class InvalidSpec(PermanentReconcileError):
    reason = "InvalidSpec"


class ClusterUnreachable(TemporaryReconcileError):
    reason = "ClusterUnreachable"


def backoff_delay(retry: int, *, base: float = 5.0, cap: float = 300.0) -> float:
    """Exponential backoff for the ``retry``-th retry (0-based): 5, 10, 20, ... capped at 5 min,
    so an unreachable cluster is probed less and less often but never given up on."""
    return min(cap, base * (2 ** max(0, min(retry, 16))))
