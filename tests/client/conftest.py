"""Targets for the client suite: Apache Kafka 3.9 (reference) and odradek's broker.

``target`` is parametrized over both; odradek is skipped (with the reason) while its broker
cannot serve clients, so the same tests re-run unchanged once it can. Apache Kafka is one
broker per session on the shared session ZooKeeper (its own chroot), started through
``tests/harness/apache_kafka.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from odradek.local_cluster import ZooKeeperProcess, free_port
from tests.harness.apache_kafka import ApacheKafka, KafkaBrokerProcess


@dataclass
class Target:
    name: str
    bootstrap: str


@pytest.fixture(scope="session")
def apache_kafka(zookeeper: ZooKeeperProcess, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[KafkaBrokerProcess]:
    kafka = ApacheKafka()
    if kafka.fetch_jars() is None:
        pytest.skip(f"Apache Kafka unavailable: {kafka.unavailable_reason}")
    scratch = tmp_path_factory.mktemp("apache-kafka")
    broker = kafka.broker(f"{zookeeper.connect}/ak-{uuid.uuid4().hex[:8]}", free_port(),
                          scratch / "logs", overrides={"num.partitions": "3"})
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(params=["apache", "odradek"])
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "apache":
        broker = request.getfixturevalue("apache_kafka")
        return Target("apache", broker.bootstrap)
    broker = request.getfixturevalue("broker")
    return Target("odradek", broker.bootstrap)


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, name: str, partitions: int = 3, **config: str) -> str:
    from odradek.client import AdminClient, NewTopic

    admin = AdminClient(bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1, config)])
    finally:
        admin.close()
    return name


REPO = Path(__file__).resolve().parents[2]
