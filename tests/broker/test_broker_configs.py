"""Dynamic broker configs through a real admin client (librdkafka) and a real ZooKeeper:
storage in Kafka's layout, validation, DescribeConfigs sources and synonyms, live effect."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kio.schema.describe_configs.v4 import request as describing
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1 import request as altering
from kio.static.primitive import i8

from odradek.local_cluster import ZooKeeperProcess
from tests.harness.zk import zk_client

from .conftest import wait_until_true
from .inprocess import InProcessBroker, broker_config
from .wire import WireClient

BROKER = i8(4)
TOPIC = i8(2)


class Refused(Exception):
    """The broker answered an error code (its name and the message are in the text)."""


@pytest.fixture
def broker(zookeeper: ZooKeeperProcess, tmp_path: Any) -> Iterator[InProcessBroker]:
    """A broker of its own (dynamic configs are cluster-wide state), with one static key."""
    import uuid

    connect = f"{zookeeper.connect}/dyn-{uuid.uuid4().hex[:10]}"
    started = InProcessBroker(broker_config(connect, tmp_path / "logs",
                                            log_cleaner_backoff_ms="20000"))
    started.start()
    yield started
    started.stop()


def _admin(broker: InProcessBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _set(broker: InProcessBroker, name: str, *entries: tuple[str, str | None]) -> None:
    """IncrementalAlterConfigs on the wire: librdkafka cannot name the cluster default
    (the empty resource name); DELETE where the value is None."""
    body = altering.IncrementalAlterConfigsRequest(validate_only=False, resources=(
        altering.AlterConfigsResource(resource_type=BROKER, resource_name=name, configs=tuple(
            altering.AlterableConfig(name=key, config_operation=i8(0 if value else 1),
                                     value=value)
            for key, value in entries)),))
    with WireClient(broker.port) as client:
        result = client.request(body).responses[0]
    if result.error_code != ErrorCode.none:
        raise Refused(f"{ErrorCode(result.error_code).name.upper()}: {result.error_message}")


def _describe(client: AdminClient, name: str) -> dict[str, Any]:
    resource = ConfigResource(ConfigResource.Type.BROKER, name)
    return dict(client.describe_configs([resource])[resource].result(20))


def _describe_wire(broker: InProcessBroker, name: str, kind: i8 = BROKER) -> dict[str, Any]:
    """DescribeConfigs v4 on the wire (librdkafka keys synonyms by name, so the layers of
    one key collapse into one; and it cannot name the cluster default)."""
    body = describing.DescribeConfigsRequest(include_synonyms=True, resources=(
        describing.DescribeConfigsResource(resource_type=kind, resource_name=name,
                                           configuration_keys=None),))
    with WireClient(broker.port) as client:
        result = client.request(body).results[0]
    assert result.error_code == ErrorCode.none, result
    return {entry.name: entry for entry in result.configs}


def _effective(broker: InProcessBroker) -> Any:
    assert broker.broker is not None
    return broker.broker.services.config


def test_broker_and_default_configs_are_stored_layered_and_applied(
    broker: InProcessBroker,
) -> None:
    client = _admin(broker)
    _set(broker, "0", ("log.cleaner.threads", "2"))
    _set(broker, "", ("log.cleaner.threads", "3"), ("log.retention.ms", "3600000"),
         ("leader.replication.throttled.rate", "1000000"))
    connect = broker.config["zookeeper.connect"]
    with zk_client(connect) as zk:
        stored = json.loads(zk.get("/config/brokers/0")[0])
        assert stored == {"version": 1, "config": {"log.cleaner.threads": "2"}}
        default = json.loads(zk.get("/config/brokers/<default>")[0])["config"]
        assert default["log.retention.ms"] == "3600000"
        changes = [json.loads(zk.get(f"/config/changes/{c}")[0])["entity_path"]
                   for c in sorted(zk.get_children("/config/changes"))]
        assert changes[-2:] == ["brokers/0", "brokers/<default>"]

    wait_until_true(lambda: _effective(broker)["log.retention.ms"] == 3600000, 10,
                    "the default's log.retention.ms to take effect")
    assert _effective(broker)["log.cleaner.threads"] == 2  # per-broker beats the default

    described = _describe(client, "0")
    threads = described["log.cleaner.threads"]
    assert threads.value == "2" and threads.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    synonyms = _describe_wire(broker, "0")["log.cleaner.threads"].synonyms
    assert [(s.source, s.value) for s in synonyms] == [
        (ConfigSource.DYNAMIC_BROKER_CONFIG.value, "2"),
        (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value, "3"),
        (ConfigSource.DEFAULT_CONFIG.value, "1"),
    ]
    assert not threads.is_read_only
    backoff = described["log.cleaner.backoff.ms"]
    assert backoff.source == ConfigSource.STATIC_BROKER_CONFIG.value and backoff.value == "20000"
    assert described["broker.id"].is_read_only
    assert described["leader.replication.throttled.rate"].value == "1000000"
    retention = described["log.retention.ms"]
    assert retention.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value

    cluster_default = _describe_wire(broker, "")
    assert sorted(cluster_default) == ["leader.replication.throttled.rate",
                                       "log.cleaner.threads", "log.retention.ms"]
    assert all(e.config_source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
               for e in cluster_default.values())

    # A topic without its own retention follows the new cluster default, live.
    client.create_topics([NewTopic("follows", 1, 1)])["follows"].result(20)
    topic = ConfigResource(ConfigResource.Type.TOPIC, "follows")
    entry = client.describe_configs([topic])[topic].result(20)[
        "retention.ms"]
    assert entry.value == "3600000"
    assert entry.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert broker.broker is not None
    log_manager = broker.broker.services.log_manager
    wait_until_true(lambda: log_manager.get_log("follows", 0) is not None, 10, "the log")
    _set(broker, "", ("log.retention.ms", "7200000"))

    def retention_ms() -> int | None:
        log = log_manager.get_log("follows", 0)
        return log.config.retention_ms if log is not None else None

    wait_until_true(lambda: retention_ms() == 7200000,
                    10, "the topic's log to follow the changed default")

    # Deleting restores the lower layers.
    _set(broker, "0", ("log.cleaner.threads", None))
    wait_until_true(lambda: _effective(broker)["log.cleaner.threads"] == 3, 10,
                    "the default's value once the per-broker one is gone")


def test_described_keys_and_synonyms_are_kafkas(broker: InProcessBroker) -> None:
    """Every key Kafka 3.9 describes for a topic and a broker is described (those odradek
    does not implement read-only, at Kafka's default), with Kafka's synonyms: the ones below
    are what Apache Kafka 3.9.2 answers for the same steps (tests/interop compares live)."""
    from odradek import kafka_catalog

    def synonyms(entry: Any) -> list[tuple[str, int]]:
        return [(s.name, s.source) for s in entry.synonyms]

    client = _admin(broker)
    client.create_topics([NewTopic("described", 1, 1)])["described"].result(20)
    topic = _describe_wire(broker, "described", TOPIC)
    assert set(kafka_catalog.TOPIC_CONFIGS) <= set(topic), "keys Kafka describes are missing"
    assert synonyms(topic["segment.ms"]) == []  # log.roll.hours is not one until log.roll.ms
    assert synonyms(topic["retention.ms"]) == []
    gzip = topic["compression.gzip.level"]
    assert (gzip.value, gzip.read_only, synonyms(gzip)) == (
        "-1", True, [("compression.gzip.level", ConfigSource.DEFAULT_CONFIG.value)])
    assert topic["remote.storage.enable"].value == "false"

    resource = ConfigResource(ConfigResource.Type.TOPIC, "described", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("segment.ms", "2000", incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([resource])[resource].result(20)
    _set(broker, "", ("log.retention.ms", "7200000"), ("log.roll.ms", "3600000"))
    dynamic_topic, dynamic_default, default = (
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value, ConfigSource.DEFAULT_CONFIG.value)

    def altered() -> bool:
        found = _describe_wire(broker, "described", TOPIC)
        return found["retention.ms"].value == "1000" and len(found["segment.ms"].synonyms) > 1

    wait_until_true(altered, 10, "the topic and default changes to be described")
    topic = _describe_wire(broker, "described", TOPIC)
    assert synonyms(topic["retention.ms"]) == [
        ("retention.ms", dynamic_topic), ("log.retention.ms", dynamic_default),
        ("log.retention.hours", default)]
    assert synonyms(topic["segment.ms"]) == [
        ("segment.ms", dynamic_topic), ("log.roll.ms", dynamic_default),
        ("log.roll.hours", default)]

    described = _describe_wire(broker, "0")
    assert set(kafka_catalog.BROKER_CONFIGS) <= set(described), "keys Kafka describes"
    assert synonyms(described["log.retention.minutes"]) == []  # no default in Kafka
    assert synonyms(described["log.retention.hours"]) == [("log.retention.hours", default)]
    unsupported = described["remote.log.storage.system.enable"]
    assert (unsupported.value, unsupported.read_only) == ("false", True)
    assert described["sasl.jaas.config"].is_sensitive


@pytest.mark.parametrize(("name", "entry", "error"), [
    ("0", ("no.such.config", "1"), "INVALID_CONFIG"),
    ("0", ("broker.id", "5"), "INVALID_REQUEST"),
    ("0", ("log.cleaner.threads", "many"), "INVALID_REQUEST"),
    ("0", ("log.cleanup.policy", "shred"), "INVALID_REQUEST"),
    ("", ("listeners", "PLAINTEXT://127.0.0.1:1"), "INVALID_REQUEST"),  # per broker only
    ("zero", ("log.cleaner.threads", "2"), "INVALID_REQUEST"),
])
def test_invalid_broker_configs_are_refused_with_a_message(
    broker: InProcessBroker, name: str, entry: tuple[str, str], error: str
) -> None:
    with pytest.raises(Refused, match=error) as raised:
        _set(broker, name, entry)
    assert entry[0] in str(raised.value) or "Broker id" in str(raised.value)
    with zk_client(broker.config["zookeeper.connect"]) as zk:
        for path in ("/config/brokers/0", "/config/brokers/<default>"):
            assert zk.exists(path) is None, "nothing may be written"


def test_alter_configs_replaces_the_whole_set_and_validate_only_writes_nothing(
    broker: InProcessBroker,
) -> None:
    client = _admin(broker)
    _set(broker, "0", ("log.cleaner.threads", "2"), ("num.replica.fetchers", "2"))
    resource = ConfigResource(ConfigResource.Type.BROKER, "0",
                              set_config={"log.retention.bytes": "1000000"})
    client.alter_configs([resource])[resource].result(20)
    with zk_client(broker.config["zookeeper.connect"]) as zk:
        stored = json.loads(zk.get("/config/brokers/0")[0])["config"]
        assert stored == {"log.retention.bytes": "1000000"}
        check = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
            ConfigEntry("log.segment.bytes", "1048576",
                        incremental_operation=AlterConfigOpType.SET)])
        client.incremental_alter_configs([check], validate_only=True)[check].result(20)
        assert json.loads(zk.get("/config/brokers/0")[0])["config"] == stored


def test_dynamic_changes_reach_each_component_as_its_new_section(
    broker: InProcessBroker,
) -> None:
    """One path for live changes: the effective config is cut into new sections, and the
    log manager, the replica manager and the controller each get theirs whole."""
    assert broker.broker is not None
    services = broker.broker.services
    log_manager, replica_manager = services.log_manager, services.replica_manager
    controller = services.cluster.controller
    replication_before = replica_manager.replication
    _set(broker, "", ("log.cleaner.dedupe.buffer.size", "1048576"),
         ("unclean.leader.election.enable", "true"))
    wait_until_true(lambda: log_manager.settings.cleaner_dedupe_buffer_size == 1048576, 10,
                    "the log manager's new log section")
    wait_until_true(lambda: controller.context.settings.unclean_leader_election_enable, 10,
                    "the controller's new controller section")
    assert replica_manager.replication is replication_before  # its section did not change
    assert services.sections.log is log_manager.settings
    assert broker.broker.sections is services.sections

    _set(broker, "0", ("num.replica.fetchers", "3"))
    wait_until_true(lambda: replica_manager.replication.num_replica_fetchers == 3, 10,
                    "the replica manager's new replication section")
    assert replica_manager.fetchers is not None
    assert replica_manager.fetchers.settings is replica_manager.replication
    assert log_manager.settings.cleaner_dedupe_buffer_size == 1048576  # still the default's
