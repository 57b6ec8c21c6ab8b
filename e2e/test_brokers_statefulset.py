"""Brokers and ZooKeeper as plain StatefulSets (no operator): the images, their entrypoints,
readiness and controlled shutdown, proven on a real cluster.

One scenario, in order: a 3-node ZooKeeper ensemble and 3 brokers on PersistentVolumes come
up Ready; an in-cluster Job produces and consumes through the bootstrap Service; then, while a
Job produces with acks=all, a broker pod is deleted — every record the cluster acknowledged
must be read back once the pod has returned.
"""

from __future__ import annotations

import time

import pytest

from e2e import manifests
from e2e.conftest import Images
from e2e.kube import Kube, wait_for
from e2e.workloads import parse_acks, producer_command

pytestmark = pytest.mark.e2e

BROKERS = 3
LOAD_RECORDS = 3000
LOAD_RATE = 100.0  # records per second: the load spans the deletion and the pod's return


def _bootstrap(namespace: str) -> str:
    return f"odradek-bootstrap.{namespace}.svc.cluster.local:{manifests.BROKER_PORT}"


def _deploy(kube: Kube, namespace: str, images: Images, storage_class: str | None) -> None:
    kube.apply(namespace, manifests.zookeeper_ensemble(images.zookeeper,
                                                        storage_class=storage_class))
    kube.apply(namespace, manifests.broker_cluster(
        images.broker, manifests.zookeeper_connect(namespace), replicas=BROKERS,
        storage_class=storage_class))
    kube.wait_statefulset_ready(namespace, "zk", timeout=300)
    kube.wait_statefulset_ready(namespace, "odradek", timeout=300)


@pytest.mark.timeout(1500)
def test_statefulset_brokers_serve_clients_and_lose_no_acked_record_when_a_pod_is_deleted(
        kube: Kube, images: Images, namespace: str, backend) -> None:
    _deploy(kube, namespace, images, backend.storage_class)
    bootstrap = _bootstrap(namespace)

    # 1. Round trip through the bootstrap Service with the CLI in the broker image.
    lines = [f"hello-{n}" for n in range(100)]
    script = (
        "set -e\n"
        f"odradek topics --bootstrap-server {bootstrap} create --topic smoke --partitions 3 "
        "--replication-factor 3\n"
        f"seq 0 99 | sed 's/^/hello-/' | odradek produce --bootstrap-server {bootstrap} smoke\n"
        f"odradek consume --bootstrap-server {bootstrap} smoke --from-beginning "
        "--max-messages 100 --timeout-ms 60000\n"
    )
    kube.apply(namespace, [manifests.client_job("smoke", images.broker, ["sh", "-c", script])])
    log = kube.wait_job(namespace, "smoke", timeout=240)
    consumed = [line for line in log.splitlines() if line.startswith("hello-")]
    assert sorted(consumed) == sorted(lines), \
        f"consumed {len(consumed)} of 100; log:\n{log[-2000:]}"

    # 2. acks=all load while a broker pod is deleted (SIGTERM → controlled shutdown).
    create = (f"odradek topics --bootstrap-server {bootstrap} create --topic durable "
              "--partitions 3 --replication-factor 3 --config min.insync.replicas=2")
    kube.apply(namespace, [manifests.client_job("create-durable", images.broker,
                                                ["sh", "-c", create])])
    kube.wait_job(namespace, "create-durable", timeout=120)
    kube.apply(namespace, [manifests.client_job(
        "load", images.broker,
        producer_command(bootstrap, "durable", "rec", LOAD_RECORDS, LOAD_RATE),
        deadline_seconds=600)])

    acked_before = wait_for("300 acknowledged records before the deletion",
                            lambda: _acked_count(kube, namespace, "load", at_least=300),
                            timeout=180, interval=2.0)
    victim = "odradek-1"
    old_uid = kube.core.read_namespaced_pod(victim, namespace).metadata.uid
    kube.core.delete_namespaced_pod(victim, namespace)
    deleted_at = time.monotonic()
    kube.wait_pod_ready(namespace, victim, timeout=300, not_uid=old_uid)
    back_after = time.monotonic() - deleted_at

    log = kube.wait_job(namespace, "load", timeout=600)
    acked, failed = parse_acks(log)
    assert "DONE" in log, f"producer did not finish; log tail:\n{log[-2000:]}"
    assert len(acked) > acked_before, "no record was acknowledged after the deletion"
    assert len(acked) >= 0.9 * LOAD_RECORDS, (
        f"only {len(acked)}/{LOAD_RECORDS} acknowledged; failures: "
        f"{dict(list(failed.items())[:5])}")

    # 3. Read everything back once the broker has returned: no acknowledged record is missing.
    kube.apply(namespace, [manifests.client_job("verify", images.broker, [
        "odradek", "consume", "--bootstrap-server", bootstrap, "durable", "--from-beginning",
        "--timeout-ms", "30000"], deadline_seconds=300)])
    log = kube.wait_job(namespace, "verify", timeout=300)
    read = {int(line.split("-", 1)[1]) for line in log.splitlines() if line.startswith("rec-")}
    missing = sorted(acked - read)
    print(f"acks=all load: {len(acked)}/{LOAD_RECORDS} acknowledged ({acked_before} before the "
          f"deletion), {len(failed)} failed, {len(read)} read back; {victim} Ready again "
          f"{back_after:.0f}s after its deletion")
    assert not missing, (f"{len(missing)} acknowledged record(s) lost, e.g. {missing[:10]} "
                         f"(acked {len(acked)}, read {len(read)}, pod back in {back_after:.0f}s)")


def _acked_count(kube: Kube, namespace: str, job: str, *, at_least: int) -> int | None:
    try:
        acked, _ = parse_acks(kube.job_logs(namespace, job))
    except Exception:  # the pod may not have started yet
        return None
    return len(acked) if len(acked) >= at_least else None
