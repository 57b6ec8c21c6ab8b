"""Grafana dashboards as code (grafana-foundation-sdk), one module per dashboard.

``python -m odradek_monitoring.generate`` writes each to ``charts/odradek/dashboards/<name>.json``;
the JSON is committed and a test checks that regenerating it changes nothing. Panel ids are
assigned here in layout order, so the output is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from grafana_foundation_sdk.builders.dashboard import Dashboard
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from . import broker, consumer_groups, operator, overview, replication, topics, zookeeper

__all__ = ["DASHBOARDS", "dashboard_json", "render"]

DASHBOARDS: dict[str, Callable[[], Dashboard]] = {
    "odradek-overview": overview.dashboard,
    "odradek-broker": broker.dashboard,
    "odradek-topics": topics.dashboard,
    "odradek-consumer-groups": consumer_groups.dashboard,
    "odradek-replication": replication.dashboard,
    "odradek-zookeeper": zookeeper.dashboard,
    "odradek-operator": operator.dashboard,
}
"""File name (without ``.json``) → builder."""


def dashboard_json(name: str) -> dict[str, Any]:
    """The dashboard as Grafana's JSON model (plain dicts), with panel ids assigned."""
    model: dict[str, Any] = json.loads(json.dumps(DASHBOARDS[name]().build(), cls=JSONEncoder))
    next_id = 1
    for panel in model["panels"]:
        panel["id"] = next_id
        next_id += 1
        for inner in panel.get("panels", []):
            inner["id"] = next_id
            next_id += 1
    for variable in model.get("templating", {}).get("list", []):
        variable.pop("id", None)  # the SDK's all-zero UUID: Grafana assigns its own
    return model


def render(name: str) -> str:
    return json.dumps(dashboard_json(name), indent=2, sort_keys=True) + "\n"
