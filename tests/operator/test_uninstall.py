"""The Helm chart's pre-delete hook (odradek_operator.uninstall) against kmock: it deletes only
the release's resources, Topics, ConsumerGroups and Rebalances before the BrokerCluster,
reports what a finalizer keeps alive past the timeout, then stops the operator and takes its
finalizer off everything the operator leaves behind (Topics, ConsumerGroups and Rebalances
applied with kubectl that
refer to the release's cluster), so deleting them or their namespace later does not hang.
The chart runs it for real in the e2e suite (e2e/test_chart_first_run.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import kmock
import kopf
import pytest
import pytest_asyncio
from odradek_operator import runtime
from odradek_operator.kube.api import KubeApi
from odradek_operator.uninstall import (
    FINALIZER,
    delete_release_resources,
    main,
    parse_selector,
    uninstall_release,
)

RELEASE = {"app.kubernetes.io/instance": "rel", "app.kubernetes.io/managed-by": "Helm"}
OPERATOR = "rel-odradek-operator"
OPERATOR_LABELS = {"app.kubernetes.io/instance": "rel", "app.kubernetes.io/component": "operator"}
DEPLOYMENTS = kmock.resource("apps/v1/deployments")
PODS = kmock.resource("v1/pods")
ODRADEK_PLURALS = ("brokerclusters", "topics", "consumergroups", "rebalances", "users")
#: What the hook may do, as (scope, apiGroup, resource, verb); the chart's hook Role
#: ("namespace") and ClusterRole ("cluster") grant exactly this (tests/charts/test_chart.py),
#: and the hook's requests must stay within it (below).
HOOK_PERMISSIONS = frozenset(
    {("namespace", "odradek.dev", plural, verb) for plural in ODRADEK_PLURALS
     for verb in ("list", "delete")}
    | {("cluster", "odradek.dev", plural, verb) for plural in ODRADEK_PLURALS
       for verb in ("list", "patch")}
    | {("namespace", "apps", "deployments", "get"), ("namespace", "apps", "deployments", "patch"),
       ("namespace", "", "pods", "list")})
VERBS = {kmock.action.LIST: "list", kmock.action.FETCH: "get", kmock.action.UPDATE: "patch",
         kmock.action.DELETE: "delete", kmock.action.CREATE: "create", kmock.action.WATCH: "watch"}


@pytest_asyncio.fixture
async def api(kmock: kmock.KubernetesEmulator) -> Any:
    client = KubeApi(lambda: kopf.ConnectionInfo(server=str(kmock.url)))
    yield kmock, client
    await client.close()


def put(emulator: Any, plural: str, kind: str, name: str, labels: dict[str, str], *,
        namespace: str = "ns", finalizers: list[str] | None = None, cluster: str = "odradek"
        ) -> None:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    if finalizers:
        metadata["finalizers"] = finalizers
    emulator.objects[kmock.resource(f"odradek.dev/v1beta1/{plural}"), namespace, name] = {
        "apiVersion": "odradek.dev/v1beta1", "kind": kind, "metadata": metadata,
        "spec": {} if kind == "BrokerCluster" else {"clusterRef": {"name": cluster}}}


def put_operator(emulator: Any) -> None:
    """The operator's Deployment and its pod (plus a pod of something else)."""
    emulator.objects[DEPLOYMENTS, "ns", OPERATOR] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": OPERATOR, "namespace": "ns"},
        "spec": {"replicas": 1, "selector": {"matchLabels": OPERATOR_LABELS}}}
    for name, labels in ((f"{OPERATOR}-abc", OPERATOR_LABELS), ("hook", {"job": "hook"})):
        emulator.objects[PODS, "ns", name] = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "labels": labels}}


async def replica_set_controller(emulator: Any) -> None:
    """Deletes the operator's pod once its Deployment is scaled to 0, as Kubernetes does."""
    pod = emulator.objects[PODS, "ns", f"{OPERATOR}-abc"]
    while emulator.objects[DEPLOYMENTS, "ns", OPERATOR]["spec"]["replicas"] != 0:
        await asyncio.sleep(0.05)
    pod.delete()


async def names(client: KubeApi, kind: str, namespace: str = "ns") -> list[str]:
    return sorted(o["metadata"]["name"] for o in await client.list(kind, namespace))


async def finalizers(client: KubeApi, kind: str, name: str, namespace: str = "ns") -> list[str]:
    obj = await client.get(kind, namespace, name)
    assert obj is not None, f"{kind}/{name} is gone"
    return list(obj["metadata"].get("finalizers") or [])


@pytest.mark.asyncio
async def test_deletes_the_release_resources_and_nothing_else(api):
    emulator, client = api
    put(emulator, "topics", "Topic", "page-views", RELEASE)
    put(emulator, "topics", "Topic", "someone-elses", {"app.kubernetes.io/instance": "other"})
    put(emulator, "consumergroups", "ConsumerGroup", "counter", RELEASE)
    put(emulator, "rebalances", "Rebalance", "even-out", RELEASE)
    put(emulator, "brokerclusters", "BrokerCluster", "odradek", RELEASE)
    left = await delete_release_resources(client, "ns", RELEASE, timeout=10, interval=0.1)
    assert left == []
    assert await names(client, "Topic") == ["someone-elses"]
    assert await names(client, "ConsumerGroup") == []
    assert await names(client, "Rebalance") == []
    assert await names(client, "BrokerCluster") == []


