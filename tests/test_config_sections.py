"""Typed config sections: the definitions table stays the one source of names and defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from odradek.config import BROKER_CONFIGS, BrokerConfig
from odradek.config_sections import BrokerSections, GroupCoordinatorConfig, Section


def _section_classes() -> list[type[Section]]:
    classes: list[type[Section]] = []
    for item in dataclasses.fields(BrokerSections):
        assert isinstance(item.default, Section), item.name
        classes.append(type(item.default))
    return classes


@pytest.mark.parametrize("section", _section_classes(), ids=lambda cls: cls.__name__)
def test_every_setting_names_a_defined_key_and_defaults_to_its_default(
    section: type[Section],
) -> None:
    defaults = section()
    for item in dataclasses.fields(section):  # type: ignore[arg-type]
        name = item.metadata.get("config")
        if name is None:
            continue
        assert name in BROKER_CONFIGS, f"{section.__name__}.{item.name}: unknown key {name}"
        raw = BROKER_CONFIGS[name].default
        convert = item.metadata["convert"]
        expected = raw if convert is None else convert(raw)
        if isinstance(expected, list):
            expected = tuple(expected)
        assert getattr(defaults, item.name) == expected, f"{section.__name__}.{item.name}"


def test_default_sections_equal_those_of_an_empty_configuration() -> None:
    assert BrokerSections() == BrokerSections.from_config(BrokerConfig.from_properties({}))


def test_sections_read_the_configuration_with_conversions() -> None:
    config = BrokerConfig.from_properties({
        "offsets.retention.minutes": "3", "log.dirs": "/a,/b",
        "replica.lag.time.max.ms": "1234", "listeners": "PLAINTEXT://0.0.0.0:9999",
    })
    sections = BrokerSections.from_config(config)
    assert sections.group_coordinator.offsets_retention_ms == 180_000
    assert sections.log.log_dirs == (Path("/a"), Path("/b"))
    assert sections.replication.replica_lag_time_max_ms == 1234
    assert sections.network.advertised_listeners[0].host == "127.0.0.1"
    assert sections.network.inter_broker_listener == "PLAINTEXT"


def test_a_change_replaces_only_the_sections_it_concerns() -> None:
    before = BrokerSections.from_config(BrokerConfig.from_properties({}))
    after = BrokerSections.from_config(
        BrokerConfig.from_properties({"log.cleaner.dedupe.buffer.size": "1024"}))
    assert after.log != before.log and after.log.cleaner_dedupe_buffer_size == 1024
    assert after.replication == before.replication
    with pytest.raises(dataclasses.FrozenInstanceError):
        after.log.cleaner_dedupe_buffer_size = 1  # type: ignore[misc]


def test_components_may_still_be_built_from_partial_sections() -> None:
    assert GroupCoordinatorConfig(min_session_timeout_ms=1).max_group_size == 2**31 - 1
