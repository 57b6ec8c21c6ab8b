"""kopf handlers against kmock (a Kubernetes API mock server), and one against real brokers.

The handlers run as kopf calls them (keyword arguments, a Patch, a Memo); every Kubernetes
request they make goes over HTTP to kmock's in-memory API server, so what they create and what
they write to status is checked as stored objects, not as mocked calls.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import kmock
import kopf
import pytest
import pytest_asyncio
from kopf._core.engines import posting
from odradek_operator import runtime
from odradek_operator.handlers.broker_cluster import (
    reconcile_broker_cluster,
    stop_brokers_then_release,
)
from odradek_operator.handlers.broker_readiness import follow_broker_readiness
from odradek_operator.handlers.topic import reconcile_topic
from odradek_operator.metrics import METRICS

from tests.harness.certs import make_certs

pytestmark = pytest.mark.asyncio

LOGGER = logging.getLogger("test.operator")


@pytest_asyncio.fixture
async def api(kmock: kmock.KubernetesEmulator) -> Any:
    runtime.set_credentials(kopf.ConnectionInfo(server=str(kmock.url)))
    yield kmock
    await runtime.kube().close()


def capture_events() -> asyncio.Queue[Any]:
    """The queue kopf.info/kopf.warn post Events to (kopf's own, as in a running operator);
    set in the test itself, since context variables do not flow out of fixtures."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    posting.settings_var.set(kopf.OperatorSettings())
    posting.event_queue_var.set(queue)
    posting.event_queue_loop_var.set(asyncio.get_running_loop())
    return queue


def posted(queue: asyncio.Queue[Any]) -> list[tuple[str, str]]:
    out = []
    while not queue.empty():
        event = queue.get_nowait()
        out.append((event.type, event.reason))
    return out


def call(handler: Any, body: dict[str, Any], retry: int = 0) -> tuple[Any, kopf.Patch]:
    patch = kopf.Patch()
    # kopf.Body wants its RawBody TypedDict; these literals are Kubernetes objects of that shape.
    kwargs = {"body": kopf.Body(cast(kopf.RawBody, body)), "patch": patch, "memo": kopf.Memo(),
              "retry": retry, "logger": LOGGER, "namespace": body["metadata"]["namespace"],
              "name": body["metadata"]["name"]}
    return handler(**kwargs), patch


def stored(api: Any, group_version_plural: str, namespace: str, name: str) -> dict[str, Any]:
    return api.objects[kmock.resource(group_version_plural), namespace, name].raw


def cluster_body(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "odradek.dev/v1beta1", "kind": "BrokerCluster",
            "metadata": {"name": "odr", "namespace": "kafka", "uid": "uid-7", "generation": 3},
            "spec": {"replicas": 3, "zookeeper": {"connect": "zk:2181"}, **spec}}


def topic_body(cluster_ref: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "odradek.dev/v1beta1", "kind": "Topic",
            "metadata": {"name": "events", "namespace": "kafka", "generation": 2,
                         **spec.pop("metadata", {})},
            "spec": {"clusterRef": cluster_ref, "partitions": 3, "replicationFactor": 1,
                     **spec}}


def conditions(patch: kopf.Patch) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in patch["status"]["conditions"]}


async def test_broker_cluster_creates_its_children_owned_and_reports_status(api):
    coro, patch = call(reconcile_broker_cluster, cluster_body())
    await coro
    sts = stored(api, "apps/v1/statefulsets", "kafka", "odr")
    assert sts["spec"]["replicas"] == 3 and sts["spec"]["updateStrategy"]["type"] == "OnDelete"
    assert sts["metadata"]["ownerReferences"][0]["uid"] == "uid-7"
    assert "server.properties" in stored(api, "v1/configmaps", "kafka", "odr-config")["data"]
    assert stored(api, "v1/services", "kafka", "odr-bootstrap")["spec"]["ports"][0]["port"] \
        == 9092
    assert stored(api, "policy/v1/poddisruptionbudgets", "kafka", "odr")["spec"][
        "maxUnavailable"] == 1
    status = patch["status"]
    assert status["bootstrapServers"] == "odr-bootstrap.kafka.svc:9092"
    assert status["observedGeneration"] == 3
    cond = conditions(patch)
    assert cond["Ready"]["status"] == "False" and cond["Degraded"]["status"] == "True"
    assert cond["Degraded"]["reason"] == "ClusterUnreachable"

    # Idempotent: a second pass applies the same objects and keeps them.
    coro, _ = call(reconcile_broker_cluster, cluster_body())
    await coro
    assert stored(api, "apps/v1/statefulsets", "kafka", "odr")["spec"]["replicas"] == 3


