"""An upgrade as a user runs it (docs/operations.md#upgrading), under an acks=all load:

1. the previous release — its chart, CRDs (v1alpha1 only) and operator image, built from the
   git history by that release's own scripts (``git archive``) — runs a BrokerCluster;
2. the CRDs are applied first (``kubectl apply --server-side``: Helm never upgrades crds/),
   then ``helm upgrade`` to this tree's chart: the new operator takes over at v1beta1 and the
   chart's post-upgrade hook leaves only v1beta1 in the CRDs' storedVersions;
3. the broker image changes (a re-tag: the same bits under a new name still rolls every pod):
   one broker at a time while no partition would drop below min.insync.replicas, the active
   controller last;
4. every acknowledged record is read back.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from e2e.conftest import Images
from e2e.helm import CHART, Helm, export_tree, previous_release
from e2e.kube import Kube, conditions
from e2e.platform import (
    BROKER_SELECTOR,
    CLUSTER,
    Platform,
    platform_values,
    watch_broker_restarts,
)

pytestmark = pytest.mark.e2e

PLURALS = ("brokerclusters", "topics", "consumergroups", "rebalances", "users")
CRD_NAMES = [f"{plural}.odradek.dev" for plural in PLURALS]


def _docker(*args: str, timeout: float = 120) -> None:
    subprocess.run(["docker", *args], check=True, timeout=timeout, capture_output=True)


def _previous_images(tree: Path, version: str, images: Images, backend_name: str) -> Images:
    """The previous release's operator, built from its tree as that release built it (its own
    images.sh on the local stack, ``make image``'s docker build elsewhere); its broker is this
    tree's broker under another tag (the broker code is what the roll carries)."""
    previous = Images(broker=f"odradek/broker:{version}-previous", zookeeper=images.zookeeper,
                      operator=f"odradek/operator:{version}-previous")
    started = time.monotonic()
    if backend_name == "local":
        build = ["bash", str(tree / "e2e/local/images.sh"), "operator"]
    else:
        build = ["docker", "build", "-f", str(tree / "operator/Dockerfile"), "-t",
                 previous.operator, str(tree)]
    result = subprocess.run(build, env={**os.environ, "OPERATOR_IMAGE": previous.operator},
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, f"building {previous.operator}:\n{result.stderr[-3000:]}"
    _docker("tag", images.broker, previous.broker)
    print(f"{previous.operator} built in {time.monotonic() - started:.0f}s")
    return previous


def _odradek_objects(kube: Kube, version: str) -> list[str]:
    found = []
    for plural in PLURALS:
        try:
            listed = cast(dict[str, Any], kube.custom.list_cluster_custom_object(
                "odradek.dev", version, plural))
        except Exception:  # the version (or the CRD) is not served
            continue
        found += [f"{plural}/{o['metadata']['name']}" for o in listed.get("items") or []]
    return found


def _install_previous_crds(kube: Kube, kubectl: Callable[..., str]) -> None:
    """The previous release installs its own CRDs only where none exist (Helm skips existing
    ones): CRDs left by an earlier scenario go first, once no object of theirs is left."""
    left = _odradek_objects(kube, "v1beta1")
    if left:
        pytest.skip(f"odradek objects of other scenarios still exist: {left[:5]}")
    kubectl("delete", "crd", *CRD_NAMES, "--ignore-not-found", "--wait=true",
            "--timeout=120s")


def _apply_crds(kubectl: Callable[..., str]) -> None:
    """Step 2's first half, as docs/operations.md#upgrading says."""
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART / "crds"))
    for name in CRD_NAMES:
        kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")


def _stored_versions(kubectl: Callable[..., str]) -> dict[str, str]:
    return {name: kubectl("get", "crd", name, "-o", "jsonpath={.status.storedVersions}")
            for name in CRD_NAMES}


def _create_topic(kube: Kube, namespace: str, version: str) -> None:
    kube.custom.create_namespaced_custom_object("odradek.dev", version, namespace, "topics", {
        "apiVersion": f"odradek.dev/{version}", "kind": "Topic",
        "metadata": {"name": "orders", "namespace": namespace},
        "spec": {"clusterRef": {"name": CLUSTER}, "partitions": 6, "replicationFactor": 3,
                 "config": {"min.insync.replicas": 2}}})
    kube.wait_condition(namespace, "topics", "orders", "Ready", timeout=180)


def _operator_image(kube: Kube, namespace: str) -> str:
    (deployment,) = kube.apps.list_namespaced_deployment(
        namespace, label_selector="app.kubernetes.io/component=operator").items
    return str(deployment.spec.template.spec.containers[0].image)  # type: ignore[union-attr]


