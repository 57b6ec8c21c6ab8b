"""One in-process broker, real Kafka clients: what the broker records and serves.

The broker's own registry (``broker.metrics``) is read in-process; ``/metrics`` is scraped
over HTTP on the port ``metrics.port`` asked for. Multi-broker behaviour (replication,
controller failover, a real Prometheus) is in ``test_cluster_live.py``.
"""

from __future__ import annotations

import time
import urllib.request

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from odradek.local_cluster import free_port
from odradek.metrics import BrokerMetrics
from odradek.metrics.lag import LAG
from tests.broker.conftest import BrokerStarter, wait_until_true
from tests.broker.inprocess import InProcessBroker


def _metrics(broker: InProcessBroker) -> BrokerMetrics:
    assert broker.broker is not None
    return broker.broker.metrics


def _create(bootstrap: str, topic: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def _produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, f"value-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def test_the_broker_serves_its_registry_on_metrics_port(start_broker: BrokerStarter,
                                                      topic_name: str) -> None:
    port = free_port()
    broker = start_broker(metrics_port=str(port), metrics_topic_labels_enable="true",
                          log_flush_interval_messages="1")
    metrics = _metrics(broker)
    assert metrics.port == port
    assert broker.broker is not None and broker.broker.metrics_url == \
        f"http://127.0.0.1:{port}/metrics"
    _create(broker.bootstrap, topic_name)
    _produce(broker.bootstrap, topic_name, 100)

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        text = response.read().decode()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    assert samples[("odradek_topic_messages_in_total", (("topic", topic_name),))] == 100
    assert samples[("odradek_broker_messages_in_total", ())] >= 100
    assert samples[("odradek_log_end_offset", (("partition", "0"), ("topic", topic_name)))] == 100
    assert samples[("odradek_controller_active", ())] == 1
    assert samples[("odradek_zookeeper_session_state", (("state", "connected"),))] == 1
    assert samples[("odradek_connections", (("listener", "PLAINTEXT"),))] >= 0
    produce = ("odradek_requests_total", (("api", "Produce"),))
    assert samples[produce] >= 1
    assert any(name == "odradek_zookeeper_request_duration_seconds_count"
               for name, _ in samples)
    assert samples[("odradek_log_flush_duration_seconds_count", ())] >= 1
    assert samples[("odradek_log_fsync_duration_seconds_count", ())] >= 1
    assert samples[("odradek_log_recovery_duration_seconds", ())] >= 0
    assert samples[("odradek_purgatory_size", (("operation", "fetch"),))] >= 0


def test_requests_errors_and_traffic_are_recorded_once_per_batch(
        start_broker: BrokerStarter, topic_name: str) -> None:
    broker = start_broker()
    metrics = _metrics(broker)
    assert metrics.port is None  # metrics.port=0: no server, the registry still records
    _create(broker.bootstrap, topic_name)
    before = metrics.sample("odradek_broker_messages_in_total") or 0.0
    _produce(broker.bootstrap, topic_name, 500)
    assert metrics.sample("odradek_broker_messages_in_total") == before + 500
    assert (metrics.sample("odradek_broker_bytes_in_total") or 0) > 500 * len(b"value-0")
    # per-topic series are off by default: bounded cardinality
    assert metrics.sample("odradek_topic_messages_in_total", {"topic": topic_name}) is None

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-wiring",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic_name, 0, 0)])
    got = 0
    deadline = time.monotonic() + 30
    while got < 500 and time.monotonic() < deadline:
        got += len(consumer.consume(500, 1.0))
    consumer.close()
    assert got == 500
    assert (metrics.sample("odradek_broker_bytes_out_total") or 0) > 500 * len(b"value-0")
    # a request is observed once its bytes are written: the client may have read them first
    wait_until_true(lambda: (metrics.sample("odradek_requests_total", {"api": "Fetch"}) or 0)
                    >= 1, 10, "a Fetch counted")
    fetches = metrics.sample("odradek_requests_total", {"api": "Fetch"})
    assert metrics.sample("odradek_request_phase_duration_seconds_count",
                          {"api": "Fetch", "phase": "remote"}) == fetches

    # Deleting a topic that does not exist: an error code in the response, counted once.
    wanted = {"api": "DeleteTopics", "error": "UNKNOWN_TOPIC_OR_PARTITION"}
    assert metrics.sample("odradek_request_errors_total", wanted) is None
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    with pytest.raises(Exception, match="UNKNOWN_TOPIC_OR_PART"):
        admin.delete_topics([f"{topic_name}-missing"])[f"{topic_name}-missing"].result(30)
    wait_until_true(lambda: metrics.sample("odradek_request_errors_total", wanted) == 1,
                    10, "the error counted")


def test_error_codes_of_pre_encoded_responses_are_counted(start_broker: BrokerStarter,
                                                        topic_name: str) -> None:
    """Fetch and OffsetCommit responses are encoded by their handlers, not by kio: their
    error codes are counted all the same."""
    broker = start_broker(auto_create_topics_enable="false")
    metrics = _metrics(broker)
    _create(broker.bootstrap, topic_name, partitions=1)
    _produce(broker.bootstrap, topic_name, 10)
    commit_error = {"api": "OffsetCommit", "error": "UNKNOWN_TOPIC_OR_PARTITION"}
    fetch_error = {"api": "Fetch", "error": "OFFSET_OUT_OF_RANGE"}
    assert metrics.sample("odradek_request_errors_total", commit_error) is None
    assert metrics.sample("odradek_request_errors_total", fetch_error) is None

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-errors",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):  # no partition 3
        consumer.commit(offsets=[TopicPartition(topic_name, 0, 5),
                                 TopicPartition(topic_name, 3, 5)], asynchronous=False)
    wait_until_true(lambda: metrics.sample("odradek_request_errors_total", commit_error) == 1,
                    10, "the OffsetCommit error counted once (the other partition succeeded)")
    consumer.assign([TopicPartition(topic_name, 0, 1000)])  # past the end: reset to earliest
    got = 0
    deadline = time.monotonic() + 30
    while got < 10 and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(10, 1.0) if m.error() is None)
    consumer.close()
    assert got == 10
    wait_until_true(lambda: (metrics.sample("odradek_request_errors_total", fetch_error)
                             or 0) >= 1, 10, "the Fetch error counted")
    assert metrics.sample("odradek_request_errors_total",
                          {"api": "OffsetCommit", "error": "NONE"}) is None


