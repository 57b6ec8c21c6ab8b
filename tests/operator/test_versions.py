"""The operator speaks each CRD's storage version (v1beta1), the one the API server converts
every stored object to, so it sees objects created through the deprecated v1alpha1 as well."""

from __future__ import annotations

import kopf
import odradek_operator  # noqa: F401 - registers every handler
from odradek_operator.kube.api import KIND_PATHS

from tests.operator.crd_schema import CRDS, STORAGE_VERSION, version_of


def test_every_handler_of_an_odradek_kind_registers_on_its_storage_version():
    registry = kopf.get_default_registry()
    registered = {(str(selector.any_name), selector.version)
                  for handlers in (registry._changing, registry._watching, registry._spawning,
                                   registry._indexing)
                  for selector in handlers.get_all_selectors()
                  if selector.group == "odradek.dev"}
    storage = {(crd["spec"]["names"]["plural"], STORAGE_VERSION) for crd in CRDS.values()}
    assert registered == storage
    assert all(version_of(kind)["storage"] for kind in CRDS)


def test_the_operators_own_requests_use_the_storage_version():
    paths = {kind: path.group_version for kind, path in KIND_PATHS.items() if kind in CRDS}
    assert paths and set(paths.values()) == {f"odradek.dev/{STORAGE_VERSION}"}
