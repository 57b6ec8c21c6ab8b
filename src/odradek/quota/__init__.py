"""Client quotas (Kafka's produce, fetch and request quotas): entities and their precedence,
windowed rates, throttle times. Sans-IO; the broker records and enforces
(:mod:`odradek.broker.throttling`), ZooKeeper stores (:mod:`odradek.cluster.client_quotas`)."""

from .entities import QuotaEntity
from .manager import QuotaManager, QuotaState, QuotaType, parse_stored

__all__ = ["QuotaEntity", "QuotaManager", "QuotaState", "QuotaType", "parse_stored"]
