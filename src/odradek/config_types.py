"""How a broker property is declared and read: :class:`ConfigDef` and Kafka's value types.

A property's value arrives as a string (``server.properties``, ``--override``, a dynamic
config in ZooKeeper); :meth:`ConfigDef.convert` is the one place that turns it into its
type and checks its lower bound, so every source gets the same :class:`ConfigError` words.
The declarations themselves are in :mod:`odradek.config_keys`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BOOL",
    "DOUBLE",
    "INT",
    "LIST",
    "LISTENERS",
    "LONG",
    "LONG_MAX",
    "OPTIONAL_STR",
    "STR",
    "ConfigDef",
    "ConfigError",
    "Listener",
]

LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    """A configuration key is unknown or its value is invalid."""


@dataclass(frozen=True)
class Listener:
    """One ``NAME://host:port`` entry of ``listeners`` / ``advertised.listeners``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def _parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"expected true or false, got {value!r}")


def _parse_listeners(value: str) -> list[Listener]:
    listeners = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        match = re.fullmatch(r"([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:]*):(\d+)", item)
        if not match:
            raise ValueError(f"expected NAME://host:port, got {item!r}")
        name, host, port = match.groups()
        listeners.append(Listener(name.upper(), host.strip("[]"), int(port)))
    names = [listener.name for listener in listeners]
    if len(names) != len(set(names)):
        raise ValueError("each listener name may appear only once")
    return listeners


def _parse_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _parse_int(value: str) -> int:
    return int(value.strip())


def _parse_long(value: str) -> int:
    """The same as an int in Python; a separate parser so the type is documented as Kafka's."""
    return int(value.strip())


def _parse_float(value: str) -> float:
    return float(value.strip())


def _parse_str(value: str) -> str:
    return value.strip()


def _parse_optional_str(value: str) -> str | None:
    return value.strip() or None


@dataclass(frozen=True)
class ConfigDef:
    """One broker property: its name, parser, default and (if any) topic-level counterpart."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str
    topic_name: str | None = None
    at_least: float | None = None
    sensitive: bool = False  # a secret: DescribeConfigs shows no value (Kafka's PASSWORD)

    @property
    def type_name(self) -> str:
        """Kafka's name for this property's type (``int``, ``long``, ``list``, ...)."""
        return _TYPE_NAMES[self.parse]

    def convert(self, raw: str) -> Any:
        try:
            value = self.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"invalid value {raw!r} for {self.name}: {exc}") from None
        if self.at_least is not None and value < self.at_least:
            raise ConfigError(f"{self.name} must be at least {self.at_least}, got {value}")
        return value


INT, LONG, BOOL, STR = _parse_int, _parse_long, _parse_bool, _parse_str
DOUBLE, LIST, LISTENERS, OPTIONAL_STR = (_parse_float, _parse_list, _parse_listeners,
                                         _parse_optional_str)

_TYPE_NAMES: dict[Callable[[str], Any], str] = {
    _parse_int: "int",
    _parse_long: "long",
    _parse_bool: "boolean",
    _parse_str: "string",
    _parse_optional_str: "string",
    _parse_float: "double",
    _parse_list: "list",
    _parse_listeners: "list",
}
