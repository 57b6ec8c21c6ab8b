"""kopf handlers, one module per kind; importing this package registers them all."""

from . import broker_cluster, broker_readiness, consumer_group, rebalance, topic, user

__all__ = ["broker_cluster", "broker_readiness", "consumer_group", "rebalance", "topic", "user"]
