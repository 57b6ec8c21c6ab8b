"""Broker configuration with Apache Kafka's property names, types and defaults.

A broker is configured exactly like a Kafka broker: a ``server.properties`` file plus
``--override key=value`` flags. Every key we accept is declared once in
:data:`~odradek.config_keys.BROKER_CONFIGS` with its type and default; an unknown key is an
error (a typo must not silently fall back to a default), and a combination that cannot work
is refused by the checks on the typed sections
(:func:`odradek.config_security.validate_listeners` for listeners and security), so the rest
of the broker only ever sees a valid configuration.

Broker-level log settings (``log.segment.bytes``) are the defaults of topic-level settings
(``segment.bytes``), which storage owns (:mod:`odradek.storage.log_config`);
:meth:`BrokerConfig.topic_defaults` names them by their topic-level names, so storage only
ever sees those.

Components do not read this mapping: each takes its typed section
(:mod:`odradek.config_sections`), built from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from odradek.config_keys import BROKER_CONFIGS
from odradek.config_sections import NetworkConfig, SecurityConfig
from odradek.config_security import validate_listeners
from odradek.config_types import ConfigError, Listener
from odradek.listener_overrides import jaas_key, split_listener_configs

# The names most code needs from one place (BROKER_CONFIGS, ConfigError and Listener are
# declared in config_keys and config_types).
__all__ = [
    "BROKER_CONFIGS",
    "BrokerConfig",
    "ConfigError",
    "Listener",
    "parse_properties",
]


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (``key=value`` or ``key: value``, ``#``/``!`` comments,
    backslash line continuations) into a dict of raw strings."""
    result: dict[str, str] = {}
    logical = ""
    for raw_line in text.splitlines():
        line = raw_line.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", logical)
        if match:
            result[match.group(1)] = match.group(2).rstrip()
        elif logical.strip():
            result[logical.strip()] = ""
        logical = ""
    return result


