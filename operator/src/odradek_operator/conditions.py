"""Status conditions the Kubernetes way: ``type``, ``status``, ``reason``, ``message``,
``lastTransitionTime``, ``observedGeneration``.

Status is the user's interface, so a condition's ``reason`` is a CamelCase word a person can
search for and its ``message`` says what to do. ``lastTransitionTime`` moves only when
``status`` flips, which is what ``kubectl wait`` and dashboards rely on.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Condition", "merge_conditions", "now_rfc3339"]

# Condition types used across kinds.
READY = "Ready"
RECONCILING = "Reconciling"
DEGRADED = "Degraded"
BLOCKED = "Blocked"


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Condition:
    type: str
    status: bool | None  # None: Unknown
    reason: str
    message: str = ""

    @property
    def status_word(self) -> str:
        return "Unknown" if self.status is None else ("True" if self.status else "False")


def merge_conditions(current: Iterable[Mapping[str, Any]] | None, updates: Iterable[Condition],
                     generation: int | None, now: str | None = None) -> list[dict[str, Any]]:
    """The condition list after ``updates``: types not mentioned are kept as they were; a
    type whose status is unchanged keeps its ``lastTransitionTime``."""
    now = now or now_rfc3339()
    by_type: dict[str, dict[str, Any]] = {c["type"]: dict(c) for c in current or ()
                                          if isinstance(c, Mapping) and "type" in c}
    for update in updates:
        old = by_type.get(update.type)
        changed = old is None or old.get("status") != update.status_word
        entry: dict[str, Any] = {
            "type": update.type,
            "status": update.status_word,
            "reason": update.reason,
            "message": update.message,
            "lastTransitionTime": now if changed or old is None
            else old.get("lastTransitionTime", now),
        }
        if generation is not None:
            entry["observedGeneration"] = generation
        by_type[update.type] = entry
    return [by_type[t] for t in sorted(by_type)]
