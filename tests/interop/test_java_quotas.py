"""Client quotas with Apache Kafka's kafka-configs (AlterClientQuotas, DescribeClientQuotas).

``kafka-configs --entity-type clients --alter --add-config producer_byte_rate=...`` sets a
client-id quota (and the default, ``--entity-default``), ``--describe`` lists it, and
``--delete-config`` removes it; a running librdkafka producer with that client id is
throttled within seconds (throttle_time_ms in its statistics) and no longer once removed.
Runs against Apache Kafka too (``ODRADEK_INTEROP_TARGET=apache``).
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer

from tests.harness.apache_kafka import CONFIG_COMMAND, ApacheKafka
from tests.interop.conftest import Target
from tests.interop.test_java_tools import run_tool

pytestmark = pytest.mark.java


def _configs(kafka: ApacheKafka, target: Target, *args: str) -> str:
    return run_tool(kafka, CONFIG_COMMAND, "--bootstrap-server", target.bootstrap,
                    "--entity-type", "clients", *args)


def test_kafka_configs_sets_describes_and_deletes_client_quotas(
    target: Target, apache_kafka: ApacheKafka
) -> None:
    client = f"quota-{uuid.uuid4().hex[:8]}"
    out = _configs(apache_kafka, target, "--entity-name", client, "--alter", "--add-config",
                   "producer_byte_rate=1048576,consumer_byte_rate=2097152")
    assert f"Completed updating config for client {client}." in out, out
    out = _configs(apache_kafka, target, "--entity-default", "--alter", "--add-config",
                   "request_percentage=200")
    assert "Completed updating default config for client" in out, out
    try:
        text = _configs(apache_kafka, target, "--entity-name", client, "--describe")
        assert f"Quota configs for client-id '{client}' are" in text, text
        assert "producer_byte_rate=1048576.0" in text and "consumer_byte_rate=2097152.0" in text
        text = _configs(apache_kafka, target, "--entity-default", "--describe")
        assert "request_percentage=200.0" in text, text
        assert client not in text
        listed = _configs(apache_kafka, target, "--describe")  # every named client id
        assert client in listed, listed
        proc = apache_kafka.run_java_tool(
            CONFIG_COMMAND, ["--bootstrap-server", target.bootstrap, "--entity-type", "clients",
                             "--entity-name", client, "--alter", "--add-config",
                             "producer_byte_rate=-5"], 90)
        assert proc.returncode != 0, proc.stdout
    finally:
        _configs(apache_kafka, target, "--entity-name", client, "--alter", "--delete-config",
                 "producer_byte_rate,consumer_byte_rate")
        _configs(apache_kafka, target, "--entity-default", "--alter", "--delete-config",
                 "request_percentage")
    text = _configs(apache_kafka, target, "--entity-name", client, "--describe")
    assert "producer_byte_rate" not in text, text


def test_kafka_configs_throttles_a_running_producer_within_seconds(
    target: Target, apache_kafka: ApacheKafka
) -> None:
    client = f"live-{uuid.uuid4().hex[:8]}"
    topic = target.create_topic(prefix="quota")
    throttles: list[tuple[float, int]] = []  # (when, max throttle ms in the last interval)

    def stats(text: str) -> None:
        for info in json.loads(text)["brokers"].values():
            if info["nodeid"] >= 0:
                throttles.append((time.monotonic(), info["throttle"]["max"]))

    producer = Producer({"bootstrap.servers": target.bootstrap, "client.id": client,
                         "linger.ms": 5, "batch.size": 65536,
                         "queue.buffering.max.messages": 2000,
                         "statistics.interval.ms": 500, "stats_cb": stats})
    stop = threading.Event()

    def produce() -> None:
        sent, deadline = 0, time.monotonic() + 60
        while not stop.is_set() and sent < 5_000_000 and time.monotonic() < deadline:
            try:
                producer.produce(topic, b"p" * 1000)
                sent += 1
            except BufferError:
                producer.poll(0.005)
            producer.poll(0)
        producer.flush(60)

    worker = threading.Thread(target=produce)
    worker.start()
    try:
        time.sleep(2)
        _configs(apache_kafka, target, "--entity-name", client, "--alter", "--add-config",
                 "producer_byte_rate=262144")
        applied = time.monotonic()
        deadline = applied + 15
        while not any(t > applied and ms > 0 for t, ms in throttles):
            assert time.monotonic() < deadline, "the quota did not throttle the producer"
            time.sleep(0.1)
        print(f"throttled {min(t for t, ms in throttles if t > applied and ms > 0) - applied:.1f}"
              " s after kafka-configs returned")
        _configs(apache_kafka, target, "--entity-name", client, "--alter", "--delete-config",
                 "producer_byte_rate")
        removed = time.monotonic()
        # A throttle decided before the removal runs out within a second (one quota window);
        # the statistics intervals after that report none.
        deadline = removed + 15
        while not any(t > removed + 2 for t, _ in throttles):
            assert time.monotonic() < deadline, "no statistics after the removal"
            time.sleep(0.1)
        after = [ms for t, ms in throttles if t > removed + 1.6]
        assert max(after) == 0, after
    finally:
        stop.set()
        worker.join(90)
