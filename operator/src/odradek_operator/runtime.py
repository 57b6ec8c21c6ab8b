"""Operator-wide runtime: credentials, the Kubernetes client, settings, metrics endpoint.

``kopf run --standalone --all-namespaces --liveness=http://0.0.0.0:8080/healthz -m
odradek_operator`` imports the package, which registers the handlers below and in
:mod:`.handlers`. Environment knobs (all optional):

* ``ODRADEK_OPERATOR_METRICS_PORT`` — Prometheus endpoint (default 9090, 0 = off);
* ``ODRADEK_OPERATOR_LOG_FORMAT`` — ``json`` (default) or ``plain``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

import kopf
from pythonjsonlogger.json import JsonFormatter

from .decisions.rebalance_phase import ANNOTATION as REBALANCE_COMMAND
from .kube.api import KubeApi
from .metrics import serve_metrics

__all__ = [
    "COMMAND_ANNOTATIONS",
    "CommandAwareDiffBase",
    "CommandAwareProgress",
    "RetryIsNotAnError",
    "kube",
    "quiet_requeues",
    "set_credentials",
]

COMMAND_ANNOTATIONS = frozenset({REBALANCE_COMMAND})
"""Annotations through which a person tells the operator to act (``kubectl annotate``)."""

_credentials: kopf.ConnectionInfo | None = None
_api: KubeApi | None = None


def set_credentials(info: kopf.ConnectionInfo) -> None:
    """Remember the credentials kopf logged in with (tests set them directly)."""
    global _credentials, _api
    _credentials = info
    _api = None


def _current_credentials() -> kopf.ConnectionInfo:
    if _credentials is None:
        raise RuntimeError("the operator has not logged in to Kubernetes yet")
    return _credentials


def kube() -> KubeApi:
    """The operator's client for the objects it owns (shared; one connection pool)."""
    global _api
    if _api is None:
        _api = KubeApi(_current_credentials)
    return _api


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In-cluster service account first, a kubeconfig otherwise (local runs and tests)."""
    info = kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)
    if info is not None:
        set_credentials(info)
    return info


class RetryIsNotAnError(logging.Filter):
    """kopf logs every ``TemporaryError`` at ERROR ("... failed temporarily: ...") and posts
    it as an Error event. Ours are requeues of work in progress (a rolling restart waiting
    for the next broker) or waits our handlers already logged at their own level, so the
    line drops to INFO (a Normal event). Timeouts and exhausted retries keep ERROR."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and " failed temporarily: " in record.getMessage():
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def quiet_requeues() -> None:
    """Install :class:`RetryIsNotAnError` on kopf's per-object logger (once)."""
    kopf_objects = logging.getLogger("kopf.objects")
    if not any(isinstance(f, RetryIsNotAnError) for f in kopf_objects.filters):
        kopf_objects.addFilter(RetryIsNotAnError())


class CommandAwareDiffBase(kopf.AnnotationsDiffBaseStorage):
    """kopf's diff base, keeping the :data:`COMMAND_ANNOTATIONS` in the essence it diffs.

    kopf leaves every annotation under a prefix its storages use out of the essence (they
    are its own bookkeeping: progress, the last-handled configuration). Ours is
    ``odradek.dev``, the prefix of the command annotations too, so ``kubectl annotate
    rebalance NAME odradek.dev/rebalance=approve`` changed no essence and fired no update
    handler: an approval was never acted on. The other ``odradek.dev/*`` annotations stay
    out, as kopf means them to. kopf clears both essences again before it diffs them:
    :class:`CommandAwareProgress` keeps the commands there too."""

    def build(self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None
              ) -> kopf.BodyEssence:
        essence = super().build(body=body, extra_fields=extra_fields)
        return _with_commands(essence, _commands(body))


def _commands(essence: Any) -> dict[str, str]:
    annotations = (essence.get("metadata") or {}).get("annotations") or {}
    return {k: annotations[k] for k in sorted(COMMAND_ANNOTATIONS) if k in annotations}


def _with_commands(essence: Any, commands: dict[str, str]) -> Any:
    if commands:
        essence.setdefault("metadata", {}).setdefault("annotations", {}).update(commands)
    return essence


class CommandAwareProgress(kopf.AnnotationsProgressStorage):
    """kopf's progress storage, whose ``clear`` keeps the :data:`COMMAND_ANNOTATIONS`.

    Before diffing, kopf passes both essences (the stored one and the one just built)
    through the progress storage's ``clear``, which drops every annotation under its prefix:
    without this the command :class:`CommandAwareDiffBase` kept would be dropped again there,
    and an annotation-only approval still fired nothing (seen on the local stack: the
    Rebalance sat in ProposalReady with ``odradek.dev/rebalance=approve`` for 15 minutes)."""

    def clear(self, *, essence: kopf.BodyEssence) -> kopf.BodyEssence:
        commands = _commands(essence)
        return _with_commands(super().clear(essence=essence), commands)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # Progress and the last-handled spec live in annotations: the CRDs' status schemas stay
    # strict (no x-kubernetes-preserve-unknown-fields for kopf's bookkeeping).
    settings.persistence.progress_storage = CommandAwareProgress(prefix="odradek.dev")
    settings.persistence.diffbase_storage = CommandAwareDiffBase(
        prefix="odradek.dev", key="last-handled-configuration")
    settings.persistence.finalizer = "odradek.dev/finalizer"
    settings.watching.server_timeout = 300
    settings.batching.error_delays = [1, 2, 5, 10, 30, 60, 120, 300]
    quiet_requeues()
    if os.environ.get("ODRADEK_OPERATOR_LOG_FORMAT", "json") == "json":
        formatter = JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                  rename_fields={"levelname": "level", "asctime": "time"})
        for handler in logging.getLogger().handlers:
            handler.setFormatter(formatter)
    port = int(os.environ.get("ODRADEK_OPERATOR_METRICS_PORT", "9090"))
    if port:
        serve_metrics(port)


@kopf.on.cleanup()
async def close_clients(**_: Any) -> None:
    if _api is not None:
        await _api.close()
