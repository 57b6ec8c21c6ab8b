"""The operator's RBAC covers what its kopf handlers watch (operator/deploy/rbac.yaml; the
chart's ClusterRole must grant the same rules: tests/charts/test_chart.py)."""

from __future__ import annotations

import kopf
import odradek_operator  # noqa: F401 - registers every handler
import yaml

from tests.operator.crd_schema import REPO


def _granted() -> dict[tuple[str, str], set[str]]:
    (role,) = [doc for doc in yaml.safe_load_all((REPO / "operator/deploy/rbac.yaml").read_text())
               if doc and doc["kind"] == "ClusterRole"]
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def test_every_resource_a_handler_watches_may_be_listed_and_watched():
    registry = kopf.get_default_registry()
    # kopf keeps one registry per kind of handler; each handler's selector names a resource.
    watched = {(selector.group or "", str(selector.any_name))
               for handlers in (registry._changing, registry._watching, registry._spawning,
                                registry._indexing)
               for selector in handlers.get_all_selectors()}
    assert ("apps", "statefulsets") in watched  # the brokers' readiness
    granted = _granted()
    missing = sorted(f"{group or 'core'}/{resource}" for group, resource in watched
                     if not {"list", "watch"} <= granted.get((group, resource), set()))
    assert missing == [], f"kopf watches these without list and watch granted: {missing}"