# ~15 min: past what CI's e2e stage has room for beside the other scenarios, so it runs with
# `make e2e-local-slow` (the other long end-to-end scenarios too).
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_helm_upgrade_from_the_previous_release_then_a_broker_image_roll_lose_nothing(
        kube: Kube, images: Images, namespace: str, platform: Platform, helm: Helm,
        kubectl: Callable[..., str], backend) -> None:
    commit, version = previous_release()
    with tempfile.TemporaryDirectory(prefix="odradek-previous-") as tmp:
        tree = export_tree(commit, Path(tmp))
        previous = _previous_images(tree, version, images, backend.name)
        backend.load_images([previous.operator, previous.broker])
        _install_previous_crds(kube, kubectl)
        upgraded = False
        try:
            # 1. The previous release, spoken to at the only version it knows.
            old_kube = dataclasses.replace(kube, odradek_version="v1alpha1")
            platform.kube, platform.images = old_kube, previous
            started = time.monotonic()
            helm.install(platform.release, namespace,
                         platform_values(previous, backend.storage_class),
                         chart=tree / "charts/odradek")
            platform.installed = True
            platform.wait_cluster_ready(600)
            _create_topic(old_kube, namespace, "v1alpha1")
            print(f"chart {version} ({commit[:10]}) Ready in {time.monotonic() - started:.0f}s")
            records, rate = 30000, 50.0
            platform.start_acked_load("load", "orders", records, rate)
            platform.acked_so_far("load", at_least=200)
            before = kube.pod_uids(namespace, BROKER_SELECTOR)

            # 2. CRDs first, then the chart: the new operator, the storage-version hook.
            started = time.monotonic()
            _apply_crds(kubectl)
            upgraded = True
            platform.kube = kube
            helm.upgrade(platform.release, namespace,
                         platform_values(previous, backend.storage_class) | {
                             "operator": platform_values(images, None)["operator"]})
            assert _operator_image(kube, namespace) == images.operator
            assert set(_stored_versions(kubectl).values()) == {'["v1beta1"]'}, \
                "the post-upgrade hook did not migrate every CRD's stored objects"
            kube.wait_resource(
                namespace, "brokerclusters", CLUSTER, "Ready under the new operator",
                lambda c: conditions(c).get("Ready", {}).get("status") == "True"
                and (c.get("status") or {}).get("observedGeneration")
                == c["metadata"]["generation"], timeout=300)
            restarted_by_operator_upgrade = sorted(
                name for name, uid in kube.pod_uids(namespace, BROKER_SELECTOR).items()
                if before.get(name) != uid)
            print(f"CRDs + helm upgrade in {time.monotonic() - started:.0f}s; brokers "
                  f"restarted by it: {restarted_by_operator_upgrade or 'none'}")
            for version_name in ("v1alpha1", "v1beta1"):  # both served, the same object
                topic = cast(dict[str, Any], kube.custom.get_namespaced_custom_object(
                    "odradek.dev", version_name, namespace, "topics", "orders"))
                assert topic["spec"]["partitions"] == 6, version_name

            # 3. The broker image: an ISR-aware roll, the controller last.
            controller = platform.cluster()["status"]["controllerId"]
            order: list[str] = []
            rolling: list[dict[str, Any]] = []
            stop = threading.Event()
            watcher = threading.Thread(target=watch_broker_restarts,
                                       args=(kube, namespace, stop, order, rolling),
                                       daemon=True)
            watcher.start()
            started = time.monotonic()
            helm.upgrade(platform.release, namespace,
                         platform_values(images, backend.storage_class))
            try:
                kube.wait_resource(
                    namespace, "brokerclusters", CLUSTER, "to finish the image roll",
                    lambda c: len(order) == 3
                    and not ((c.get("status") or {}).get("rollingRestart") or {}).get("pending")
                    and conditions(c).get("Ready", {}).get("status") == "True",
                    timeout=1200, interval=3.0)
            finally:
                stop.set()
                watcher.join(10)
            rolled_in = time.monotonic() - started
            pods = kube.core.list_namespaced_pod(namespace, label_selector=BROKER_SELECTOR).items
            assert {p.spec.containers[0].image for p in pods  # type: ignore[union-attr]
                    } == {images.broker}

            # 4. Nothing acknowledged is lost.
            job_status = kube.batch.read_namespaced_job("load", namespace).status
            load_running = not (job_status and job_status.succeeded)
            platform.images = images
            acked, failed = platform.finish_acked_load("load", records, timeout=900)
            read = platform.read_back("verify", "orders")
            missing = sorted(acked - read)
            print(f"image roll {previous.broker} → {images.broker}: order {order} in "
                  f"{rolled_in:.0f}s (controller was broker {controller}; load still running "
                  f"at the end: {load_running}); progress seen: "
                  f"{[s.get('pending') for s in rolling]}; acks=all: {len(acked)}/{records} "
                  f"acknowledged, {len(failed)} failed, {len(read)} read back")
            assert order[-1] == f"{CLUSTER}-{controller}", \
                f"the controller (broker {controller}) did not roll last: {order}"
            assert rolling, "status.rollingRestart never showed the roll's progress"
            assert load_running, "the load ended before the roll: nothing was tested under load"
            assert not missing, f"{len(missing)} acknowledged record(s) lost, e.g. {missing[:10]}"
        finally:
            platform.kube, platform.images = kube, images
            if not upgraded:  # later scenarios (and the clean-up) speak v1beta1
                _apply_crds(kubectl)
