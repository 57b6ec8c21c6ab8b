"""Day-2 operations through the BrokerCluster and ConsumerGroup resources on a chart-installed
platform: scaling with data intact, config changes (live where Kafka allows, else an ISR-aware
roll under acks=all load), consumer-group lag and a declarative reset.
"""

from __future__ import annotations

import threading
import time

import pytest

from e2e import manifests
from e2e.conftest import Images
from e2e.kube import Kube, conditions
from e2e.platform import (
    BROKER_SELECTOR,
    CLUSTER,
    Platform,
    platform_values,
    watch_broker_restarts,
)

pytestmark = pytest.mark.e2e


def _create_topic(kube: Kube, namespace: str, name: str, partitions: int = 6) -> dict:
    kube.custom.create_namespaced_custom_object("odradek.dev", "v1beta1", namespace, "topics", {
        "apiVersion": "odradek.dev/v1beta1", "kind": "Topic",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterRef": {"name": CLUSTER}, "partitions": partitions,
                 "replicationFactor": 3, "config": {"min.insync.replicas": 2}}})
    return kube.wait_condition(namespace, "topics", name, "Ready", timeout=180)


def _produce(platform: Platform, job: str, topic: str, count: int) -> set[int]:
    platform.start_acked_load(job, topic, count, rate=500.0)
    acked, failed = platform.finish_acked_load(job, count, timeout=300)
    assert not failed, f"{len(failed)} records failed: {dict(list(failed.items())[:3])}"
    return acked


def _scaling(platform: Platform) -> dict:
    return (platform.cluster().get("status") or {}).get("scaling") or {}


@pytest.mark.timeout(2400)
def test_scale_three_five_three_keeps_data_and_refuses_what_replication_cannot_survive(
        kube: Kube, images: Images, namespace: str, platform: Platform, backend) -> None:
    platform.install(platform_values(images, backend.storage_class, delete_claim=True,
                                     rebalanceOnScaleUp=True))
    _create_topic(kube, namespace, "events")
    acked = _produce(platform, "seed", "events", 2000)

    # 3 → 5: two brokers join and (rebalanceOnScaleUp) replicas move onto them.
    started = time.monotonic()
    kube.patch_resource(namespace, "brokerclusters", CLUSTER, {"spec": {"replicas": 5}})
    kube.wait_resource(namespace, "brokerclusters", CLUSTER, "to run 5 brokers, rebalanced",
                       lambda c: (c.get("status") or {}).get("readyReplicas") == 5
                       and (c["status"].get("scaling") or {}).get("rebalancedForReplicas") == 5
                       and conditions(c).get("Ready", {}).get("status") == "True",
                       timeout=600)
    print(f"scaled 3 → 5 and rebalanced in {time.monotonic() - started:.0f}s")

    # 5 → 3: the leaving brokers (the highest ordinals) are drained by reassignment first.
    started = time.monotonic()
    phases: set[str] = set()
    kube.patch_resource(namespace, "brokerclusters", CLUSTER, {"spec": {"replicas": 3}})

    def drained(c: dict) -> bool:
        phases.add(str((c.get("status") or {}).get("scaling", {}).get("phase")))
        sts = kube.apps.read_namespaced_stateful_set(CLUSTER, namespace)
        # ready_replicas stops counting a removed broker before its pod is gone: wait for that.
        return sts.spec.replicas == 3 and (sts.status.ready_replicas or 0) == 3 and \
            len(kube.pod_uids(namespace, BROKER_SELECTOR)) == 3 and \
            conditions(c).get("Ready", {}).get("status") == "True"

    kube.wait_resource(namespace, "brokerclusters", CLUSTER, "to drain back to 3 brokers",
                       drained, timeout=900)
    print(f"scaled 5 → 3 in {time.monotonic() - started:.0f}s; phases seen: {sorted(phases)}")
    assert "Draining" in phases, "the scale-down did not drain before removing brokers"
    pods = kube.pod_uids(namespace, BROKER_SELECTOR)
    assert sorted(pods) == [f"{CLUSTER}-{i}" for i in range(3)]
    read = platform.read_back("verify", "events")
    missing = sorted(acked - read)
    assert not missing, f"{len(missing)} record(s) lost across 3→5→3, e.g. {missing[:10]}"

    # 3 → 2 with replication factor 3 topics: refused with a condition, nothing removed.
    kube.patch_resource(namespace, "brokerclusters", CLUSTER, {"spec": {"replicas": 2}})
    blocked = kube.wait_condition(namespace, "brokerclusters", CLUSTER, "Degraded",
                                  reason="ScaleDownBlocked", timeout=180)
    message = conditions(blocked)["Degraded"]["message"]
    assert "events (RF 3)" in message, message
    assert conditions(blocked)["Ready"]["status"] == "False"
    assert kube.apps.read_namespaced_stateful_set(CLUSTER, namespace).spec.replicas == 3
    print(f"3 → 2 refused: {message}")
    kube.patch_resource(namespace, "brokerclusters", CLUSTER, {"spec": {"replicas": 3}})
    platform.wait_cluster_ready(timeout=300)


