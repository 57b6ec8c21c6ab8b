"""Pure manifest builders and spec parsing: spec in, dict out, no cluster."""

from __future__ import annotations

import pytest
from odradek_operator.conditions import Condition, merge_conditions
from odradek_operator.errors import InvalidSpec, backoff_delay
from odradek_operator.handlers.broker_cluster import desired_children
from odradek_operator.manifests import brokers as broker_manifests
from odradek_operator.manifests.common import RESTART_HASH_ANNOTATION, ClusterNames, Owner
from odradek_operator.manifests.zookeeper import IMAGE_CONTRACT, zookeeper_connect
from odradek_operator.spec import BrokerClusterSpec, ConsumerGroupSpec, TopicSpec

from tests.operator.crd_schema import schema_of

NAMES = ClusterNames("odr", "kafka")
OWNER = Owner("odr", "kafka", "uid-1")


def cluster_spec(**overrides) -> BrokerClusterSpec:
    raw = {"replicas": 3, "zookeeper": {"connect": "zk:2181/odr"},
           "config": {"log.retention.ms": 1000, "num.partitions": 6,
                      "auto.create.topics.enable": False}}
    raw.update(overrides)
    return BrokerClusterSpec.parse(raw)


def children(spec: BrokerClusterSpec, *, dynamic_supported=True, pod_monitor=False):
    objs = desired_children(NAMES, OWNER, spec, replicas=spec.replicas,
                            dynamic_supported=dynamic_supported, pod_monitor=pod_monitor)
    return {(o["kind"], o["metadata"]["name"]): o for o in objs}


def test_external_zookeeper_cluster_has_every_child_owned_by_the_cluster():
    objs = children(cluster_spec())
    assert set(objs) == {("ConfigMap", "odr-config"), ("Service", "odr-headless"),
                         ("Service", "odr-bootstrap"), ("PodDisruptionBudget", "odr"),
                         ("StatefulSet", "odr")}
    for obj in objs.values():
        assert obj["metadata"]["namespace"] == "kafka"
        assert obj["metadata"]["ownerReferences"][0]["uid"] == "uid-1"


def test_server_properties_hold_user_config_and_operator_keys():
    props = children(cluster_spec())[("ConfigMap", "odr-config")]["data"]["server.properties"]
    lines = set(props.splitlines())
    assert {"zookeeper.connect=zk:2181/odr", "log.retention.ms=1000", "num.partitions=6",
            "auto.create.topics.enable=false", "metrics.port=9404"} <= lines


def test_statefulset_contract_with_the_broker_image():
    sts = children(cluster_spec())[("StatefulSet", "odr")]
    spec = sts["spec"]
    assert spec["updateStrategy"] == {"type": "OnDelete"}  # the operator rolls, ISR-aware
    assert spec["serviceName"] == "odr-headless" and spec["replicas"] == 3
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["ODRADEK_HEADLESS_SERVICE"] == "odr-headless"
    assert env["ODRADEK_CONFIG"] == "/etc/odradek/server.properties"
    assert spec["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "10Gi"
    anti = spec["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"][
        "topologyKey"] == "kubernetes.io/hostname"


def test_headless_service_publishes_not_ready_brokers():
    svc = children(cluster_spec())[("Service", "odr-headless")]
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"]


def restart_hash(spec, **kw):
    sts = children(spec, **kw)[("StatefulSet", "odr")]
    return sts["spec"]["template"]["metadata"]["annotations"][RESTART_HASH_ANNOTATION]


def test_dynamic_key_change_does_not_restart_static_key_change_does():
    base = restart_hash(cluster_spec())
    dynamic = cluster_spec(config={"log.retention.ms": 5, "num.partitions": 6,
                                   "auto.create.topics.enable": False})
    static = cluster_spec(config={"log.retention.ms": 1000, "num.partitions": 7,
                                  "auto.create.topics.enable": False})
    assert restart_hash(dynamic) == base
    assert restart_hash(static) != base
    # A cluster that refused dynamic configs gets them through the restart instead.
    assert restart_hash(dynamic, dynamic_supported=False) != \
        restart_hash(cluster_spec(), dynamic_supported=False)


def test_managed_zookeeper_ensemble_and_connect_string():
    spec = cluster_spec(zookeeper={"managed": {"replicas": 3, "chroot": "/odr"}})
    objs = children(spec)
    zk = objs[("StatefulSet", "odr-zookeeper")]
    env = {e["name"]: e["value"] for e in zk["spec"]["template"]["spec"]["containers"][0]["env"]}
    servers = env[IMAGE_CONTRACT.servers_env].split()
    assert servers[0] == ("server.1=odr-zookeeper-0.odr-zookeeper-headless.kafka.svc."
                          "cluster.local:2888:3888;2181")
    assert len(servers) == 3
    assert ("Service", "odr-zookeeper-headless") in objs
    assert ("PodDisruptionBudget", "odr-zookeeper") in objs
    assert spec.managed_zookeeper is not None
    connect = zookeeper_connect(NAMES, spec.managed_zookeeper)
    assert connect.endswith(":2181/odr") and connect.count(",") == 2
    props = objs[("ConfigMap", "odr-config")]["data"]["server.properties"]
    assert f"zookeeper.connect={connect}" in props


def test_managed_zookeeper_always_requests_resources():
    def zk_resources(managed: dict) -> dict:
        objs = children(cluster_spec(zookeeper={"managed": managed}))
        return objs[("StatefulSet", "odr-zookeeper")]["spec"]["template"]["spec"][
            "containers"][0]["resources"]

    # Never BestEffort: the first pod starved of CPU on a busy node, with every broker behind.
    assert zk_resources({})["requests"] == {"cpu": "100m", "memory": "256Mi"}
    chosen = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    assert zk_resources({"resources": chosen}) == chosen


def test_rack_awareness_adds_init_container_and_node_reader_rbac():
    objs = children(cluster_spec(rack={"topologyKey": "topology.kubernetes.io/zone"}))
    pod = objs[("StatefulSet", "odr")]["spec"]["template"]["spec"]
    assert pod["initContainers"][0]["name"] == "rack"
    assert pod["serviceAccountName"] == "odr-broker"
    assert "broker.rack=" in pod["containers"][0]["command"][-1]
    role = objs[("ClusterRole", "odradek-rack-kafka-odr")]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]


