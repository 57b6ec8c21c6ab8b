"""The reference tables in ``docs/``, generated from the definitions they describe.

A table copied by hand from code is wrong the first time someone adds a config or raises an
API version. So the configuration reference (``docs/configuration.md``) and the API version
table (``docs/compatibility.md``) are rendered here from :data:`odradek.config_keys.BROKER_CONFIGS`,
:data:`odradek.dynamic_config.UPDATE_MODES`, :class:`odradek.storage.LogConfig`,
:mod:`odradek.kafka_catalog` and
:data:`odradek.protocol.api_versions.ADVERTISED`; ``make docs`` rewrites them, and
``tests/test_reference_docs.py`` fails while a committed file differs from what this module
renders.

Only the parts between two marker lines are generated; the prose around them is written by
hand and left alone::

    <!-- BEGIN GENERATED broker-configs (make docs) -->
    ...
    <!-- END GENERATED broker-configs -->

Usage: ``python -m odradek.reference_docs [--check] [DOCS_DIR]`` (default ``docs``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from odradek import kafka_catalog
from odradek.config import BrokerConfig
from odradek.config_keys import BROKER_CONFIGS, broker_default_name
from odradek.config_types import ConfigDef
from odradek.dynamic_config import DYNAMIC_ONLY_CONFIGS, UPDATE_MODES
from odradek.protocol.api_versions import ADVERTISED, ApiKey
from odradek.storage.log_config import LogConfig

__all__ = ["GENERATED_FILES", "main", "regenerate", "splice"]

_DEFAULTS = BrokerConfig.from_properties({})
_PYTHON_TYPES = {bool: "boolean", int: "long", float: "double", str: "string"}


def _cell(text: str) -> str:
    """Text that is safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if text else "(empty)"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _valid(definition: ConfigDef) -> str:
    return "" if definition.at_least is None else f"≥ {_number(definition.at_least)}"


def _broker_default(name: str) -> str:
    if name in DYNAMIC_ONLY_CONFIGS:
        return _code(str(DYNAMIC_ONLY_CONFIGS[name].default))
    if _DEFAULTS[name] is None:
        return "null"
    return _code(_DEFAULTS.raw(name))


def broker_configs_table() -> str:
    """Every broker property, in declaration order (related keys stay together)."""
    rows = [
        [f"`{name}`", definition.type_name, _broker_default(name), _valid(definition),
         UPDATE_MODES[name].value, definition.doc]
        for name, definition in BROKER_CONFIGS.items()
    ]
    return _table(["Name", "Type", "Default", "Valid", "Update mode", "Description"], rows)


def dynamic_only_configs_table() -> str:
    """The broker configs that exist only as dynamic configs (the replication throttles)."""
    rows = [
        [f"`{name}`", definition.type_name, _broker_default(name), _valid(definition),
         UPDATE_MODES[name].value, definition.doc]
        for name, definition in DYNAMIC_ONLY_CONFIGS.items()
    ]
    return _table(["Name", "Type", "Default", "Valid", "Update mode", "Description"], rows)


def topic_configs_table() -> str:
    """Topic-level configs, with the default a broker with default settings applies and
    the broker property that changes that default."""
    effective = LogConfig.for_topic(_DEFAULTS.topic_defaults()).to_topic_config()
    rows = []
    for name, (_field, kind, doc) in LogConfig.TOPIC_CONFIG_NAMES.items():
        source = broker_default_name(name)
        type_name = BROKER_CONFIGS[source].type_name if source else _PYTHON_TYPES[kind]
        rows.append([f"`{name}`", type_name, _code(effective[name]),
                     f"`{source}`" if source else "", doc])
    return _table(["Name", "Type", "Default", "Broker default from", "Description"], rows)


_KAFKA_TYPES = {1: "boolean", 2: "string", 3: "int", 4: "short", 5: "long", 6: "double",
                7: "list", 8: "class", 9: "password"}


