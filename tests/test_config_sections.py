"""Typed config sections: the definitions table stays the one source of names and defaults,
and the rest of odradek reads configuration through them."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import odradek
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


def test_security_reads_the_protocol_map_once_for_every_listener() -> None:
    config = BrokerConfig.from_properties({
        "listeners": "client://:9092,internal://:9093",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT, internal:sasl_plaintext",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.jaas.config": 'x.ScramLoginModule required username="b" password="p";',
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    })
    security = BrokerSections.from_config(config).security
    assert security.protocol_map == {"CLIENT": "PLAINTEXT", "INTERNAL": "SASL_PLAINTEXT"}
    assert security.protocol_of("internal") == "SASL_PLAINTEXT"
    assert security.of_listener("INTERNAL").sasl_enabled_mechanisms == ("PLAIN", "SCRAM-SHA-256")
    assert security.of_listener("CLIENT") is security


def test_quotas_and_identity_are_typed() -> None:
    config = BrokerConfig.from_properties({"quota.window.num": "5", "broker.rack": "r1"})
    assert BrokerSections.from_config(config).quotas.window_num == 5
    assert (config.rack, BrokerConfig.from_properties({}).rack) == ("r1", None)
    assert config.value_text("broker.rack") == "r1"
    assert BrokerConfig.from_properties({}).value_text("log.retention.ms") is None


_ROOT = Path(odradek.__file__).parent
_CONFIG_MODULES = sorted(_ROOT.glob("config*.py"))


def _string_subscripts_of_config(tree: ast.AST) -> list[int]:
    """Lines reading ``<...>config["some.key"]``: a broker property by its raw name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            target = node.value
            name = target.id if isinstance(target, ast.Name) else \
                target.attr if isinstance(target, ast.Attribute) else ""
            if name.endswith("config"):
                found.append(node.lineno)
    return found


def test_only_the_config_modules_read_properties_by_name() -> None:
    """Components take typed sections (or BrokerConfig's typed properties); a raw
    ``config["key"]`` elsewhere is a second way to read configuration."""
    raw = [f"{path.relative_to(_ROOT)}:{line}"
           for path in sorted(_ROOT.rglob("*.py")) if path not in _CONFIG_MODULES
           for line in _string_subscripts_of_config(ast.parse(path.read_text()))]
    assert raw == []


@pytest.mark.parametrize("path", _CONFIG_MODULES, ids=lambda path: path.name)
def test_the_config_modules_import_neither_storage_nor_security(path: Path) -> None:
    """Configuration sits below both: storage owns topic-level configs, security the
    mechanisms; not even a lazy import may point back up."""
    imported = [node.module or "" for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Import) for alias in node.names]
    assert [name for name in imported
            if name.startswith(("odradek.storage", "odradek.security"))] == []


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
