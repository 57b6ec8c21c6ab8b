"""Clients outside the cluster (docs/operations.md): a chart-installed BrokerCluster with a
nodeport listener (SCRAM-SHA-512 over TLS) and a loadbalancer one.

The client is this test process, which runs outside the pod network: on the node's network
(the local stack's namespace; a kind node's host), where only node addresses and node ports
exist, no pod IP or cluster DNS name. It uses librdkafka (confluent-kafka), which verifies the
broker certificate against the address it dials, as any outside client would: every broker
must advertise the node address and its own node port, or the client cannot reach the
partition leaders. The loadbalancer listener renders its Services, and with no load-balancer
controller on the cluster, the cluster says so (ListenersReady False, LoadBalancerPending)
until the listener is dropped, which deletes its Services.
"""

from __future__ import annotations

import base64
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from e2e.conftest import Images
from e2e.kube import Kube, conditions, wait_for
from e2e.platform import CLUSTER, Platform, platform_values

pytestmark = pytest.mark.e2e

USER = "outside"
RECORDS = 300


def _openssl(directory: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True,
                   timeout=60)


def _certificates(directory: Path, namespace: str, node_ips: list[str]) -> dict[str, str]:
    """A CA and the brokers' certificate naming the pods, the bootstrap Service and the nodes'
    addresses (what an outside client of a nodeport listener dials)."""
    _openssl(directory, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.crt", "-days", "2", "-subj", "/CN=e2e listeners CA")
    names = [f"DNS:*.{CLUSTER}-headless.{namespace}.svc.cluster.local",
             f"DNS:{CLUSTER}-bootstrap.{namespace}.svc",
             f"DNS:{CLUSTER}-bootstrap.{namespace}.svc.cluster.local",
             *(f"IP:{ip}" for ip in node_ips)]
    (directory / "broker.ext").write_text(f"subjectAltName={','.join(names)}\n"
                                          "extendedKeyUsage=serverAuth,clientAuth\n")
    _openssl(directory, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out",
             "broker.csr", "-subj", "/CN=odradek broker")
    _openssl(directory, "x509", "-req", "-in", "broker.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "tls.crt", "-days", "2", "-sha256", "-extfile",
             "broker.ext")
    return {name: (directory / name).read_text() for name in ("tls.crt", "tls.key", "ca.crt")}


def _secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def _node_ips(kube: Kube) -> list[str]:
    return sorted(address.address for node in kube.core.list_node().items
                  for address in node.status.addresses if address.type == "InternalIP")


def _node_port(service: Any) -> int:
    return int(service.spec.ports[0].node_port)


def _listener(cluster: dict[str, Any], name: str) -> dict[str, Any]:
    listeners = (cluster.get("status") or {}).get("listeners") or []
    return next((item for item in listeners if item["name"] == name), {})


def _client_config(bootstrap: str, password: str, ca: Path) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": password,
            "ssl.ca.location": str(ca), "socket.timeout.ms": 20000}


def _metadata(config: dict[str, Any]) -> Any:
    """The cluster's metadata as the outside client sees it; None while it cannot get it."""
    try:
        return Producer(config).list_topics(timeout=20)
    except KafkaException:
        return None


def _produce(config: dict[str, Any], topic: str) -> tuple[set[int], dict[str, str]]:
    producer = Producer({**config, "acks": "all", "message.timeout.ms": 120000})
    acked: set[int] = set()
    failed: dict[str, str] = {}

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            acked.add(int(msg.value().decode().split("-", 1)[1]))
        else:
            failed[msg.value().decode()] = str(err)

    for n in range(RECORDS):
        producer.produce(topic, value=f"rec-{n}".encode(), on_delivery=delivered)
        producer.poll(0)
    left = producer.flush(180)
    assert left == 0, f"{left} record(s) still unacknowledged after 180s"
    return acked, failed


