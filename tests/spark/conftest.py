"""Fixtures for the Spark suite: one SparkSession for the whole run (a JVM start costs
seconds), one odradek broker per module, and Spark's own Kafka connector when Maven Central
can provide it (tests that compare against it skip, with the reason, otherwise)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.local_cluster import BrokerProcess, ZooKeeperProcess, free_port
from tests.harness.fixtures import SINGLE_NODE_DEFAULTS, attach_process_logs
from tests.harness.spark_kafka import SparkKafkaConnector


@pytest.fixture(scope="session")
def kafka_connector() -> SparkKafkaConnector:
    connector = SparkKafkaConnector()
    connector.jars()
    return connector


@pytest.fixture(scope="session")
def spark(kafka_connector: SparkKafkaConnector) -> Iterator[Any]:
    from odradek.spark.session import local_session

    session = local_session("odradek-tests", jars=kafka_connector.jars() or [],
                            conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture
def kafka_jars(kafka_connector: SparkKafkaConnector) -> list[str]:
    jars = kafka_connector.jars()
    if jars is None:
        pytest.skip(f"Spark's Kafka connector unavailable: {kafka_connector.unavailable_reason}")
    return jars


@pytest.fixture(scope="module")
def spark_broker(zookeeper: ZooKeeperProcess, tmp_path_factory: pytest.TempPathFactory,
                 request: pytest.FixtureRequest) -> Iterator[BrokerProcess]:
    """One odradek broker shared by a module's tests (each test uses its own topics), with
    its ``/metrics`` endpoint (``metrics_url``)."""
    scratch = tmp_path_factory.mktemp("spark-broker")
    broker = BrokerProcess(0, free_port(), scratch,
                           f"{zookeeper.connect}/spark-{uuid.uuid4().hex[:8]}",
                           dict(SINGLE_NODE_DEFAULTS), metrics_port=free_port())
    broker.start()
    try:
        broker.wait_ready(60)
        yield broker
    finally:
        attach_process_logs(request, [broker])
        broker.stop()


@pytest.fixture(scope="module")
def bootstrap(spark_broker: BrokerProcess) -> str:
    return spark_broker.bootstrap


TopicFactory = Callable[..., str]


@pytest.fixture
def new_topic(bootstrap: str) -> TopicFactory:
    """``new_topic(partitions=3, **config)`` creates a uniquely named topic."""
    from odradek.client import AdminClient, NewTopic

    def create(partitions: int = 3, **config: str) -> str:
        name = f"t-{uuid.uuid4().hex[:10]}"
        admin = AdminClient(bootstrap)
        try:
            admin.create_topics([NewTopic(name, partitions, 1,
                                          {k.replace("_", "."): v for k, v in config.items()})])
        finally:
            admin.close()
        return name

    return create


REPO = Path(__file__).resolve().parents[2]
