"""The operator's own Prometheus metrics, recorded through the catalogue's definitions.

Names, labels and ``result`` values live in :mod:`odradek.metrics.operator` (DESIGN.md §5),
which the operator dashboard and docs read too: this module only holds the operator's one
:class:`~odradek.metrics.operator.OperatorMetrics` and the context manager every handler
runs its reconcile in.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from odradek.metrics.operator import OperatorMetrics, ReconcileOutcome

__all__ = ["METRICS", "ReconcileRecord", "observe_reconcile", "serve_metrics"]

METRICS = OperatorMetrics()


class ReconcileRecord:
    def __init__(self) -> None:
        self.result = ReconcileOutcome.SUCCESS
        self.reason = ""


@contextmanager
def observe_reconcile(kind: str) -> Iterator[ReconcileRecord]:
    """Time a reconcile; the caller sets ``record.result``/``record.reason`` when it fails
    in a way it expected (an exception it did not set a result for is ``unexpected_error``)."""
    record = ReconcileRecord()
    started = time.monotonic()
    try:
        yield record
    except BaseException:
        if record.result is ReconcileOutcome.SUCCESS:
            record.result = ReconcileOutcome.UNEXPECTED_ERROR
            record.reason = record.reason or "Unexpected"
        raise
    finally:
        METRICS.reconciled(kind, record.result, time.monotonic() - started, record.reason)


def serve_metrics(port: int) -> None:
    """``/metrics`` on every address of the pod (the PodMonitor scrapes the pod IP)."""
    METRICS.serve("0.0.0.0", port)