def test_pod_monitor_only_when_its_crd_exists():
    assert ("PodMonitor", "odr") not in children(cluster_spec())
    assert ("PodMonitor", "odr") in children(cluster_spec(), pod_monitor=True)


def test_pod_monitor_gives_each_broker_the_cluster_and_broker_target_labels():
    """Every broker dashboard and alert selects on ``cluster`` and ``broker``: the
    PodMonitor's relabelings must produce them from what Kubernetes knows of the pod
    (Prometheus anchors a relabel regex at both ends, as ``re.fullmatch`` does)."""
    import re

    monitor = children(cluster_spec(), pod_monitor=True)[("PodMonitor", "odr")]
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    meta = {"__meta_kubernetes_pod_label_app_kubernetes_io_instance": "odr",
            "__meta_kubernetes_pod_name": "odr-12"}
    labels = {}
    for rule in endpoint["relabelings"]:
        value = ";".join(meta[name] for name in rule["sourceLabels"])
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        assert match, rule
        labels[rule["targetLabel"]] = match.expand(
            rule.get("replacement", "$1").replace("$1", r"\1"))
    assert labels == {"cluster": "odr", "broker": "12"}


@pytest.mark.parametrize(("raw", "message"), [
    ({"zookeeper": {}}, "exactly one"),
    ({"zookeeper": {"connect": "zk:2181", "managed": {}}}, "exactly one"),
    ({"zookeeper": {"connect": "zk:2181"}, "config": {"broker.id": 1}}, "broker.id"),
    ({"zookeeper": {"managed": {"replicas": 2}}}, "odd"),
    ({"zookeeper": {"connect": "zk:2181"}, "replicas": 0}, "at least 1"),
    ({"zookeeper": {"connect": "zk:2181"}, "config": {"x": {"nested": 1}}}, "spec.config.x"),
])
def test_invalid_cluster_specs_are_refused_with_a_clear_message(raw, message):
    with pytest.raises(InvalidSpec, match=message):
        BrokerClusterSpec.parse(raw)


def test_topic_and_group_specs_default_names_from_the_resource():
    topic = TopicSpec.parse({"clusterRef": {"name": "odr"}, "partitions": 3,
                             "replicationFactor": 1}, "events")
    assert topic.topic_name == "events" and topic.deletion_policy == "Delete"
    group = ConsumerGroupSpec.parse({"clusterRef": {"bootstrapServers": "h:9092"},
                                     "reset": {"id": "a", "strategy": "timestamp",
                                               "timestamp": "2026-01-01T00:00:00Z"}}, "g")
    assert group.group_id == "g" and group.reset is not None
    assert group.reset.timestamp_ms == 1767225600000
    with pytest.raises(InvalidSpec, match="RFC 3339"):
        ConsumerGroupSpec.parse({"clusterRef": {"name": "x"},
                                 "reset": {"id": "a", "strategy": "timestamp",
                                           "timestamp": "yesterday"}}, "g")