@pytest.mark.asyncio
async def test_kubectl_applied_topics_and_groups_lose_the_finalizer_and_stay(api):
    """What `kubectl apply -f examples/topic.yaml` made stays, without the operator's
    finalizer (other finalizers kept), in the release's namespace and any other; once the
    operator is stopped, deleting one completes at once."""
    emulator, client = api
    put(emulator, "brokerclusters", "BrokerCluster", "odradek", RELEASE)
    put(emulator, "topics", "Topic", "release-topic", RELEASE)
    put(emulator, "consumergroups", "ConsumerGroup", "release-group", RELEASE)
    put(emulator, "topics", "Topic", "page-views", {}, finalizers=[FINALIZER, "example.com/x"])
    put(emulator, "consumergroups", "ConsumerGroup", "counter", {}, finalizers=[FINALIZER])
    put(emulator, "rebalances", "Rebalance", "even-out", {}, finalizers=[FINALIZER])
    put(emulator, "topics", "Topic", "elsewhere", {}, namespace="other", cluster="theirs",
        finalizers=[FINALIZER])
    put(emulator, "brokerclusters", "BrokerCluster", "theirs", {}, namespace="other",
        finalizers=[FINALIZER])
    put_operator(emulator)
    controller = asyncio.create_task(replica_set_controller(emulator))
    try:
        problems = await uninstall_release(client, "ns", RELEASE, OPERATOR, timeout=10,
                                           interval=0.1)
    finally:
        controller.cancel()
    done = {("cluster" if r.namespace is None else "namespace", r.resource.group,
             r.resource.plural, VERBS[r.action]) for r in emulator
            if r.resource is not None and r.action is not None}
    assert problems == []
    assert emulator.objects[DEPLOYMENTS, "ns", OPERATOR]["spec"]["replicas"] == 0
    assert await names(client, "Pod") == ["hook"], "only the operator's pods are waited for"
    assert await names(client, "BrokerCluster") == []
    assert await names(client, "Topic") == ["page-views"]
    assert await finalizers(client, "Topic", "page-views") == ["example.com/x"]
    assert await finalizers(client, "ConsumerGroup", "counter") == []
    assert await finalizers(client, "Rebalance", "even-out") == []
    assert await finalizers(client, "Topic", "elsewhere", "other") == []
    assert await finalizers(client, "BrokerCluster", "theirs", "other") == []
    await client.delete("ConsumerGroup", "ns", "counter")
    assert await names(client, "ConsumerGroup") == [], "the delete must not hang"
    # Everything the hook did, its RBAC in the chart allows (a namespaced request is also
    # allowed by a cluster-wide grant).
    denied = {d for d in done
              if d not in HOOK_PERMISSIONS and ("cluster", *d[1:]) not in HOOK_PERMISSIONS}
    assert not denied, f"the hook's RBAC (HOOK_PERMISSIONS) does not allow {sorted(denied)}"
    assert {d[3] for d in done} >= {"list", "get", "patch", "delete"}


@pytest.mark.asyncio
async def test_an_unfinalized_release_resource_stops_the_hook_before_the_operator(api):
    """The release's own Topic still Terminating at the timeout: the operator keeps running
    and nothing loses its finalizer (Helm stops the uninstall; the message names the Topic)."""
    emulator, client = api
    put(emulator, "topics", "Topic", "stuck", RELEASE, finalizers=[FINALIZER])
    put(emulator, "topics", "Topic", "page-views", {}, finalizers=[FINALIZER])
    put_operator(emulator)
    problems = await uninstall_release(client, "ns", RELEASE, OPERATOR, timeout=0.3,
                                       interval=0.1)
    assert problems == ["Topic/stuck: not finalized after 0s (is the operator running?)"]
    assert emulator.objects[DEPLOYMENTS, "ns", OPERATOR]["spec"]["replicas"] == 1
    assert await finalizers(client, "Topic", "page-views") == [FINALIZER]


@pytest.mark.asyncio
async def test_an_operator_that_does_not_stop_keeps_the_finalizers(api, monkeypatch):
    emulator, client = api
    put(emulator, "topics", "Topic", "page-views", {}, finalizers=[FINALIZER])
    put_operator(emulator)  # no controller: the pod never goes
    monkeypatch.setattr("odradek_operator.uninstall.STOP_SECONDS_MIN", 0.3)
    problems = await uninstall_release(client, "ns", RELEASE, OPERATOR, timeout=0.3,
                                       interval=0.1)
    assert problems == [f"Deployment/{OPERATOR}: its pods did not stop"]
    assert await finalizers(client, "Topic", "page-views") == [FINALIZER]


def test_the_finalizer_is_the_one_the_operator_sets(monkeypatch):
    monkeypatch.setenv("ODRADEK_OPERATOR_METRICS_PORT", "0")
    monkeypatch.setenv("ODRADEK_OPERATOR_LOG_FORMAT", "plain")
    settings = kopf.OperatorSettings()
    runtime.configure(settings=settings)  # type: ignore[call-arg]  # kopf types it as a handler
    assert settings.persistence.finalizer == FINALIZER


def test_the_command_line_needs_the_operator_deployment(capsys):
    with pytest.raises(SystemExit):
        main(["--namespace=ns", "--selector=a=b"])
    assert "--operator-deployment" in capsys.readouterr().err


def test_selector_parsing():
    assert parse_selector("a=b, c=d") == {"a": "b", "c": "d"}
    with pytest.raises(ValueError, match="key=value"):
        parse_selector("a")
