"""The knobs of a broker's metrics, with the config keys they will be read from.

The broker builds them from its ``metrics`` config section
(:class:`odradek.config_sections.MetricsConfig`; keys in :data:`CONFIG_KEYS`). Defaults keep
the series count independent of what users create: per-topic traffic is off, consumer-group
lag is capped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the configuration sits below metrics and knows nothing of it
    from odradek.config_sections import MetricsConfig

__all__ = ["CONFIG_KEYS", "MetricsOptions"]


@dataclass(frozen=True)
class MetricsOptions:
    port: int = 0
    """``metrics.port``: HTTP port of ``/metrics``; 0 = no server (the registry still works)."""
    host: str = "127.0.0.1"
    """Address to bind: the host of the broker's first listener (``0.0.0.0`` in a pod)."""
    topic_labels: bool = False
    """``metrics.topic.labels.enable``: export ``odradek_topic_*`` series per topic."""
    max_topics: int = 500
    """``metrics.topic.labels.max``: cap on topics with their own series (the rest dropped)."""
    max_lag_series: int = 10_000
    """``metrics.consumer.lag.series.max``: cap on group/topic/partition lag rows."""
    max_groups: int = 1_000
    """``metrics.consumer.groups.max``: cap on groups with state/member series."""
    lag_timestamp_reads: int = 200
    """``metrics.consumer.lag.timestamp.reads.max``: record timestamps read per scrape for lag
    in seconds (the rest reuse their last reading): bounds what a scrape costs the loop."""
    end_offsets_timeout_ms: int = 1000
    """``metrics.consumer.lag.end.offsets.timeout.ms``: a leader's ListOffsets answer (end
    offsets of partitions the coordinator does not host) is waited for at most this long."""
    end_offsets_refresh_ms: int = 5000
    """``metrics.consumer.lag.end.offsets.refresh.ms``: least time between two rounds."""
    end_offsets_max_age_ms: int = 60_000
    """``metrics.consumer.lag.end.offsets.max.age.ms``: older answers are not used."""
    loop_lag_interval_seconds: float = 0.25
    """How often the event-loop lag probe wakes up."""

    @classmethod
    def from_section(cls, section: MetricsConfig) -> MetricsOptions:
        """The options of a broker's ``metrics`` config section."""
        return cls(
            port=section.port, host=section.host, topic_labels=section.topic_labels_enable,
            max_topics=section.topic_labels_max, max_lag_series=section.consumer_lag_series_max,
            max_groups=section.consumer_groups_max,
            lag_timestamp_reads=section.consumer_lag_timestamp_reads_max,
            end_offsets_timeout_ms=section.lag_end_offsets_timeout_ms,
            end_offsets_refresh_ms=section.lag_end_offsets_refresh_ms,
            end_offsets_max_age_ms=section.lag_end_offsets_max_age_ms)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"metrics.port must be 0..65535, got {self.port}")
        for name in ("max_topics", "max_lag_series", "max_groups", "lag_timestamp_reads"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in ("loop_lag_interval_seconds", "end_offsets_timeout_ms",
                     "end_offsets_max_age_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.end_offsets_refresh_ms < 0:
            raise ValueError("end_offsets_refresh_ms must not be negative")


CONFIG_KEYS: dict[str, str] = {
    "metrics.port": "port",
    "metrics.topic.labels.enable": "topic_labels",
    "metrics.topic.labels.max": "max_topics",
    "metrics.consumer.lag.series.max": "max_lag_series",
    "metrics.consumer.groups.max": "max_groups",
    "metrics.consumer.lag.timestamp.reads.max": "lag_timestamp_reads",
    "metrics.consumer.lag.end.offsets.timeout.ms": "end_offsets_timeout_ms",
    "metrics.consumer.lag.end.offsets.refresh.ms": "end_offsets_refresh_ms",
    "metrics.consumer.lag.end.offsets.max.age.ms": "end_offsets_max_age_ms",
}
"""Broker config key → :class:`MetricsOptions` field."""
