"""The pipeline's topics and the cluster check every step starts with."""

from __future__ import annotations

import sys

from odradek.client import AdminClient, KafkaClientError, NewTopic

ACTIVITY = "activity"
METRICS = "metrics"
#: ``make run``'s cluster.
DEFAULT_BOOTSTRAP = "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"


def ensure_topics(bootstrap: str, partitions: int = 6) -> None:
    """Create ``activity`` and ``metrics`` if missing (replication 3 on a 3-broker cluster,
    else 1); exit with a hint when no broker answers."""
    admin = AdminClient(bootstrap, request_timeout_ms=10_000)
    try:
        try:
            brokers = admin.describe_cluster().brokers
            existing = admin.list_topics()
        except KafkaClientError as exc:
            sys.exit(f"no odradek broker at {bootstrap} ({exc}).\n"
                     f"Start one first: `make run` in another terminal.")
        replicas = min(3, len(brokers))
        missing = [NewTopic(name, partitions, replicas) for name in (ACTIVITY, METRICS)
                   if name not in existing]
        if missing:
            admin.create_topics(missing)
    finally:
        admin.close()
