"""Three broker processes whose inter-broker listener is SASL_SSL (SCRAM-SHA-512): followers
fetch, and the controlled shutdown is asked, over TLS after authenticating as the broker
user; clients use a separate PLAINTEXT listener. acks=all with min.insync.replicas=3 can
only succeed if both followers replicate over the secured listener."""

from __future__ import annotations

import json
from pathlib import Path

from odradek.client.sync import AdminClient
from odradek.local_cluster import BrokerProcess, free_port
from tests.harness.certs import make_certs
from tests.harness.fixtures import BrokerFactory
from tests.harness.zk import zk_client

from .support import create_topic, producer, read_all, wait_for_isr

JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="broker" password="broker-secret";')


def test_replication_over_a_sasl_ssl_inter_broker_listener(
        broker_factory: BrokerFactory, zk_connect: str, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    brokers: list[BrokerProcess] = []
    for broker_id in range(3):
        if broker_id == 1:  # the brokers' own user, once one broker answers admin requests
            admin = AdminClient(f"127.0.0.1:{brokers[0].port}")
            try:
                admin.alter_user_scram_credentials(
                    upsert=[("broker", "SCRAM-SHA-512", "broker-secret")])
            finally:
                admin.close()
        client_port, internal_port = free_port(), free_port()
        process = broker_factory(
            broker_id, wait=False,
            listeners=f"CLIENT://127.0.0.1:{client_port},INTERNAL://127.0.0.1:{internal_port}",
            listener_security_protocol_map="CLIENT:PLAINTEXT,INTERNAL:SASL_SSL",
            inter_broker_listener_name="INTERNAL",
            sasl_enabled_mechanisms="SCRAM-SHA-512",
            sasl_mechanism_inter_broker_protocol="SCRAM-SHA-512",
            sasl_jaas_config=JAAS,
            ssl_keystore_location=str(certs.broker_keystore),
            ssl_truststore_location=str(certs.ca),
            replica_fetch_backoff_ms="200",
        )
        process.port = client_port  # what readiness probes and clients use
        process.wait_ready(60)
        brokers.append(process)
    bootstrap = f"127.0.0.1:{brokers[0].port}"
    create_topic(bootstrap, "secured", replication=3, config={"min.insync.replicas": "3"})
    with zk_client(zk_connect) as zk:
        state = wait_for_isr(zk, "secured", 3, timeout=60)
        assert sorted(state["isr"]) == [0, 1, 2]
        registered = json.loads(zk.get("/brokers/ids/1")[0])
        assert registered["listener_security_protocol_map"] == {
            "CLIENT": "PLAINTEXT", "INTERNAL": "SASL_SSL"}
        stored = json.loads(zk.get("/config/users/broker")[0])
        assert set(stored["config"]) == {"SCRAM-SHA-512"}
        assert "broker-secret" not in json.dumps(stored)
    sender = producer(bootstrap)
    errors: list[object] = []
    for i in range(300):
        sender.produce("secured", value=b"s%03d" % i,
                       on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert sender.flush(60) == 0
    assert errors == []
    assert sorted(read_all(bootstrap, "secured")) == [b"s%03d" % i for i in range(300)]
    # Leaving: the controlled shutdown is asked of the controller over the same listener.
    leaving = next(b for b in brokers if b.broker_id != _controller(zk_connect))
    leaving.stop()
    log = leaving.log_path.read_text(errors="replace")
    assert f"controlled shutdown of broker {leaving.broker_id} succeeded" in log, log[-3000:]
    assert "failed authentication" not in log


def _controller(zk_connect: str) -> int:
    with zk_client(zk_connect) as zk:
        return int(json.loads(zk.get("/controller")[0])["brokerid"])