@pytest.mark.timeout(2400)
def test_config_change_applies_live_where_allowed_else_rolls_isr_aware_controller_last(
        kube: Kube, images: Images, namespace: str, platform: Platform, backend) -> None:
    platform.install(platform_values(images, backend.storage_class))
    _create_topic(kube, namespace, "orders")
    before = kube.pod_uids(namespace, BROKER_SELECTOR)

    # A cluster-wide dynamic key: applied through IncrementalAlterConfigs, no pod restarts.
    kube.patch_resource(namespace, "brokerclusters", CLUSTER,
                        {"spec": {"config": {"log.retention.ms": 3600000}}})
    live = kube.wait_resource(
        namespace, "brokerclusters", CLUSTER, "to apply log.retention.ms live",
        lambda c: ((c.get("status") or {}).get("dynamicConfig") or {}).get("applied", {})
        .get("log.retention.ms") == "3600000", timeout=180)
    assert live["status"]["dynamicConfig"]["supported"] is True
    time.sleep(15)  # a restart, had one been decided, would have started by now
    assert kube.pod_uids(namespace, BROKER_SELECTOR) == before, "a dynamic change restarted pods"

    # A read-only key: a rolling restart under acks=all load, one broker at a time, the
    # active controller last, nothing acknowledged lost.
    records, rate = 15000, 50.0
    platform.start_acked_load("load", "orders", records, rate)
    platform.acked_so_far("load", at_least=200)
    controller = platform.cluster()["status"]["controllerId"]
    order: list[str] = []
    rolling: list[dict] = []
    stop = threading.Event()
    watcher = threading.Thread(target=watch_broker_restarts,
                               args=(kube, namespace, stop, order, rolling), daemon=True)
    watcher.start()
    started = time.monotonic()
    kube.patch_resource(namespace, "brokerclusters", CLUSTER,
                        {"spec": {"config": {"num.partitions": 4}}})
    try:
        kube.wait_resource(namespace, "brokerclusters", CLUSTER, "to finish the rolling restart",
                           lambda c: len(order) == 3
                           and not ((c.get("status") or {}).get("rollingRestart") or {})
                           .get("pending")
                           and conditions(c).get("Ready", {}).get("status") == "True",
                           timeout=1200, interval=3.0)
    finally:
        stop.set()
        watcher.join(10)
    rolled_in = time.monotonic() - started
    load_running = not kube.batch.read_namespaced_job("load", namespace).status.succeeded
    acked, failed = platform.finish_acked_load("load", records, timeout=900)
    read = platform.read_back("verify", "orders")
    missing = sorted(acked - read)
    print(f"roll: order {order} in {rolled_in:.0f}s (controller was broker {controller}; load "
          f"still running at the end: {load_running}); progress seen: "
          f"{[s.get('pending') for s in rolling]}; acks=all: {len(acked)}/{records} "
          f"acknowledged, {len(failed)} failed, {len(read)} read back")
    assert order[-1] == f"{CLUSTER}-{controller}", \
        f"the controller (broker {controller}) did not roll last: {order}"
    assert rolling, "status.rollingRestart never showed the roll's progress"
    assert not missing, f"{len(missing)} acknowledged record(s) lost, e.g. {missing[:10]}"
    configmap = kube.core.read_namespaced_config_map(f"{CLUSTER}-config", namespace)
    assert "num.partitions=4" in configmap.data["server.properties"]


