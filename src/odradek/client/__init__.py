"""odradek's Kafka client: producer, consumer (manual or group), admin.

Asyncio at the core (:class:`AsyncProducer`, :class:`AsyncConsumer`, :class:`AsyncAdminClient`)
with a thin synchronous facade (:class:`Producer`, :class:`Consumer`, :class:`AdminClient`) that
drives them from one background loop thread. Works with odradek and with Apache Kafka.

The paper's API::

    producer = Producer("localhost:9092")
    producer.send("topic1", [b"message 1", b"message 2"])
    for message in Consumer("topic1", bootstrap_servers="localhost:9092", group_id="g"):
        process(message.value)

Consumer groups use the classic protocol by default; ``group_protocol="consumer"`` selects
KIP-848's (server-side assignment, no stop-the-world rebalance), which odradek's broker and
Apache Kafka 4 serve.
"""

from .accumulator import RecordFuture, RecordMetadata
from .admin import AsyncAdminClient, ConfigEntry, GroupDescription, NewTopic
from .assignors import assign_cooperative_sticky, assign_range, assign_roundrobin
from .batch_codec import ConsumerRecord
from .consumer import AsyncConsumer
from .errors import (
    BrokerResponseError,
    ClientClosed,
    ConnectionFailed,
    DeliveryTimeout,
    KafkaClientError,
    NoOffsetForPartition,
)
from .group import CommitFailed
from .metadata import TopicPartition
from .offsets import EARLIEST, LATEST, OffsetAndTimestamp
from .partitioner import murmur2, partition_for_key
from .producer import AsyncProducer
from .sync import AdminClient, Consumer, Producer
from .transactions import ConsumerGroupMetadata
from .txn_state import IllegalTransactionState, TransactionAbortable, TransactionFatal
from .zk_consumer import AsyncZooKeeperConsumer, RebalanceFailed, ZooKeeperConsumer

__all__ = [
    "EARLIEST",
    "LATEST",
    "AdminClient",
    "AsyncAdminClient",
    "AsyncConsumer",
    "AsyncProducer",
    "BrokerResponseError",
    "ClientClosed",
    "CommitFailed",
    "ConfigEntry",
    "ConnectionFailed",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "DeliveryTimeout",
    "GroupDescription",
    "IllegalTransactionState",
    "KafkaClientError",
    "NewTopic",
    "NoOffsetForPartition",
    "OffsetAndTimestamp",
    "Producer",
    "RecordFuture",
    "RecordMetadata",
    "TopicPartition",
    "TransactionAbortable",
    "TransactionFatal",
    "assign_cooperative_sticky",
    "assign_range",
    "assign_roundrobin",
    "murmur2",
    "partition_for_key",
]
# Paper mode: consumer groups coordinated through ZooKeeper alone (section 3.3).
__all__ += ["AsyncZooKeeperConsumer", "RebalanceFailed", "ZooKeeperConsumer"]
