"""The operator's own resources beyond the BrokerCluster, end to end, each under an acks=all
load whose every acknowledged record must read back at the end:

- a ``User`` (SCRAM-SHA-512 credential in a generated Secret, simple ACLs) on a cluster with
  an ACL authorizer and a SASL listener: its client may produce and consume what the ACLs
  grant and is refused elsewhere; deleting the User removes credential and ACLs;
- a ``Rebalance`` in mode add-brokers after scaling 3 → 4: a proposal in status, executed
  only once approved by the ``odradek.dev/rebalance=approve`` annotation;
- volume growth (``spec.storage.size`` 1Gi → 2Gi): refused with a condition while the
  StorageClass cannot expand; where the bound volumes are already large enough (the local
  stack's static 10Gi PVs) expansion is then allowed on the class and the claims and the
  StatefulSet's template grow with no broker restarted.

Slow (``make e2e-local-slow``): several minutes each on the shared machines. Clients run in
the cluster as Jobs of the broker image (its ``odradek`` CLI speaks SASL through
``--command-config``), as in the other scenarios; the test process reaches no cluster DNS name.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import Images
from e2e.kube import Kube, conditions, wait_for
from e2e.platform import BROKER_SELECTOR, CLUSTER, Platform, platform_values
from e2e.test_operations import _create_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SASL_PORT = 9093
USER = "app"
GROUP = "app-group"


def _sasl_bootstrap(namespace: str) -> str:
    return ",".join(f"{CLUSTER}-{i}.{CLUSTER}-headless.{namespace}.svc.cluster.local:{SASL_PORT}"
                    for i in range(3))


def _as_user(namespace: str, password: str, body: str) -> str:
    """A sh script running ``body`` with $B (the SASL bootstrap) and $C (a client properties
    file with the user's SCRAM-SHA-512 credential)."""
    return (f"B={_sasl_bootstrap(namespace)}; C=/tmp/client.properties; "
            "printf '%s\\n' security.protocol=SASL_PLAINTEXT sasl.mechanism=SCRAM-SHA-512 "
            f"sasl.username={USER} 'sasl.password={password}' > $C; {body}")


def _records(log: str) -> set[int]:
    return {int(line.split("-", 1)[1]) for line in log.splitlines()
            if re.fullmatch(r"rec-\d+", line)}


def _acls_of(platform: Platform, job: str) -> list[Any]:
    """The user's ACLs, listed as the operator's (super user) principal on PLAINTEXT."""
    log = platform.run(job, f"odradek acls --bootstrap-server {platform.bootstrap} "
                            f"--output json --list --principal User:{USER}")
    start = log.find("[")
    return list(json.loads(log[start:])) if start >= 0 else []


@pytest.mark.timeout(1800)
def test_user_gets_scram_credentials_and_acls_and_loses_both_when_deleted(
        kube: Kube, images: Images, namespace: str, platform: Platform, backend) -> None:
    started = time.monotonic()
    platform.install(platform_values(
        images, backend.storage_class,
        listeners=[{"name": "INTERNAL", "port": 9092, "securityProtocol": "PLAINTEXT"},
                   {"name": "SASL", "port": SASL_PORT, "securityProtocol": "SASL_PLAINTEXT"}],
        interBrokerListener="INTERNAL",
        authentication={"mechanisms": ["SCRAM-SHA-512"]},
        # Brokers, the operator and the readiness probe come in over PLAINTEXT as ANONYMOUS.
        config={"authorizer.class.name": "acl", "super.users": "User:ANONYMOUS"}))
    for topic in ("load", "granted", "forbidden"):
        _create_topic(kube, namespace, topic, partitions=3)
    records, rate = 2000, 40.0
    platform.start_acked_load("load", "load", records, rate)
    platform.acked_so_far("load", at_least=100)

    kube.custom.create_namespaced_custom_object("odradek.dev", "v1beta1", namespace, "users", {
        "apiVersion": "odradek.dev/v1beta1", "kind": "User",
        "metadata": {"name": USER, "namespace": namespace},
        "spec": {"clusterRef": {"name": CLUSTER},
                 "authentication": {"type": "scram-sha-512"},
                 "authorization": {"type": "simple", "acls": [
                     {"resource": {"type": "topic", "name": "granted"},
                      "operations": ["Write", "Describe"]},
                     {"resource": {"type": "topic", "name": "granted"}, "operations": ["Read"]},
                     {"resource": {"type": "group", "name": GROUP}, "operations": ["Read"]}]}}})
    try:
        user = kube.wait_condition(namespace, "users", USER, "Ready", timeout=240)
        status = user["status"]
        print(f"User Ready {time.monotonic() - started:.0f}s after install began: "
              f"{ {k: status.get(k) for k in ('username', 'principal', 'secret', 'acls')} }")
        assert status["secret"] == USER and status["principal"] == f"User:{USER}"
        assert status["acls"] == 4, status  # Write, Describe, Read on the topic; Read on group
        secret = kube.core.read_namespaced_secret(USER, namespace)
        password = base64.b64decode(secret.data["password"]).decode()
        assert f'username="{USER}"' in base64.b64decode(secret.data["sasl.jaas.config"]).decode()
        assert len(_acls_of(platform, "acls-before")) == 4

        # As the user: produce and consume the granted topic, refused on the other one.
        log = platform.run("as-user", _as_user(namespace, password,
            "seq 0 199 | sed 's/^/rec-/' | odradek produce --command-config $C "
            "--bootstrap-server $B --acks all granted && echo PRODUCED; "
            "odradek consume --command-config $C --bootstrap-server $B granted "
            f"--group {GROUP} --from-beginning --max-messages 200 --timeout-ms 60000; "
            "echo rec-x | odradek produce --command-config $C --bootstrap-server $B --acks all "
            "forbidden 2>&1; echo FORBIDDEN_RC=$?"), timeout=300)
        print(f"as {USER}:\n{log[-1500:]}")
        assert "PRODUCED" in log, f"the user could not produce to its topic:\n{log[-2000:]}"
        read_as_user = _records(log)
        assert read_as_user == set(range(200)), \
            f"{200 - len(read_as_user)} of 200 records not read back as the user"
        assert "FORBIDDEN_RC=0" not in log, "the user produced to a topic it has no ACL for"
        assert re.search(r"(?i)topic.?authorization.?failed", log), log[-2000:]

        # Deleting the User removes the credential (and its Secret with it) and the ACLs.
        kube.delete_resource(namespace, "users", USER)
        kube.wait_gone(namespace, "users", USER, timeout=180)
        wait_for("the generated Secret to be garbage-collected",
                 lambda: USER not in {s.metadata.name for s in
                                      kube.core.list_namespaced_secret(namespace).items},
                 timeout=120)
        assert _acls_of(platform, "acls-after") == []
        log = platform.run("after-delete", _as_user(namespace, password,
            "echo rec-x | odradek produce --command-config $C --bootstrap-server $B --acks all "
            "granted 2>&1; echo DELETED_RC=$?"), timeout=180)
        print(f"as the deleted {USER}:\n{log[-800:]}")
        assert "DELETED_RC=0" not in log, "the deleted user still produced"
        assert re.search(r"(?i)authentication", log), log[-2000:]
    finally:
        if kube.resource(namespace, "users", USER) is not None:
            kube.delete_resource(namespace, "users", USER)
            kube.wait_gone(namespace, "users", USER, timeout=180)

    acked, failed = platform.finish_acked_load("load", records, timeout=600)
    read = platform.read_back("verify", "load")
    missing = sorted(acked - read)
    print(f"acks=all: {len(acked)}/{records} acknowledged, {len(failed)} failed, "
          f"{len(read)} read back; {time.monotonic() - started:.0f}s in all")
    assert not missing, f"{len(missing)} acknowledged record(s) lost, e.g. {missing[:10]}"


def _replicas_by_broker(platform: Platform, job: str, topic: str) -> dict[int, int]:
    log = platform.run(job, f"odradek topics --bootstrap-server {platform.bootstrap} "
                            f"--output json describe {topic}")
    described = json.loads(log[log.find("["):])
    counts: dict[int, int] = {}
    for partition in described[0]["partitions"]:
        for broker in partition["replicas"]:
            counts[broker] = counts.get(broker, 0) + 1
    return counts


@pytest.mark.timeout(2400)
def test_rebalance_add_brokers_moves_replicas_onto_a_new_broker_once_approved(
        kube: Kube, images: Images, namespace: str, platform: Platform, backend) -> None:
    platform.install(platform_values(images, backend.storage_class, delete_claim=True))
    _create_topic(kube, namespace, "moves")
    records, rate = 2000, 20.0
    platform.start_acked_load("load", "moves", records, rate)
    platform.acked_so_far("load", at_least=100)

    started = time.monotonic()
    kube.patch_resource(namespace, "brokerclusters", CLUSTER, {"spec": {"replicas": 4}})
    kube.wait_resource(namespace, "brokerclusters", CLUSTER, "to run 4 brokers",
                       lambda c: (c.get("status") or {}).get("readyReplicas") == 4
                       and conditions(c).get("Ready", {}).get("status") == "True",
                       timeout=600)
    print(f"scaled 3 → 4 in {time.monotonic() - started:.0f}s")
    assert 3 not in _replicas_by_broker(platform, "before", "moves"), \
        "replicas moved onto broker 3 without a Rebalance (rebalanceOnScaleUp is off)"

    kube.custom.create_namespaced_custom_object(
        "odradek.dev", "v1beta1", namespace, "rebalances", {
            "apiVersion": "odradek.dev/v1beta1", "kind": "Rebalance",
            "metadata": {"name": "onto-3", "namespace": namespace},
            "spec": {"clusterRef": {"name": CLUSTER}, "mode": "add-brokers", "brokers": [3]}})
    try:
        proposed = kube.wait_resource(
            namespace, "rebalances", "onto-3", "to show a proposal",
            lambda r: (r.get("status") or {}).get("state") == "ProposalReady"
            and ((r["status"].get("proposal") or {}).get("partitionsToMove") or 0) > 0,
            timeout=240)
        proposal = proposed["status"]["proposal"]
        print(f"proposal: {proposal['partitionsToMove']} partition(s), "
              f"{proposal['replicaMoves']} replica move(s), {proposal['dataToMoveBytes']} bytes")
        # add-brokers: replicas move only onto the listed broker.
        assert all(set(m["to"]) - set(m["from"]) <= {3} for m in proposal["moves"]), \
            proposal["moves"][:5]
        assert any(3 in m["to"] for m in proposal["moves"]), proposal["moves"][:5]
        time.sleep(10)  # nothing moves before the approval
        assert 3 not in _replicas_by_broker(platform, "unapproved", "moves")

        states: set[str] = set()
        approvals: list[float] = []

        def approve() -> None:
            approvals.append(time.monotonic())
            kube.patch_resource(namespace, "rebalances", "onto-3", {"metadata": {
                "annotations": {"odradek.dev/rebalance": "approve"}}})

        def done(r: dict[str, Any]) -> bool:
            state = (r.get("status") or {}).get("state")
            states.add(str(state))
            # An approval re-plans; a changed plan is shown, not run, and must be approved
            # again (documented): as a person would, approve the new one (a few times at most).
            ready = conditions(r).get("Ready", {})
            if state == "ProposalReady" and "changed since the proposal" in \
                    str(ready.get("message")) and "odradek.dev/rebalance" not in \
                    (r["metadata"].get("annotations") or {}) and len(approvals) < 4:
                approve()
            pending = (r["metadata"].get("annotations") or {}).get("odradek.dev/rebalance")
            assert pending != "approve" or time.monotonic() - approvals[-1] < 120, (
                "the operator never acted on odradek.dev/rebalance=approve (the annotation is "
                f"still there 120s later, state {state}): an annotation-only change fired no "
                "update handler")
            return state == "Ready" and ready.get("status") == "True"

        approve()
        approved = approvals[0]

        finished = kube.wait_resource(namespace, "rebalances", "onto-3", "to finish the moves",
                                      done, timeout=600, interval=3.0)
        print(f"rebalance Ready {time.monotonic() - approved:.0f}s after the approval "
              f"({len(approvals)} approval(s) needed); states seen: {sorted(states)}; "
              f"{conditions(finished)['Ready'].get('message')}")
        annotations = finished["metadata"].get("annotations") or {}
        assert "odradek.dev/rebalance" not in annotations, annotations
        by_broker = _replicas_by_broker(platform, "after", "moves")
        print(f"replicas of moves per broker: {by_broker}")
        assert by_broker.get(3, 0) > 0, f"broker 3 holds no replica of moves: {by_broker}"
    finally:
        if kube.resource(namespace, "rebalances", "onto-3") is not None:
            kube.delete_resource(namespace, "rebalances", "onto-3")
            kube.wait_gone(namespace, "rebalances", "onto-3", timeout=120)

    load_running = not kube.batch.read_namespaced_job("load", namespace).status.succeeded
    acked, failed = platform.finish_acked_load("load", records, timeout=600)
    read = platform.read_back("verify", "moves")
    missing = sorted(acked - read)
    print(f"acks=all: {len(acked)}/{records} acknowledged, {len(failed)} failed, {len(read)} "
          f"read back (load still running when the rebalance ended: {load_running})")
    assert not missing, f"{len(missing)} acknowledged record(s) lost, e.g. {missing[:10]}"


def _claim_sizes(kube: Kube, namespace: str) -> dict[str, tuple[str, str | None]]:
    """The brokers' data claims: (requested, capacity)."""
    return {c.metadata.name: (c.spec.resources.requests["storage"],
                              (c.status.capacity or {}).get("storage"))
            for c in kube.core.list_namespaced_persistent_volume_claim(namespace).items
            if re.fullmatch(rf"data-{CLUSTER}-\d+", c.metadata.name)}  # not ZooKeeper's


def _template_size(kube: Kube, namespace: str) -> str | None:
    try:
        sts = kube.apps.read_namespaced_stateful_set(CLUSTER, namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return None  # between the orphaning delete and the new apply
        raise
    return next(str(t.spec.resources.requests["storage"])
                for t in sts.spec.volume_claim_templates if t.metadata.name == "data")


@contextmanager
def _expansion_allowed(kube: Kube, name: str) -> Iterator[None]:
    """allowVolumeExpansion on StorageClass ``name`` (a mutable field), put back afterwards."""
    storage = client.StorageV1Api(kube.api_client)
    before = storage.read_storage_class(name).allow_volume_expansion
    storage.patch_storage_class(name, {"allowVolumeExpansion": True})
    try:
        yield
    finally:
        storage.patch_storage_class(name, {"allowVolumeExpansion": before})


def _gib(quantity: str | None) -> float:
    match = re.fullmatch(r"(\d+)(Gi|Mi|Ti)", quantity or "")
    return int(match[1]) * {"Mi": 1 / 1024, "Gi": 1, "Ti": 1024}[match[2]] if match else 0.0


@pytest.mark.timeout(1800)
def test_storage_size_growth_is_refused_without_expansion_then_grows_claims_without_restarts(
        kube: Kube, images: Images, namespace: str, platform: Platform, backend) -> None:
    platform.install(platform_values(images, backend.storage_class))
    _create_topic(kube, namespace, "grow", partitions=3)
    records, rate = 2000, 20.0
    platform.start_acked_load("load", "grow", records, rate)
    platform.acked_so_far("load", at_least=100)
    pods = kube.pod_uids(namespace, BROKER_SELECTOR)
    claims = _claim_sizes(kube, namespace)
    class_name = str(kube.core.read_namespaced_persistent_volume_claim(
        f"data-{CLUSTER}-0", namespace).spec.storage_class_name)
    expandable = client.StorageV1Api(kube.api_client).read_storage_class(
        class_name).allow_volume_expansion
    print(f"claims before: {claims}; StorageClass {class_name} allowVolumeExpansion="
          f"{expandable}")
    assert sorted(claims) == [f"data-{CLUSTER}-{i}" for i in range(3)]

    started = time.monotonic()
    kube.patch_resource(namespace, "brokerclusters", CLUSTER,
                        {"spec": {"storage": {"size": "2Gi"}}})
    if not expandable:
        refused = kube.wait_condition(namespace, "brokerclusters", CLUSTER, "Degraded",
                                      reason="VolumeExpansionUnsupported", timeout=180)
        print(f"refused: {conditions(refused)['Degraded']['message']}")
        assert {n: r for n, (r, _) in _claim_sizes(kube, namespace).items()} == \
            {n: r for n, (r, _) in claims.items()}, "claims patched though the class cannot expand"
        assert _template_size(kube, namespace) == "1Gi"
        assert kube.pod_uids(namespace, BROKER_SELECTOR) == pods

    # Growing for real needs volumes that end up at least that large: the local stack's static
    # PVs are 10Gi, so a bound claim already has the capacity and nothing waits on a resizer.
    # Elsewhere (kind's local-path volumes are exactly 1Gi) only the refusal is checked.
    if all(_gib(capacity) >= 2 for _, capacity in claims.values()):
        with _expansion_allowed(kube, class_name):
            grown = kube.wait_resource(
                namespace, "brokerclusters", CLUSTER, "to grow the volumes to 2Gi",
                lambda c: ((c.get("status") or {}).get("storage") or {}).get("size") == "2Gi"
                and conditions(c).get("Ready", {}).get("status") == "True"
                and _template_size(kube, namespace) == "2Gi", timeout=420, interval=3.0)
        sizes = _claim_sizes(kube, namespace)
        print(f"grown in {time.monotonic() - started:.0f}s: claims {sizes}; storage status "
              f"{grown['status']['storage']}")
        assert all(requested == "2Gi" for requested, _ in sizes.values()), sizes
        assert kube.pod_uids(namespace, BROKER_SELECTOR) == pods, \
            "brokers restarted to grow volumes"
        events = kube.core.list_namespaced_event(namespace).items
        assert any(e.reason == "VolumesExpanded" for e in events), \
            sorted({str(e.reason) for e in events})
    else:
        print(f"bound capacities {claims} are below 2Gi: growth itself not exercised here")

    load_running = not kube.batch.read_namespaced_job("load", namespace).status.succeeded
    acked, failed = platform.finish_acked_load("load", records, timeout=600)
    read = platform.read_back("verify", "grow")
    missing = sorted(acked - read)
    print(f"acks=all: {len(acked)}/{records} acknowledged, {len(failed)} failed, {len(read)} "
          f"read back (load still running after the growth: {load_running})")
    assert not missing, f"{len(missing)} acknowledged record(s) lost, e.g. {missing[:10]}"
