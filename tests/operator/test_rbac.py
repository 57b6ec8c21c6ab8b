"""The operator's RBAC covers what its kopf handlers watch (operator/deploy/rbac.yaml; the
chart's ClusterRole must grant the same rules: tests/charts/test_chart.py), and the uninstall
hook may release every custom resource the operator puts its finalizer on."""

from __future__ import annotations

import re

import kopf
import odradek_operator  # noqa: F401 - registers every handler
import yaml
from odradek_operator.kube.api import KIND_PATHS
from odradek_operator.uninstall import DELETION_ORDER

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


def _custom_resources() -> set[str]:
    """The plural of every CRD the chart installs (the operator watches each one)."""
    return {yaml.safe_load(path.read_text())["spec"]["names"]["plural"]
            for path in (REPO / "charts/odradek/crds").glob("*.yaml")}


def test_the_uninstall_hook_releases_every_custom_resource():
    released = {KIND_PATHS[kind].plural for kinds in DELETION_ORDER for kind in kinds}
    assert released == _custom_resources(), (
        "a custom resource the uninstall hook does not release would hang in Terminating "
        "once the operator is gone")


def test_the_uninstall_hooks_rbac_names_every_custom_resource():
    """Both rules of the chart's hook (its Role deletes the release's resources, its
    ClusterRole patches finalizers off everywhere); the rendered rules are checked against
    what the hook does in tests/charts/test_chart.py, which needs helm."""
    template = (REPO / "charts/odradek/templates/uninstall-hook.yaml").read_text()
    rules = [set(re.split(r",\s*", found)) for found in
             re.findall(r"apiGroups: \[odradek\.dev\]\s*resources: \[([^\]]*)\]", template)]
    assert len(rules) == 2
    for resources in rules:
        assert resources == _custom_resources()