def kafka_only_configs_table() -> str:
    """The Kafka 3.9 topic and broker keys odradek describes read-only at Kafka's default
    without implementing them (so DescribeConfigs lists what Kafka lists)."""
    supported_topic = set(LogConfig.TOPIC_CONFIG_NAMES)
    supported_broker = set(UPDATE_MODES)
    rows = [[f"`{key.name}`", "topic", _KAFKA_TYPES[key.config_type],
             "null" if key.default is None else _code(key.default)]
            for key in kafka_catalog.TOPIC_CONFIGS.values() if key.name not in supported_topic]
    rows += [[f"`{key.name}`", "broker", _KAFKA_TYPES[key.config_type],
              "null" if key.default is None else _code(key.default)]
             for key in kafka_catalog.BROKER_CONFIGS.values()
             if key.name not in supported_broker]
    return _table(["Name", "Level", "Type", "Kafka's default (described)"], rows)


def _version_range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}\u2013{high}"


def _api_name(key: ApiKey) -> str:
    return "".join(part.capitalize() for part in key.name.split("_"))


def api_versions_table() -> str:
    """The ApiVersions answer: every advertised API, its version range, its handler and the
    ACLs it needs under an authorizer (:data:`odradek.broker.access_rules.RULES`)."""
    from odradek.broker.access_rules import RULES  # the broker is heavy; only here
    from odradek.broker.dispatch import handler_table

    handlers = handler_table()
    rows = []
    for key in sorted(ADVERTISED):
        versions = ADVERTISED[key]
        handler = handlers[key]
        module = handler.__module__.removeprefix("odradek.")
        needs = "; ".join(str(rule) for rule in RULES.get(key, ())) or "nothing (before login)"
        rows.append([str(int(key)), _api_name(key),
                     _version_range(versions.min_version, versions.max_version),
                     f"`{module}.{handler.__name__}`", needs])
    return _table(["Key", "API", "Versions", "Handled by", "ACLs needed"], rows)


GENERATED_FILES: dict[str, dict[str, Callable[[], str]]] = {
    "configuration.md": {
        "broker-configs": broker_configs_table,
        "dynamic-only-configs": dynamic_only_configs_table,
        "topic-configs": topic_configs_table,
        "kafka-only-configs": kafka_only_configs_table,
    },
    "compatibility.md": {
        "api-versions": api_versions_table,
    },
}
"""File name in ``docs/`` -> generated part name -> its renderer."""


def splice(text: str, name: str, body: str) -> str:
    """``text`` with the part between ``name``'s marker lines replaced by ``body``."""
    pattern = re.compile(
        rf"(^<!-- BEGIN GENERATED {re.escape(name)}\b[^\n]*-->\n)(.*?)"
        rf"(^<!-- END GENERATED {re.escape(name)} -->$)",
        re.MULTILINE | re.DOTALL,
    )
    found = pattern.search(text)
    if found is None:
        raise ValueError(f"no BEGIN/END GENERATED {name} markers")
    return text[: found.start(2)] + body.rstrip("\n") + "\n" + text[found.end(2):]


def regenerate(path: Path) -> str:
    """The content ``path`` (one of :data:`GENERATED_FILES`) should have."""
    text = path.read_text()
    for name, render in GENERATED_FILES[path.name].items():
        text = splice(text, name, render())
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m odradek.reference_docs",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("docs_dir", nargs="?", default="docs", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="only report files that are out of date (exit 1 if any)")
    args = parser.parse_args(argv)
    stale = []
    for file_name in GENERATED_FILES:
        path = args.docs_dir / file_name
        wanted = regenerate(path)
        if wanted == path.read_text():
            continue
        stale.append(path)
        if not args.check:
            path.write_text(wanted)
            print(f"rewrote {path}")
    if args.check and stale:
        print("out of date (run `make docs`): " + ", ".join(map(str, stale)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
