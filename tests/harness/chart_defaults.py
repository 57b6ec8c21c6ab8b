"""What a default install of the chart gives its brokers, for the harnesses that should look
like one (``make dashboards``' live cluster and the demo brokers): read from the chart's
``values.yaml``, so a default changed there is the default they run with."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from odradek.config import BrokerConfig
from odradek.config_sections import MetricsConfig
from odradek.metrics import MetricsOptions

__all__ = ["CHART_VALUES", "default_broker_config", "default_metrics_options"]

CHART_VALUES = Path(__file__).resolve().parents[2] / "charts" / "odradek" / "values.yaml"


def default_broker_config() -> dict[str, str]:
    """``cluster.config`` of the chart's values as the BrokerCluster carries it (the chart's
    ``odradek.configValue``: every value a string; YAML booleans ``true``/``false``)."""
    config = yaml.safe_load(CHART_VALUES.read_text())["cluster"]["config"]
    return {key: str(value).lower() if isinstance(value, bool) else str(value)
            for key, value in config.items()}


def default_metrics_options(**overrides: Any) -> MetricsOptions:
    """The metrics options a broker of a default install runs with (through the broker's own
    config parsing), with ``overrides`` of fields that do not change what is exported."""
    section = MetricsConfig.from_config(BrokerConfig.from_properties(default_broker_config()))
    return dataclasses.replace(MetricsOptions.from_section(section), **overrides)