async def test_invalid_cluster_spec_is_a_permanent_error_with_a_condition(api):
    events = capture_events()
    coro, patch = call(reconcile_broker_cluster, cluster_body(config={"broker.id": 4}))
    with pytest.raises(kopf.PermanentError):
        await coro
    assert conditions(patch)["Ready"]["reason"] == "InvalidSpec"
    assert "broker.id" in conditions(patch)["Ready"]["message"]
    assert posted(events) == [("Warning", "InvalidSpec")]


async def test_topic_of_a_missing_cluster_waits_with_a_condition(api):
    capture_events()
    coro, patch = call(reconcile_topic, topic_body({"name": "nowhere"}))
    with pytest.raises(kopf.TemporaryError):
        await coro
    assert conditions(patch)["Ready"]["reason"] == "ClusterNotFound"


async def test_unreachable_cluster_is_retried_with_backoff_never_a_crash(api):
    events = capture_events()
    before = METRICS.sample("odradek_operator_reconciles_total",
                            {"kind": "Topic", "result": "temporary_error"}) or 0
    delays = []
    for retry in (0, 3):
        coro, patch = call(reconcile_topic, topic_body({"bootstrapServers": "127.0.0.1:1"}),
                           retry=retry)
        with pytest.raises(kopf.TemporaryError) as caught:
            await coro
        delays.append(caught.value.delay)
        assert conditions(patch)["Ready"]["reason"] == "ClusterUnreachable"
    assert delays == [5, 40]
    assert posted(events) == [("Warning", "ClusterUnreachable")]  # once, not every retry
    after = METRICS.sample("odradek_operator_reconciles_total",
                           {"kind": "Topic", "result": "temporary_error"})
    assert after == before + 2


async def test_unmanaged_topic_is_left_alone(api):
    body = topic_body({"bootstrapServers": "127.0.0.1:1"},
                      metadata={"annotations": {"odradek.dev/managed": "false"}})
    coro, patch = call(reconcile_topic, body)
    await coro  # no Kafka connection attempted: the bootstrap is unreachable
    assert conditions(patch)["Ready"] == {**conditions(patch)["Ready"], "status": "Unknown",
                                          "reason": "Unmanaged"}


async def test_topic_through_a_broker_cluster_reference_creates_a_real_topic(api, broker):
    events = capture_events()
    api.objects[kmock.resource("odradek.dev/v1beta1/brokerclusters"), "kafka", "odr"] = {
        "apiVersion": "odradek.dev/v1beta1", "kind": "BrokerCluster",
        "metadata": {"name": "odr", "namespace": "kafka"},
        "spec": {"replicas": 1, "zookeeper": {"connect": "zk:2181"}},
        "status": {"bootstrapServers": broker.bootstrap}}
    coro, patch = call(reconcile_topic, topic_body({"name": "odr"}))
    await coro
    status = patch["status"]
    assert status["partitions"] == 3 and status["replicationFactor"] == 1
    assert status["topicId"] and status["topicName"] == "events"
    assert conditions(patch)["Ready"]["status"] == "True"
    assert ("Normal", "Created") in posted(events)


async def test_deleting_a_cluster_stops_its_brokers_before_their_managed_zookeeper(api):
    coro, _ = call(reconcile_broker_cluster,
                   cluster_body(zookeeper={"managed": {"replicas": 1}}))
    await coro
    api.objects[kmock.resource("v1/pods"), "kafka", "odr-0"] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "odr-0", "namespace": "kafka",
                     "labels": {"app.kubernetes.io/name": "odradek",
                                "app.kubernetes.io/instance": "odr",
                                "app.kubernetes.io/component": "broker"}}}
    body = cluster_body(zookeeper={"managed": {"replicas": 1}})
    body["metadata"]["deletionTimestamp"] = "2099-01-01T00:00:00Z"  # just now, as far as it knows
    with pytest.raises(kopf.TemporaryError, match="1 broker"):
        coro, _ = call(stop_brokers_then_release, body)
        await coro
    sts = stored(api, "apps/v1/statefulsets", "kafka", "odr")["spec"]
    assert sts["replicas"] == 0
    # Scaling to zero is a scale-down: without deleteClaim it must keep the claims.
    assert sts["persistentVolumeClaimRetentionPolicy"] == {"whenScaled": "Retain",
                                                           "whenDeleted": "Retain"}
    # Once they are gone (or after the bound), the deletion proceeds.
    del api.objects[kmock.resource("v1/pods"), "kafka", "odr-0"]
    coro, _ = call(stop_brokers_then_release, body)
    await coro


def _secret(name: str, data: dict[str, str], version: str = "1") -> dict[str, Any]:
    import base64

    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": "kafka", "resourceVersion": version},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


