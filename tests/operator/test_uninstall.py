"""The Helm chart's pre-delete hook (odradek_operator.uninstall) against kmock: it deletes only
the release's resources, Topics and ConsumerGroups before the BrokerCluster, and reports what a
finalizer keeps alive past the timeout. The chart runs it for real in the e2e suite."""

from __future__ import annotations

from typing import Any

import kmock
import kopf
import pytest
import pytest_asyncio
from odradek_operator.kube.api import KubeApi
from odradek_operator.uninstall import delete_release_resources, parse_selector

RELEASE = {"app.kubernetes.io/instance": "rel", "app.kubernetes.io/managed-by": "Helm"}


@pytest_asyncio.fixture
async def api(kmock: kmock.KubernetesEmulator) -> Any:
    client = KubeApi(lambda: kopf.ConnectionInfo(server=str(kmock.url)))
    yield kmock, client
    await client.close()


def put(emulator: Any, plural: str, kind: str, name: str, labels: dict[str, str]) -> None:
    emulator.objects[kmock.resource(f"odradek.dev/v1alpha1/{plural}"), "ns", name] = {
        "apiVersion": "odradek.dev/v1alpha1", "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "labels": labels}, "spec": {}}


async def names(client: KubeApi, kind: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in await client.list(kind, "ns"))


@pytest.mark.asyncio
async def test_deletes_the_release_resources_and_nothing_else(api):
    emulator, client = api
    put(emulator, "topics", "Topic", "page-views", RELEASE)
    put(emulator, "topics", "Topic", "someone-elses", {"app.kubernetes.io/instance": "other"})
    put(emulator, "consumergroups", "ConsumerGroup", "counter", RELEASE)
    put(emulator, "brokerclusters", "BrokerCluster", "odradek", RELEASE)
    left = await delete_release_resources(client, "ns", RELEASE, timeout=10, interval=0.1)
    assert left == []
    assert await names(client, "Topic") == ["someone-elses"]
    assert await names(client, "ConsumerGroup") == []
    assert await names(client, "BrokerCluster") == []


def test_selector_parsing():
    assert parse_selector("a=b, c=d") == {"a": "b", "c": "d"}
    with pytest.raises(ValueError, match="key=value"):
        parse_selector("a")