class BrokerConfig(Mapping[str, Any]):
    """Typed, validated broker properties: ``config["log.segment.bytes"]`` is an ``int``.

    Only keys declared in :data:`BROKER_CONFIGS` are accepted. Values not given take Kafka's
    defaults. Instances are immutable; a changed config is a new instance.
    """

    def __init__(self, values: Mapping[str, Any], explicit: frozenset[str],
                 listener_configs: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._values = dict(values)
        self._explicit = explicit
        # {LISTENER: {config: raw}} from listener.name.<listener>.<config> (listener_overrides)
        self.listener_configs: Mapping[str, Mapping[str, str]] = listener_configs or {}

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> BrokerConfig:
        plain, per_listener, unknown_prefixed = split_listener_configs(properties)
        unknown = sorted({*plain} - set(BROKER_CONFIGS) | set(unknown_prefixed))
        if unknown:
            raise ConfigError(f"unknown broker config key(s): {', '.join(unknown)}")
        values = {name: definition.default for name, definition in BROKER_CONFIGS.items()}
        for name, raw in plain.items():
            values[name] = BROKER_CONFIGS[name].convert(raw)
        config = cls(values, frozenset(plain), per_listener)
        for listener in per_listener:  # converting checks their values
            config.for_listener(listener)
        config._validate()
        return config

    def for_listener(self, listener: str) -> BrokerConfig:
        """This config as listener ``listener`` sees it: its ``listener.name.<listener>.*``
        values in place of the broker-wide ones; ``sasl.jaas.config`` is its JAAS config for
        ``sasl.mechanism.inter.broker.protocol`` when it has one (the broker's own login)."""
        overrides = dict(self.listener_configs.get(listener.upper(), {}))
        jaas = overrides.pop(jaas_key(self["sasl.mechanism.inter.broker.protocol"]), None)
        if jaas is not None:
            overrides["sasl.jaas.config"] = jaas
        values = dict(self._values)
        for name, raw in overrides.items():
            if name in BROKER_CONFIGS:
                values[name] = BROKER_CONFIGS[name].convert(raw)
        return BrokerConfig(values, self._explicit | frozenset(overrides))

    def listener_properties(self) -> dict[str, str]:
        """The ``listener.name.<listener>.<config>`` properties this config was given."""
        return {f"listener.name.{listener.lower()}.{name}": raw
                for listener, configs in self.listener_configs.items()
                for name, raw in configs.items()}

    @classmethod
    def load(cls, path: Path | None = None, overrides: Iterable[str] = ()) -> BrokerConfig:
        """Read a ``server.properties`` file (optional) and apply ``key=value`` overrides."""
        properties = parse_properties(path.read_text()) if path is not None else {}
        for override in overrides:
            key, sep, value = override.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--override expects key=value, got {override!r}")
            properties[key.strip()] = value.strip()
        return cls.from_properties(properties)

    def with_overrides(self, **overrides: str) -> BrokerConfig:
        """A copy with ``overrides`` (keys with dots written as ``log_dirs`` → ``log.dirs``)."""
        properties = {name: self.raw(name) for name in self._explicit}
        properties.update(self.listener_properties())
        properties.update({key.replace("_", "."): value for key, value in overrides.items()})
        return BrokerConfig.from_properties(properties)

    def value_text(self, name: str) -> str | None:
        """The value of ``name`` as DescribeConfigs shows it: :meth:`raw`, None when unset."""
        return None if self._values[name] is None else self.raw(name)

    def raw(self, name: str) -> str:
        """The value of ``name`` written back as a properties string."""
        value = self._values[name]
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, list):
            return ",".join(str(item) for item in value)
        return "" if value is None else str(value)

    def _validate(self) -> None:
        network = NetworkConfig.from_config(self)
        if not network.listeners:
            raise ConfigError("listeners must name at least one address")
        validate_listeners(network, SecurityConfig.from_config(self))
        if self["log.message.timestamp.type"] not in ("CreateTime", "LogAppendTime"):
            raise ConfigError("log.message.timestamp.type must be CreateTime or LogAppendTime")
        for policy in self["log.cleanup.policy"]:
            if policy not in ("delete", "compact"):
                raise ConfigError(f"log.cleanup.policy: unknown policy {policy!r}")

    # Mapping protocol -------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"unknown broker config key {name!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def is_explicit(self, name: str) -> bool:
        """Whether ``name`` was set by the operator rather than defaulted."""
        return name in self._explicit

    # Derived values ---------------------------------------------------------------------
    @property
    def broker_id(self) -> int:
        return int(self["broker.id"])

    @property
    def rack(self) -> str | None:
        """``broker.rack``: where replica placement puts this broker (None: no rack)."""
        return self["broker.rack"] or None

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self["log.dirs"] or [self["log.dir"]]
        return [Path(d) for d in dirs]

    @property
    def advertised_listeners(self) -> list[Listener]:
        """Listeners as clients should reach them: advertised.listeners, else listeners with
        a wildcard host replaced by 127.0.0.1 (a wildcard is not an address to connect to)."""
        advertised = self["advertised.listeners"]
        if advertised:
            return list(advertised)
        return [
            Listener(lst.name, "127.0.0.1" if lst.host in ("", "0.0.0.0", "::") else lst.host,
                     lst.port)
            for lst in self["listeners"]
        ]

    @property
    def retention_ms(self) -> int:
        if self["log.retention.ms"] is not None:
            return int(self["log.retention.ms"])
        if self["log.retention.minutes"] is not None:
            return int(self["log.retention.minutes"]) * 60_000
        return int(self["log.retention.hours"]) * 3_600_000

    @property
    def roll_ms(self) -> int:
        if self["log.roll.ms"] is not None:
            return int(self["log.roll.ms"])
        return int(self["log.roll.hours"]) * 3_600_000

    def topic_defaults(self) -> dict[str, Any]:
        """Topic-level config names mapped to this broker's defaults for them."""
        defaults: dict[str, Any] = {}
        for definition in BROKER_CONFIGS.values():
            if definition.topic_name is None:
                continue
            value = self[definition.name]
            if value is None:
                continue
            if definition.topic_name == "cleanup.policy":
                value = ",".join(value)
            defaults[definition.topic_name] = value
        defaults["segment.ms"] = self.roll_ms
        defaults["retention.ms"] = self.retention_ms
        if self["log.flush.interval.ms"] is None:
            # Kafka: flush.ms defaults to the scheduler interval, i.e. never.
            defaults["flush.ms"] = self["log.flush.scheduler.interval.ms"]
        return defaults