async def test_a_missing_or_incomplete_tls_secret_is_a_condition_then_a_rotation_rolls(
        api, tmp_path):
    """The Secret is the user's to create: Ready says which and what is missing, the reconcile
    is retried, and once it is there the brokers mount it; new certificate data changes the
    pod template's restart hash (the ISR-aware roll picks that up)."""
    capture_events()
    secure = {"listeners": {"named": [{"name": "INTERNAL", "port": 9091,
                                       "securityProtocol": "SSL"}]},
              "tls": {"secretName": "odr-tls", "clientAuth": "required"}}
    coro, patch = call(reconcile_broker_cluster, cluster_body(**secure))
    with pytest.raises(kopf.TemporaryError):
        await coro
    ready = conditions(patch)["Ready"]
    assert ready["status"] == "False" and ready["reason"] == "SecretNotFound"
    assert "kafka/odr-tls" in ready["message"] and "spec.tls.secretName" in ready["message"]

    tls_key = kmock.resource("v1/secrets"), "kafka", "odr-tls"
    api.objects[tls_key] = _secret("odr-tls", {"tls.crt": "C1", "tls.key": "K"})
    coro, patch = call(reconcile_broker_cluster, cluster_body(**secure))
    with pytest.raises(kopf.TemporaryError):
        await coro
    ready = conditions(patch)["Ready"]
    assert ready["reason"] == "SecretInvalid" and "no ca.crt" in ready["message"]

    api.objects[tls_key] = _secret("odr-tls", {"tls.crt": "C1", "tls.key": "K", "ca.crt": "x"})
    coro, patch = call(reconcile_broker_cluster, cluster_body(**secure))
    with pytest.raises(kopf.TemporaryError):
        await coro
    ready = conditions(patch)["Ready"]
    assert ready["reason"] == "SecretInvalid" and "no usable PEM" in ready["message"]
    certs = make_certs(tmp_path)
    ca = certs.ca.read_text()
    first_pair = {"tls.crt": certs.broker_cert.read_text(),
                  "tls.key": certs.broker_key.read_text()}
    rotated_pair = {"tls.crt": certs.client_cert.read_text(),
                    "tls.key": certs.client_key.read_text()}

    def restart_hash() -> str:
        sts = stored(api, "apps/v1/statefulsets", "kafka", "odr")
        return str(sts["spec"]["template"]["metadata"]["annotations"]["odradek.dev/restart-hash"])

    api.objects[tls_key] = _secret("odr-tls", {**first_pair, "ca.crt": ca})
    coro, patch = call(reconcile_broker_cluster, cluster_body(**secure))
    await coro
    sts = stored(api, "apps/v1/statefulsets", "kafka", "odr")
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "odr-tls"
    assert patch["status"]["listeners"] == [{
        "name": "INTERNAL", "type": "internal", "securityProtocol": "SSL",
        "bootstrapServers": "odr-bootstrap.kafka.svc:9091",
        "addresses": [{"host": "odr-bootstrap.kafka.svc", "port": 9091}]}]
    assert "ListenersReady" not in conditions(patch)  # no outside listener, nothing to say
    first = restart_hash()
    api.objects[tls_key] = _secret("odr-tls", {**rotated_pair, "ca.crt": ca}, "2")
    coro, _ = call(reconcile_broker_cluster, cluster_body(**secure))
    await coro
    assert restart_hash() != first


