"""``format("odradek")`` over a SASL_SSL listener: a batch write and a batch read through a
real broker, with Kafka's client properties (``kafka.security.protocol``,
``kafka.ssl.truststore.location``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``),
as a job written for Spark's own Kafka connector passes them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from odradek.client import AdminClient, NewTopic
from odradek.local_cluster import BrokerProcess, ZooKeeperProcess, free_port
from tests.harness.certs import CertSet, make_certs
from tests.harness.fixtures import SINGLE_NODE_DEFAULTS, attach_process_logs

USER, PASSWORD = "spark-job", "spark-secret"


@pytest.fixture(scope="module")
def secure(zookeeper: ZooKeeperProcess, tmp_path_factory: pytest.TempPathFactory,
           request: pytest.FixtureRequest) -> Iterator[tuple[str, str, CertSet]]:
    """(PLAINTEXT bootstrap for set-up, SASL_SSL bootstrap, certificates)."""
    scratch = tmp_path_factory.mktemp("secure-spark")
    certs = make_certs(scratch / "certs")
    plain, secured = free_port(), free_port()
    broker = BrokerProcess(0, plain, scratch / "broker",
                           f"{zookeeper.connect}/spark-sec-{uuid.uuid4().hex[:8]}", {
                               **SINGLE_NODE_DEFAULTS,
                               "listeners": f"PLAINTEXT://127.0.0.1:{plain},"
                                            f"SECURE://127.0.0.1:{secured}",
                               "listener.security.protocol.map":
                                   "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
                               "inter.broker.listener.name": "PLAINTEXT",
                               "ssl.keystore.location": str(certs.broker_keystore),
                               "sasl.enabled.mechanisms": "SCRAM-SHA-512"})
    broker.start()
    try:
        broker.wait_ready(60)
        admin = AdminClient(broker.bootstrap)
        try:
            admin.alter_user_scram_credentials(upsert=[(USER, "SCRAM-SHA-512", PASSWORD)])
        finally:
            admin.close()
        yield broker.bootstrap, f"127.0.0.1:{secured}", certs
    finally:
        attach_process_logs(request, [broker])
        broker.stop()


def security_options(certs: CertSet, password: str = PASSWORD) -> dict[str, str]:
    return {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.ssl.truststore.location": str(certs.ca),
        "kafka.ssl.truststore.type": "PEM",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                  f'required username="{USER}" password="{password}";',
    }


def read(spark: Any, bootstrap: str, topic: str, options: dict[str, str]) -> Any:
    reader = (spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_write_and_read_over_sasl_ssl(spark: Any, secure: tuple[str, str, CertSet]
                                            ) -> None:
    plain, bootstrap, certs = secure
    topic = f"secure-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(plain)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        admin.close()
    rows = [(f"k{i}", f"value-{i}") for i in range(50)]
    writer = (spark.createDataFrame(rows, "key string, value string").write.format("odradek")
              .option("kafka.bootstrap.servers", bootstrap).option("topic", topic))
    for key, value in security_options(certs).items():
        writer = writer.option(key, value)
    writer.mode("append").save()

    got = read(spark, bootstrap, topic, security_options(certs)).selectExpr(
        "CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v").collect()
    assert sorted((r.k, r.v) for r in got) == sorted(rows)


def test_a_wrong_password_fails_the_query_with_the_brokers_answer(
        spark: Any, secure: tuple[str, str, CertSet]) -> None:
    _plain, bootstrap, certs = secure
    options = {**security_options(certs, "wrong"), "fetchOffset.numRetries": "0"}
    with pytest.raises(Exception, match=r"(?i)authentication"):
        read(spark, bootstrap, "any-topic", options).collect()
