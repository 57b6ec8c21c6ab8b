"""The dynamic broker config rules: update modes, validation, the four layers."""

from __future__ import annotations

import pytest

from odradek.config import BROKER_CONFIGS, BrokerConfig
from odradek.dynamic_config import (
    DYNAMIC_ONLY_CONFIGS,
    UPDATE_MODES,
    BrokerConfigLayers,
    ConfigSource,
    UpdateMode,
    validate_update,
)
from odradek.protocol.errors import InvalidConfig, InvalidRequest


def test_every_broker_config_has_an_update_mode_as_in_kafka() -> None:
    assert set(UPDATE_MODES) == set(BROKER_CONFIGS) | set(DYNAMIC_ONLY_CONFIGS)
    assert UPDATE_MODES["broker.id"] is UpdateMode.READ_ONLY
    assert UPDATE_MODES["zookeeper.connect"] is UpdateMode.READ_ONLY
    assert UPDATE_MODES["log.dirs"] is UpdateMode.READ_ONLY
    assert UPDATE_MODES["listeners"] is UpdateMode.PER_BROKER
    for name in ("log.cleaner.threads", "log.retention.ms", "log.segment.bytes",
                 "min.insync.replicas", "leader.replication.throttled.rate",
                 "follower.replication.throttled.rate"):
        assert UPDATE_MODES[name] is UpdateMode.CLUSTER_WIDE, name


@pytest.mark.parametrize(("config", "per_broker", "error", "text"), [
    ({"nope": "1"}, True, InvalidConfig, "Unknown broker config: nope"),
    ({"broker.id": "3"}, True, InvalidRequest, "Cannot update these configs dynamically"),
    ({"listeners": "PLAINTEXT://h:1"}, False, InvalidRequest, "broker id must be specified"),
    ({"log.cleaner.threads": "x"}, True, InvalidRequest, "log.cleaner.threads"),
    ({"log.cleaner.threads": "-1"}, False, InvalidRequest, "at least"),
    ({"log.cleanup.policy": "shred"}, True, InvalidRequest, "shred"),
])
def test_validation_names_the_problem(config: dict[str, str], per_broker: bool,
                                      error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        validate_update(config, per_broker=per_broker)


def test_valid_updates_pass() -> None:
    validate_update({"log.cleaner.threads": "2", "leader.replication.throttled.rate": "10"},
                    per_broker=False)
    validate_update({"listeners": "PLAINTEXT://127.0.0.1:9092"}, per_broker=True)


def test_layers_per_broker_over_default_over_static_over_default_value() -> None:
    static = BrokerConfig.from_properties({"log.cleaner.threads": "4",
                                           "log.retention.hours": "24"})
    layers = BrokerConfigLayers(static, {"log.cleaner.threads": "3", "log.retention.ms": "1000"},
                                {"log.cleaner.threads": "2"})
    effective = layers.effective()
    assert effective["log.cleaner.threads"] == 2
    assert effective.retention_ms == 1000  # log.retention.ms beats the static hours
    assert [source for _n, _v, source in layers.synonyms("log.cleaner.threads")] == [
        ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG]
    assert [(n, source) for n, _v, source in layers.synonyms("log.retention.ms")] == [
        ("log.retention.ms", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", ConfigSource.DEFAULT_CONFIG)]
    # Describing the cluster default leaves the per-broker layer out.
    assert layers.synonyms("log.cleaner.threads", per_broker=False)[0][1] == "3"


def test_invalid_stored_values_are_skipped_not_fatal() -> None:
    static = BrokerConfig.from_properties({})
    layers = BrokerConfigLayers(static, {"log.cleaner.threads": "lots", "broker.id": "9",
                                         "listeners": "PLAINTEXT://h:1", "x.y": "1"},
                                {"leader.replication.throttled.rate": "-5",
                                 "follower.replication.throttled.rate": "100"})
    effective = layers.effective()
    assert effective["log.cleaner.threads"] == 1 and effective["broker.id"] == 0
    assert effective["listeners"] == static["listeners"]  # per broker only, not default
    throttles = layers.dynamic_only()
    assert throttles["follower.replication.throttled.rate"] == 100
    assert throttles["leader.replication.throttled.rate"] == 2**63 - 1
