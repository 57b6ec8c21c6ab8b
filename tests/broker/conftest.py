"""Broker tests run a real broker in-process (its own loop thread) on a real ZooKeeper."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from odradek.local_cluster import ZooKeeperProcess

from .inprocess import InProcessBroker, broker_config


@pytest.fixture(scope="module")
def shared_broker(
    zookeeper: ZooKeeperProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[InProcessBroker]:
    """One broker for a whole test module (tests use their own topic names)."""
    connect = f"{zookeeper.connect}/t-{uuid.uuid4().hex[:12]}"
    broker = InProcessBroker(broker_config(connect, tmp_path_factory.mktemp("logs")))
    broker.start()
    yield broker
    broker.stop()


BrokerStarter = Callable[..., InProcessBroker]


@pytest.fixture
def start_broker(zk_connect: str, tmp_path: Path) -> Iterator[BrokerStarter]:
    """Start brokers with overrides: ``start_broker(message_max_bytes="2000")``."""
    started: list[InProcessBroker] = []

    def start(broker_id: int = 0, **overrides: str) -> InProcessBroker:
        config = broker_config(zk_connect, tmp_path / f"logs-{broker_id}", broker_id, **overrides)
        broker = InProcessBroker(config)
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.stop()


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def wait_until_true(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll a condition the test cannot be notified about (bounded; fails with ``what``)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


from .security_support import certs, secure_broker  # noqa: E402, F401  (shared fixtures)
