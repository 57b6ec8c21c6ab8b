"""The broker settings replication reads, in one typed value (Kafka's property names)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ReplicationConfig"]


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1048576
    replica_fetch_response_max_bytes: int = 10485760
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30000
    num_replica_fetchers: int = 1

    @classmethod
    def from_broker_config(cls, config: Any) -> ReplicationConfig:
        """Read every ``replica.*`` key the broker config knows; defaults for the rest."""

        def get(key: str, default: int) -> int:
            try:
                value = config[key]
            except (KeyError, LookupError):
                return default
            return default if value is None else int(value)

        defaults = cls()
        return cls(
            replica_lag_time_max_ms=get("replica.lag.time.max.ms",
                                        defaults.replica_lag_time_max_ms),
            replica_fetch_wait_max_ms=get("replica.fetch.wait.max.ms",
                                          defaults.replica_fetch_wait_max_ms),
            replica_fetch_min_bytes=get("replica.fetch.min.bytes",
                                        defaults.replica_fetch_min_bytes),
            replica_fetch_max_bytes=get("replica.fetch.max.bytes",
                                        defaults.replica_fetch_max_bytes),
            replica_fetch_response_max_bytes=get("replica.fetch.response.max.bytes",
                                                 defaults.replica_fetch_response_max_bytes),
            replica_fetch_backoff_ms=get("replica.fetch.backoff.ms",
                                         defaults.replica_fetch_backoff_ms),
            replica_socket_timeout_ms=get("replica.socket.timeout.ms",
                                          defaults.replica_socket_timeout_ms),
            num_replica_fetchers=max(get("num.replica.fetchers", defaults.num_replica_fetchers),
                                     1),
        )
