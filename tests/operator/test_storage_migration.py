"""The chart's post-upgrade hook (odradek_operator.storage_migration) against kmock: every
object of a CRD that still lists an old stored version is written back, then the CRD's
``status.storedVersions`` is the storage version alone; nothing is written where nothing is
left to migrate. The chart runs it for real in e2e/test_upgrade.py."""

from __future__ import annotations

from typing import Any

import kmock
import kopf
import pytest
import pytest_asyncio
from odradek_operator.kube.api import KubeApi
from odradek_operator.storage_migration import CRD_NAMES, migrate_all, migration_of

from tests.operator.crd_schema import CRDS

#: What the hook may do, as (apiGroup, resource, verb): the chart's hook ClusterRole grants
#: exactly this (tests/charts/test_chart.py) and the hook's requests stay within it (below).
MIGRATION_PERMISSIONS = frozenset(
    {("apiextensions.k8s.io", "customresourcedefinitions", "get"),
     ("apiextensions.k8s.io", "customresourcedefinitions/status", "patch")}
    | {("odradek.dev", plural, verb)
       for plural in ("brokerclusters", "topics", "consumergroups", "rebalances", "users")
       for verb in ("list", "patch")})
VERBS = {kmock.action.LIST: "list", kmock.action.FETCH: "get", kmock.action.UPDATE: "patch",
         kmock.action.DELETE: "delete", kmock.action.CREATE: "create", kmock.action.WATCH: "watch"}
CRD_RESOURCE = kmock.resource("apiextensions.k8s.io/v1/customresourcedefinitions")
TOPICS = kmock.resource("odradek.dev/v1beta1/topics")


def installed(crd: dict[str, Any], stored: list[str]) -> dict[str, Any]:
    """The repository's CRD as the API server holds it after an upgrade from ``stored``."""
    return {**crd, "status": {"storedVersions": stored}}


@pytest_asyncio.fixture
async def api(kmock: kmock.KubernetesEmulator) -> Any:
    client = KubeApi(lambda: kopf.ConnectionInfo(server=str(kmock.url)))
    yield kmock, client
    await client.close()


def test_a_crd_needs_migration_only_while_another_version_is_stored():
    topic = CRDS["Topic"]
    assert migration_of(installed(topic, ["v1beta1"])) is None
    assert migration_of(installed(topic, [])) is None
    migration = migration_of(installed(topic, ["v1alpha1", "v1beta1"]))
    assert migration is not None and migration.storage == "v1beta1"
    assert migration.objects.url("ns", "t") == \
        "/apis/odradek.dev/v1beta1/namespaces/ns/topics/t"


def test_the_hook_knows_every_crd_of_the_repository():
    assert sorted(CRD_NAMES) == sorted(crd["metadata"]["name"] for crd in CRDS.values())


@pytest.mark.asyncio
async def test_every_object_is_written_back_then_only_the_storage_version_is_stored(api):
    emulator, client = api
    emulator.objects[CRD_RESOURCE, None, "topics.odradek.dev"] = installed(
        CRDS["Topic"], ["v1alpha1", "v1beta1"])
    emulator.objects[CRD_RESOURCE, None, "users.odradek.dev"] = installed(
        CRDS["User"], ["v1beta1"])
    for namespace, name in (("a", "orders"), ("b", "clicks")):
        emulator.objects[TOPICS, namespace, name] = {
            "apiVersion": "odradek.dev/v1beta1", "kind": "Topic",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterRef": {"name": "odr"}, "partitions": 3}}

    assert await migrate_all(client) == []

    crd = emulator.objects[CRD_RESOURCE, None, "topics.odradek.dev"]
    assert crd["status"]["storedVersions"] == ["v1beta1"]
    written = [(req.namespace, req.name) for req in emulator
               if req.action == kmock.action.UPDATE and req.resource == TOPICS]
    assert sorted(written) == [("a", "orders"), ("b", "clicks")]
    assert emulator.objects[TOPICS, "a", "orders"]["spec"]["partitions"] == 3
    crd_writes = [req.name for req in emulator
                  if req.action == kmock.action.UPDATE and req.resource == CRD_RESOURCE]
    assert crd_writes == ["topics.odradek.dev"], "a migrated CRD was written again"
    done = {(r.resource.group, r.resource.plural + (f"/{r.subresource}" if r.subresource else ""),
             VERBS[r.action]) for r in emulator if r.resource is not None and r.action is not None}
    assert done - MIGRATION_PERMISSIONS == set(), "the hook's RBAC does not allow these"
    assert ("apiextensions.k8s.io", "customresourcedefinitions/status", "patch") in done