def _read_back(config: dict[str, Any], topic: str, timeout: float) -> set[int]:
    consumer = Consumer({**config, "group.id": f"outside-{secrets.token_hex(3)}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    seen: set[int] = set()
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(seen) < RECORDS and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            seen.add(int(msg.value().decode().split("-", 1)[1]))
    finally:
        consumer.close()
    return seen


@pytest.mark.timeout(1800)
def test_a_client_outside_the_pod_network_produces_and_reads_through_node_ports(
        kube: Kube, images: Images, namespace: str, platform: Platform, backend,
        tmp_path: Path) -> None:
    node_ips = _node_ips(kube)
    assert node_ips, "no node reports an InternalIP"
    pem = _certificates(tmp_path, namespace, node_ips)
    (tmp_path / "client-ca.crt").write_text(pem["ca.crt"])
    password = secrets.token_urlsafe(18)
    kube.apply(namespace, [_secret("odradek-tls", pem),
                           _secret("outside-user", {"password": password})])

    started = time.monotonic()
    platform.install(platform_values(
        images, backend.storage_class,
        listeners=[
            {"name": "INTERNAL", "port": 9092, "securityProtocol": "PLAINTEXT"},
            {"name": "EXTERNAL", "port": 9094, "securityProtocol": "SASL_SSL",
             "type": "nodeport"},
            {"name": "PUBLIC", "port": 9095, "securityProtocol": "SASL_SSL",
             "type": "loadbalancer"}],
        interBrokerListener="INTERNAL",
        tls={"secretName": "odradek-tls", "clientAuth": "none"},
        authentication={"mechanisms": ["SCRAM-SHA-512"], "users": [
            {"name": USER, "mechanism": "SCRAM-SHA-512",
             "secretRef": {"name": "outside-user", "key": "password"}}]}))
    print(f"cluster Ready after {time.monotonic() - started:.0f}s")

    # The nodeport listener: a bootstrap and one NodePort Service per broker, each selecting
    # its own pod; the status names node address and bootstrap node port.
    services = {s.metadata.name: s for s in kube.core.list_namespaced_service(namespace).items}
    for broker in range(3):
        service = services[f"{CLUSTER}-external-{broker}"]
        assert service.spec.type == "NodePort"
        assert service.spec.selector["statefulset.kubernetes.io/pod-name"] == f"{CLUSTER}-{broker}"
    kube.wait_resource(
        namespace, "brokerclusters", CLUSTER, "to know the EXTERNAL listener's node addresses",
        lambda c: bool(_listener(c, "EXTERNAL").get("bootstrapServers")
                       and (c["status"].get("scramUsers") or {}).get(USER)), timeout=300)
    # The loadbalancer listener rendered; with no controller it never gets an address.
    cluster = kube.wait_condition(namespace, "brokerclusters", CLUSTER, "ListenersReady",
                                  status="False", reason="LoadBalancerPending", timeout=120)
    external = _listener(cluster, "EXTERNAL")
    boot_port = _node_port(services[f"{CLUSTER}-external-bootstrap"])
    assert external["type"] == "nodeport"
    assert external["addresses"] == [{"host": ip, "port": boot_port} for ip in node_ips]

    assert services[f"{CLUSTER}-public-bootstrap"].spec.type == "LoadBalancer"
    assert f"{CLUSTER}-public-bootstrap" in conditions(cluster)["ListenersReady"]["message"]
    assert _listener(cluster, "PUBLIC")["bootstrapServers"] == ""

    kube.custom.create_namespaced_custom_object("odradek.dev", "v1beta1", namespace, "topics", {
        "apiVersion": "odradek.dev/v1beta1", "kind": "Topic",
        "metadata": {"name": "outside", "namespace": namespace},
        "spec": {"clusterRef": {"name": CLUSTER}, "partitions": 3, "replicationFactor": 3,
                 "config": {"min.insync.replicas": 2}}})
    kube.wait_condition(namespace, "topics", "outside", "Ready", timeout=180)

    config = _client_config(external["bootstrapServers"], password, tmp_path / "client-ca.crt")
    # Every broker the client learns of is a node address and that broker's own node port.
    metadata = wait_for("the brokers' advertised addresses through the bootstrap node port",
                        lambda: _metadata(config), timeout=120, interval=5.0)
    advertised = {b.id: (b.host, b.port) for b in metadata.brokers.values()}
    assert {broker: port for broker, (_, port) in advertised.items()} == {
        broker: _node_port(services[f"{CLUSTER}-external-{broker}"])
        for broker in range(3)}, advertised
    assert {host for host, _ in advertised.values()} <= set(node_ips), advertised

    started = time.monotonic()
    acked, failed = _produce(config, "outside")
    assert not failed, f"{len(failed)} failed: {dict(list(failed.items())[:3])}"
    assert acked == set(range(RECORDS))
    read = _read_back(config, "outside", timeout=120)
    assert read == set(range(RECORDS)), f"missing: {sorted(set(range(RECORDS)) - read)[:10]}"
    print(f"{RECORDS} records produced (acks=all) and read back from outside in "
          f"{time.monotonic() - started:.0f}s through {external['bootstrapServers']}")

    # Dropping the loadbalancer listener deletes its Services and ends the wait for it.
    named = cluster["spec"]["listeners"]["named"]
    kube.patch_resource(namespace, "brokerclusters", CLUSTER, {"spec": {"listeners": {
        "named": [item for item in named if item["name"] != "PUBLIC"]}}})
    kube.wait_condition(namespace, "brokerclusters", CLUSTER, "ListenersReady",
                        reason="AddressesKnown", timeout=180)
    left = [s.metadata.name for s in kube.core.list_namespaced_service(namespace).items
            if s.metadata.name.startswith(f"{CLUSTER}-public-")]
    assert left == [], f"the PUBLIC listener's Services were not deleted: {left}"
