"""ZooKeeper coordination in Kafka's ZooKeeper layout (see ``znodes`` for every format).

Public surface: :class:`ZkCluster` (what a broker holds), the value types it exposes and
the startup errors. Modules: ``zk`` (session, thread bridge), ``registry`` (broker ids,
cluster id), ``assignment`` (replica placement), ``topics`` (admin writes), ``election``,
``preferred`` and ``reassignment`` (pure rules), ``controller`` (a package: context plus one
module per duty), ``liveness`` (connection probes: fast failure detection), ``view``
(watched metadata), ``isr`` (leaders' ISR writes), ``producer_ids``.
"""

from odradek.cluster.controller import Controller
from odradek.cluster.model import (
    NO_LEADER,
    BrokerId,
    BrokerInfo,
    Endpoint,
    PartitionRegistration,
    TopicMetadata,
    TopicPartition,
)
from odradek.cluster.registry import BrokerIdInUse
from odradek.cluster.topics import validate_topic_name
from odradek.cluster.view import ClusterChange, ClusterSnapshot, ClusterView
from odradek.cluster.zk import SessionEvent, ZkSession, ZooKeeperUnavailable
from odradek.cluster.zk_cluster import ZkCluster

__all__ = [
    "NO_LEADER",
    "BrokerId",
    "BrokerIdInUse",
    "BrokerInfo",
    "ClusterChange",
    "ClusterSnapshot",
    "ClusterView",
    "Controller",
    "Endpoint",
    "PartitionRegistration",
    "SessionEvent",
    "TopicMetadata",
    "TopicPartition",
    "ZkCluster",
    "ZkSession",
    "ZooKeeperUnavailable",
    "validate_topic_name",
]