async def test_a_broker_losing_readiness_shows_in_the_cluster_status_at_once(api):
    """The StatefulSet watch copies its ready count onto the owning BrokerCluster without
    waiting for the periodic reconcile."""
    api.objects[kmock.resource("odradek.dev/v1beta1/brokerclusters"), "kafka", "odr"] = {
        **cluster_body(),
        "status": {"readyReplicas": 3, "conditions": [
            {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": ""}]}}
    coro, _ = call(reconcile_broker_cluster, cluster_body())  # its children, StatefulSet too
    await coro
    sts = stored(api, "apps/v1/statefulsets", "kafka", "odr")
    sts = {**sts, "status": {"replicas": 3, "readyReplicas": 2}}
    handler: Any = follow_broker_readiness  # as kopf calls it: the event and its object
    await handler(event={"type": "MODIFIED", "object": sts},
                  body=kopf.Body(cast(kopf.RawBody, sts)), logger=LOGGER)
    status = stored(api, "odradek.dev/v1beta1/brokerclusters", "kafka", "odr")["status"]
    assert status["readyReplicas"] == 2
    ready = {c["type"]: c for c in status["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "BrokersNotReady")


async def test_a_larger_storage_size_expands_the_claims_then_recreates_the_statefulset(api):
    """Claim templates cannot change: the claims are expanded in place, the StatefulSet keeps
    its template until they all ask for the new size, then it is deleted (pods orphaned) and
    applied again with the new template. A StorageClass without expansion is a condition."""
    events = capture_events()
    coro, _ = call(reconcile_broker_cluster, cluster_body(replicas=2))
    await coro
    labels = stored(api, "apps/v1/statefulsets", "kafka", "odr")["spec"][
        "volumeClaimTemplates"][0]["metadata"]["labels"]
    for i in range(2):
        api.objects[kmock.resource("v1/persistentvolumeclaims"), "kafka", f"data-odr-{i}"] = {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"data-odr-{i}", "namespace": "kafka", "labels": labels},
            "spec": {"storageClassName": "standard",
                     "resources": {"requests": {"storage": "10Gi"}}},
            "status": {"capacity": {"storage": "10Gi"}}}
    storage_class = kmock.resource("storage.k8s.io/v1/storageclasses"), None, "standard"
    api.objects[storage_class] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                  "metadata": {"name": "standard"},
                                  "allowVolumeExpansion": False}

    grown = cluster_body(replicas=2, storage={"size": "20Gi"})
    coro, patch = call(reconcile_broker_cluster, grown)
    await coro
    assert conditions(patch)["Degraded"]["reason"] == "VolumeExpansionUnsupported"
    assert stored(api, "apps/v1/statefulsets", "kafka", "odr")["spec"][
        "volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "10Gi"

    api.objects[storage_class]["allowVolumeExpansion"] = True
    with pytest.raises(kopf.TemporaryError, match="expanding 2 volume"):
        coro, patch = call(reconcile_broker_cluster, grown)
        await coro
    for i in range(2):
        claim = stored(api, "v1/persistentvolumeclaims", "kafka", f"data-odr-{i}")
        assert claim["spec"]["resources"]["requests"]["storage"] == "20Gi"
    assert stored(api, "apps/v1/statefulsets", "kafka", "odr")["spec"][
        "volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "10Gi"

    with pytest.raises(kopf.TemporaryError, match="re-creating the StatefulSet"):
        coro, patch = call(reconcile_broker_cluster, grown)
        await coro
    assert api.objects[kmock.resource("apps/v1/statefulsets"), "kafka", "odr"].deleted
    assert patch["status"]["storage"]["size"] == "20Gi"
    assert ("Normal", "VolumesExpanded") in posted(events)

    grown["status"] = {"storage": patch["status"]["storage"]}
    with pytest.raises(kopf.TemporaryError, match="waiting for data-odr-0, data-odr-1"):
        coro, patch = call(reconcile_broker_cluster, grown)
        await coro
    assert stored(api, "apps/v1/statefulsets", "kafka", "odr")["spec"][
        "volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "20Gi"


async def test_outside_listener_services_come_first_feed_the_brokers_then_go_with_the_spec(api):
    """The node ports of a nodeport listener reach the brokers' ConfigMap in the same pass
    that applies its Services; dropping the listener deletes them (and only them)."""
    def spec(*outside: dict[str, Any]) -> dict[str, Any]:
        return {"replicas": 2, "listeners": {"named": [
            {"name": "INTERNAL", "port": 9091}, *outside], "interBrokerListener": "INTERNAL"}}

    external = {"name": "EXTERNAL", "port": 9094, "type": "nodeport", "configuration": {
        "bootstrap": {"nodePort": 32100},
        "brokers": [{"broker": 0, "nodePort": 32000}, {"broker": 1, "nodePort": 32001}]}}
    coro, patch = call(reconcile_broker_cluster, cluster_body(**spec(external)))
    await coro
    service = stored(api, "v1/services", "kafka", "odr-external-1")
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["selector"]["statefulset.kubernetes.io/pod-name"] == "odr-1"
    data = stored(api, "v1/configmaps", "kafka", "odr-config")["data"]
    assert data["broker-1.advertised"] == "EXTERNAL://${ODRADEK_NODE_ADDRESS}:32001\n"
    listeners = {item["name"]: item for item in patch["status"]["listeners"]}
    assert listeners["EXTERNAL"]["type"] == "nodeport"
    ready = conditions(patch)["ListenersReady"]  # no pod is scheduled in kmock
    assert ready["status"] == "False" and ready["reason"] == "NodeAddressPending"

    without = cluster_body(**spec())
    without["status"] = {"conditions": [ready]}
    coro, patch = call(reconcile_broker_cluster, without)
    await coro
    assert conditions(patch)["ListenersReady"]["reason"] == "NoOutsideListeners"
    left = {name for (resource, _, name), obj in api.objects.items()
            if resource == kmock.resource("v1/services") and not obj.deleted}
    assert left == {"odr-headless", "odr-bootstrap"}
    # The ConfigMap's broker-<id>.advertised keys go by server-side apply itself (a field the
    # operator applied before and no longer applies is removed), which kmock does not model.