@pytest.mark.timeout(1800)
def test_consumer_group_lag_from_a_real_group_and_a_reset_only_when_it_is_empty(
        kube: Kube, images: Images, namespace: str, platform: Platform, backend) -> None:
    platform.install(platform_values(images, backend.storage_class))
    _create_topic(kube, namespace, "clicks", partitions=3)
    _produce(platform, "seed", "clicks", 300)
    # A real group member reads 100 records, commits and leaves.
    platform.run("first-100", f"odradek consume --bootstrap-server {platform.bootstrap} clicks "
                              "--group counter --from-beginning --max-messages 100 "
                              "--timeout-ms 60000")
    kube.custom.create_namespaced_custom_object(
        "odradek.dev", "v1beta1", namespace, "consumergroups", {
            "apiVersion": "odradek.dev/v1beta1", "kind": "ConsumerGroup",
            "metadata": {"name": "counter", "namespace": namespace},
            "spec": {"clusterRef": {"name": CLUSTER}, "groupId": "counter",
                     "topics": ["clicks"]}})
    group = kube.wait_resource(namespace, "consumergroups", "counter", "to report its lag",
                               lambda g: (g.get("status") or {}).get("totalLag") is not None,
                               timeout=180)
    status = group["status"]
    committed = sum(p.get("committedOffset", 0) for p in status["partitions"])
    ends = sum(p.get("endOffset", 0) for p in status["partitions"])
    print(f"group counter: state {status['state']}, committed {committed}, end {ends}, "
          f"lag {status['totalLag']}")
    assert ends == 300 and committed >= 100
    assert status["totalLag"] == ends - committed
    assert status["state"] == "Empty" and status["memberCount"] == 0

    # A reset asked while a member is consuming is blocked, and runs once the group is empty.
    kube.apply(namespace, [manifests.client_job("member", images.broker, [
        "odradek", "consume", "--bootstrap-server", platform.bootstrap, "clicks",
        "--group", "counter", "--timeout-ms", "900000"], deadline_seconds=900)])
    kube.wait_resource(namespace, "consumergroups", "counter", "to see the active member",
                       lambda g: (g.get("status") or {}).get("memberCount") == 1, timeout=240)
    kube.patch_resource(namespace, "consumergroups", "counter", {"spec": {"reset": {
        "id": "rewind-1", "strategy": "earliest", "topics": ["clicks"]}}})
    blocked = kube.wait_condition(namespace, "consumergroups", "counter", "Blocked",
                                  reason="GroupActive", timeout=120)
    assert "lastReset" not in blocked["status"], "the reset ran while the group was active"
    kube.batch.delete_namespaced_job("member", namespace, propagation_policy="Foreground")
    done = kube.wait_resource(
        namespace, "consumergroups", "counter", "to run reset rewind-1",
        lambda g: ((g.get("status") or {}).get("lastReset") or {}).get("id") == "rewind-1",
        timeout=300)
    status = done["status"]
    assert conditions(done)["Blocked"]["status"] == "False"
    assert all(o["to"] == 0 for o in status["lastReset"]["offsets"])
    assert status["totalLag"] == 300, status
    print(f"reset rewind-1 executed once the group was empty: lag back to {status['totalLag']}")
