"""kopf's diff base keeps the command annotations (``kubectl annotate rebalance NAME
odradek.dev/rebalance=approve`` must fire the update handler) and still leaves kopf's own
``odradek.dev`` bookkeeping, and every other annotation kopf ignores, out."""

from __future__ import annotations

import json
from typing import Any

import kopf
import pytest
from kopf._cogs.structs.diffs import diff
from odradek_operator import runtime
from odradek_operator.decisions.rebalance_phase import ANNOTATION

STORAGE_PREFIX = "odradek.dev"


def storage() -> runtime.CommandAwareDiffBase:
    return runtime.CommandAwareDiffBase(prefix=STORAGE_PREFIX, key="last-handled-configuration")


def rebalance(annotations: dict[str, str]) -> kopf.Body:
    """A Rebalance as kopf sees it once it has handled it (its storages' marker and
    bookkeeping annotations in place), with ``annotations`` on top."""
    return kopf.Body({
        "apiVersion": "odradek.dev/v1beta1", "kind": "Rebalance",
        "metadata": {"name": "even-out", "namespace": "ns", "annotations": {
            f"{STORAGE_PREFIX}/kopf-managed": "yes",
            f"{STORAGE_PREFIX}/last-handled-configuration": json.dumps({"spec": {}}),
            f"{STORAGE_PREFIX}/reconcile_rebalance": json.dumps({"retries": 0}),
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            **annotations}},
        "spec": {"mode": "full"},
        "status": {"state": "ProposalReady"},
    })


def annotations_of(essence: Any) -> dict[str, str]:
    return dict((essence.get("metadata") or {}).get("annotations") or {})


def test_kopf_alone_drops_the_approval_from_the_essence() -> None:
    """The bug this storage fixes: the approval shares kopf's storage prefix."""
    plain = kopf.AnnotationsDiffBaseStorage(prefix=STORAGE_PREFIX,
                                            key="last-handled-configuration")
    essence = plain.build(body=rebalance({ANNOTATION: "approve"}))
    assert ANNOTATION not in annotations_of(essence)


@pytest.mark.parametrize("command", ["approve", "stop", "refresh"])
def test_the_essence_holds_the_command_annotation(command: str) -> None:
    essence = storage().build(body=rebalance({ANNOTATION: command}))
    assert annotations_of(essence) == {ANNOTATION: command}
    assert essence["spec"] == {"mode": "full"}
    assert "status" not in essence


def test_an_annotation_only_change_is_a_change() -> None:
    before = storage().build(body=rebalance({}))
    after = storage().build(body=rebalance({ANNOTATION: "approve"}))
    assert before != after
    assert diff(before, after), "kopf would see no change and call no update handler"


def _as_kopf_diffs(old_body: kopf.Body, new_body: kopf.Body,
                   progress: kopf.AnnotationsProgressStorage) -> Any:
    """kopf's processing step (``kopf/_core/reactor/processing.py``): build both essences,
    clear them through the progress storage, diff."""
    clear = progress.clear
    return diff(clear(essence=storage().build(body=old_body)),
                clear(essence=storage().build(body=new_body)))


def test_an_approval_survives_kopfs_progress_clearing() -> None:
    before, after = rebalance({}), rebalance({ANNOTATION: "approve"})
    plain = kopf.AnnotationsProgressStorage(prefix=STORAGE_PREFIX)
    assert not _as_kopf_diffs(before, after, plain), "kopf's own clear drops the approval"
    ours = runtime.CommandAwareProgress(prefix=STORAGE_PREFIX)
    assert _as_kopf_diffs(before, after, ours), "the approval must reach the update handler"
    cleared = ours.clear(essence=storage().build(body=rebalance(
        {ANNOTATION: "approve", f"{STORAGE_PREFIX}/restart-hash": "abc"})))
    assert annotations_of(cleared) == {ANNOTATION: "approve"}


def test_other_annotations_stay_as_kopf_treats_them() -> None:
    essence = storage().build(body=rebalance({f"{STORAGE_PREFIX}/restart-hash": "abc",
                                              "team": "payments"}))
    assert annotations_of(essence) == {"team": "payments"}


def test_the_operator_uses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ODRADEK_OPERATOR_METRICS_PORT", "0")
    monkeypatch.setenv("ODRADEK_OPERATOR_LOG_FORMAT", "plain")
    settings = kopf.OperatorSettings()
    runtime.configure(settings=settings)  # type: ignore[call-arg]  # kopf types it as a handler
    assert isinstance(settings.persistence.diffbase_storage, runtime.CommandAwareDiffBase)
    assert isinstance(settings.persistence.progress_storage, runtime.CommandAwareProgress)
