"""A replica fetcher survives an unexpected error: logged, counted, backed off, resumed.

Two in-process brokers on real ZooKeeper replicate a topic; one fetch of the follower's
fetcher raises an error no handler expects (the stand-in for a bug). Before the fix the
fetcher task ended silently and replication from that leader stopped for good, so the
follower fell out of the ISR and acks=all could not complete at min.insync.replicas=2.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.replication import fetcher as fetcher_module
from odradek.replication.fetcher import MAX_FAILURE_BACKOFF_S, ReplicaFetcher, failure_backoff

from .conftest import BrokerStarter, wait_until_true


def test_failure_backoff_doubles_from_the_base_and_is_capped() -> None:
    assert [failure_backoff(0.5, n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert failure_backoff(0.5, 10) == MAX_FAILURE_BACKOFF_S
    assert failure_backoff(0.5, 10_000) == MAX_FAILURE_BACKOFF_S  # no overflow


def test_an_unexpected_fetcher_error_is_logged_counted_and_replication_resumes(
    start_broker: BrokerStarter, topic_name: str, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = start_broker(0, replica_fetch_backoff_ms="100")
    second = start_broker(1, replica_fetch_backoff_ms="100")
    bootstrap = f"{first.bootstrap},{second.bootstrap}"
    real_fetch = ReplicaFetcher._fetch
    injected: list[int] = []

    async def fetch_failing_once(self: ReplicaFetcher, *args: Any, **kwargs: Any) -> Any:
        if not injected:
            injected.append(self.leader)
            raise RuntimeError("injected fetcher bug")
        return await real_fetch(self, *args, **kwargs)

    # Before the topic exists: a fetcher that entered _fetch goes on fetching from within
    # it (each answer sends the next Fetch), so a patch made once the follower had started
    # would never run (the test then failed whenever the follower was quicker than it).
    monkeypatch.setattr(ReplicaFetcher, "_fetch", fetch_failing_once)
    caplog.set_level(logging.ERROR, logger=fetcher_module.__name__)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(topic_name, 1, replica_assignment=[[0, 1]],
                     config={"min.insync.replicas": "2"})
    admin.create_topics([topic])[topic_name].result(30)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "message.timeout.ms": 20_000})
    delivered: list[Any] = []
    for index in range(20):
        producer.produce(topic_name, b"%d" % index,
                         on_delivery=lambda err, _msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None] * 20, f"acks=all deliveries failed: {delivered}"

    assert injected == [0], "the injected failure never ran"
    failures = [r for r in caplog.records if "failed unexpectedly" in r.getMessage()]
    assert failures and failures[0].exc_info is not None, "no log line with the traceback"
    follower_metrics = second.broker.metrics if second.broker is not None else None
    assert follower_metrics is not None
    wait_until_true(
        lambda: follower_metrics.sample("odradek_replica_fetcher_failures_total") == 1,
        5, "the follower's fetcher failure counted once")