@pytest.mark.parametrize("parse", [TopicSpec.parse, ConsumerGroupSpec.parse])
def test_a_missing_cluster_ref_is_reported_in_one_line_as_the_api_server_does(parse):
    with pytest.raises(InvalidSpec) as refused:
        parse({"partitions": 3, "replicationFactor": 1}, "events")
    assert str(refused.value) == (
        "spec.clusterRef: Required value: set clusterRef.name (a BrokerCluster in this "
        "namespace) or clusterRef.bootstrapServers (host:port,...)")
    crd_rules = schema_of("Topic")["properties"]["spec"]["x-kubernetes-validations"]
    (crd_message,) = [r["message"] for r in crd_rules if r["rule"] == "has(self.clusterRef)"]
    assert str(refused.value).endswith(crd_message)


def test_conditions_keep_transition_time_until_status_flips():
    first = merge_conditions([], [Condition("Ready", False, "Waiting")], 1, now="T1")
    same = merge_conditions(first, [Condition("Ready", False, "StillWaiting")], 2, now="T2")
    flipped = merge_conditions(same, [Condition("Ready", True, "Synced")], 3, now="T3")
    assert same[0]["lastTransitionTime"] == "T1" and same[0]["observedGeneration"] == 2
    assert flipped[0]["lastTransitionTime"] == "T3" and flipped[0]["status"] == "True"


def test_backoff_grows_and_is_capped():
    assert [backoff_delay(r) for r in range(4)] == [5, 10, 20, 40]
    assert backoff_delay(50) == 300


def test_brokers_and_zookeeper_use_the_images_exec_readiness_probes():
    objs = children(cluster_spec(zookeeper={"managed": {"replicas": 3}}))
    broker = objs[("StatefulSet", "odr")]["spec"]["template"]["spec"]["containers"][0]
    assert broker["readinessProbe"]["exec"]["command"][:2] == ["odradek", "broker-ready"]
    # The probe finds the broker's port the way the entrypoint does.
    assert {"name": "ODRADEK_PORT", "value": "9092"} in broker["env"]
    zk_sts = objs[("StatefulSet", "odr-zookeeper")]["spec"]
    assert zk_sts["podManagementPolicy"] == "Parallel"
    zk = zk_sts["template"]["spec"]["containers"][0]
    assert zk["readinessProbe"]["exec"]["command"] == ["zookeeper-ready"]
    assert zk["volumeMounts"] == [{"name": "data", "mountPath": "/var/lib/zookeeper/data"}]
    assert {"name": "ZOO_DATA_DIR", "value": "/var/lib/zookeeper/data"} in zk["env"]
    # Liveness never kills a pod that is still starting: the startup probe covers that.
    for container, port in ((broker, "kafka"), (zk, "client")):
        assert container["startupProbe"]["tcpSocket"] == {"port": port}
        assert container["startupProbe"]["failureThreshold"] * \
            container["startupProbe"]["periodSeconds"] >= 300
        assert "initialDelaySeconds" not in container["livenessProbe"]


def test_pods_meet_the_restricted_pod_security_standard():
    objs = children(cluster_spec(zookeeper={"managed": {"replicas": 1}},
                                 rack={"topologyKey": "zone"}))
    for name in ("odr", "odr-zookeeper"):
        pod = objs[("StatefulSet", name)]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in pod["containers"] + pod.get("initContainers", []):
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


@pytest.mark.parametrize("delete_claim", [False, True])
def test_claims_are_kept_on_scale_down_and_deletion_unless_delete_claim(delete_claim):
    objs = children(cluster_spec(
        storage={"deleteClaim": delete_claim},
        zookeeper={"managed": {"replicas": 1, "storage": {"deleteClaim": delete_claim}}}))
    expected = "Delete" if delete_claim else "Retain"
    brokers = objs[("StatefulSet", "odr")]["spec"]["persistentVolumeClaimRetentionPolicy"]
    # A scale-down honours deleteClaim too (Strimzi's deleteClaim: false): the removed
    # broker's data survives for a later scale-up; with true it goes after the drain.
    assert brokers == {"whenScaled": expected, "whenDeleted": expected}
    assert broker_manifests.stop_brokers_patch(delete_claim)["spec"][
        "persistentVolumeClaimRetentionPolicy"] == brokers
    zookeeper = objs[("StatefulSet", "odr-zookeeper")]["spec"][
        "persistentVolumeClaimRetentionPolicy"]
    assert zookeeper == {"whenScaled": "Retain", "whenDeleted": expected}