def test_consumer_lag_comes_from_the_coordinator(start_broker: BrokerStarter,
                                                 topic_name: str) -> None:
    broker = start_broker(auto_create_topics_enable="false")
    metrics = _metrics(broker)
    _create(broker.bootstrap, topic_name, partitions=1)
    _produce(broker.bootstrap, topic_name, 50)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-lag",
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic_name, 0, 20)], asynchronous=False)
    consumer.close()  # no live member left: the group is Empty and still reported
    row = {"group": "g-lag", "topic": topic_name, "partition": "0"}
    wait_until_true(lambda: metrics.sample(LAG.name, row) == 30, 10, "lag 50 - 20")
    assert metrics.sample("odradek_consumer_group_committed_offset", row) == 20
    assert metrics.sample("odradek_consumer_group_log_end_offset", row) == 50
    assert metrics.sample("odradek_consumer_group_state",
                          {"group": "g-lag", "state": "Empty"}) == 1
    assert metrics.sample("odradek_consumer_group_members", {"group": "g-lag"}) == 0
    seconds = metrics.sample("odradek_consumer_group_lag_seconds", row)
    assert seconds is not None and 0 <= seconds < 120


@pytest.mark.parametrize("value", ["-1", "70000"])
def test_a_bad_metrics_port_is_a_config_error(value: str) -> None:
    from odradek.config import BrokerConfig, ConfigError
    from odradek.config_sections import BrokerSections
    from odradek.metrics.options import MetricsOptions

    with pytest.raises((ConfigError, ValueError)):
        config = BrokerConfig.from_properties({"metrics.port": value})
        MetricsOptions.from_section(BrokerSections.from_config(config).metrics)


def test_every_metrics_option_has_a_documented_broker_config() -> None:
    import dataclasses

    from odradek.config import BROKER_CONFIGS, BrokerConfig
    from odradek.config_sections import MetricsConfig
    from odradek.metrics.options import CONFIG_KEYS, MetricsOptions

    read = {f.metadata.get("config") for f in dataclasses.fields(MetricsConfig)}
    for key in CONFIG_KEYS:
        assert key in BROKER_CONFIGS and len(BROKER_CONFIGS[key].doc) > 20, key
        assert key in read, f"MetricsConfig does not read {key}"
    config = BrokerConfig.from_properties({key: "7" if key != "metrics.topic.labels.enable"
                                           else "true" for key in CONFIG_KEYS})
    options = MetricsOptions.from_section(MetricsConfig.from_config(config))
    for key, option in CONFIG_KEYS.items():
        assert getattr(options, option) == (True if option == "topic_labels" else 7), key


def test_transaction_metrics_follow_real_transactions(start_broker: BrokerStarter,
                                                      topic_name: str) -> None:
    """librdkafka's transactional producer: started/committed/aborted counters, marker
    latency and ids by state at the coordinator; open transactions, their age and (with
    per-topic labels on) the LSO lag at the partition's leader."""
    import uuid

    broker = start_broker(metrics_topic_labels_enable="true")
    metrics = _metrics(broker)
    _create(broker.bootstrap, topic_name, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                         "transactional.id": f"m-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for commit in (True, False):
        producer.begin_transaction()
        producer.produce(topic_name, b"x", partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic_name, b"open", partition=0)
    producer.flush(30)
    labels = {"topic": topic_name, "partition": "0"}
    wait_until_true(lambda: metrics.sample("odradek_broker_open_transactions") == 1, 10,
                    "the open transaction counted")
    assert metrics.sample("odradek_transactions_started_total") == 3
    assert metrics.sample("odradek_transactions_committed_total") == 1
    assert metrics.sample("odradek_transactions_aborted_total") == 1
    assert metrics.sample("odradek_transactions_timed_out_total") == 0
    assert metrics.sample("odradek_transaction_marker_write_duration_seconds_count") == 2
    assert metrics.sample("odradek_transaction_coordinator_transactional_ids",
                          {"state": "Ongoing"}) == 1
    age = metrics.sample("odradek_broker_oldest_open_transaction_age_seconds")
    assert age is not None and 0 <= age < 60
    # offsets 0-1 committed, 2-3 aborted, 4 open: the LSO stays at 4, one record behind
    assert metrics.sample("odradek_partition_last_stable_offset_lag_records", labels) == 1
    producer.commit_transaction(30)
    wait_until_true(lambda: metrics.sample("odradek_broker_open_transactions") == 0, 10,
                    "the committed transaction no longer open")
    assert metrics.sample("odradek_broker_oldest_open_transaction_age_seconds") == 0
    assert metrics.sample("odradek_partition_last_stable_offset_lag_records", labels) == 0
    assert metrics.sample("odradek_transactions_committed_total") == 2
