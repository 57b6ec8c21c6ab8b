"""Starting the transaction coordinator inside a broker: its log, its markers, its
leadership events.

Split from :mod:`odradek.broker.server` because it only connects parts that already exist:
``__transaction_state`` is written through the same acks=all :class:`ReplicatedOffsetsLog`
the group coordinator uses (with the transaction log's topic), markers go out through
:class:`~odradek.broker.txn_marker_writer.ClusterMarkerWriter`, producer ids come from the
broker's block allocator, and the coordinator epoch sent with markers is the leader epoch
of the coordinating ``__transaction_state`` partition (a deposed coordinator's markers are
then refused as TRANSACTION_COORDINATOR_FENCED).
"""

from __future__ import annotations

import asyncio

from odradek.client.security import PLAINTEXT, ClientSecurity
from odradek.coordinator.partitioning import TRANSACTION_STATE_TOPIC
from odradek.coordinator.txn_coordinator import TransactionCoordinator, TxnCoordinatorConfig
from odradek.types import TopicPartition

from .context import BrokerServices
from .offsets_log import ReplicatedOffsetsLog
from .txn_marker_writer import ClusterMarkerWriter

__all__ = ["start_transaction_coordinator"]


def start_transaction_coordinator(
    services: BrokerServices, stopped: asyncio.Event, security: ClientSecurity = PLAINTEXT
) -> tuple[TransactionCoordinator, ClusterMarkerWriter]:
    """``security``: the inter-broker listener's TLS/SASL, for WriteTxnMarkers to leaders."""
    settings = services.sections.transactions
    replica_manager = services.replica_manager
    writer = ClusterMarkerWriter(services, security)

    def coordinator_epoch(partition: int) -> int:
        found = replica_manager.partitions().get(TopicPartition(TRANSACTION_STATE_TOPIC, partition))
        return int(found.leader_epoch) if found is not None else -1

    coordinator = TransactionCoordinator(
        TxnCoordinatorConfig(
            num_partitions=settings.state_log_num_partitions,
            max_timeout_ms=settings.max_timeout_ms,
            cleanup_interval_ms=settings.abort_timed_out_cleanup_interval_ms,
            transactional_id_expiration_ms=settings.transactional_id_expiration_ms,
            remove_expired_interval_ms=settings.remove_expired_cleanup_interval_ms,
        ),
        ReplicatedOffsetsLog(
            replica_manager, topic=TRANSACTION_STATE_TOPIC,
            commit_timeout_ms=services.sections.network.request_timeout_ms,
        ),
        writer,
        services.producer_ids.next_id,
        coordinator_epoch,
        services.metrics.transactions if services.metrics is not None else None,
    )

    def on_leadership(topic: str, partition: int, is_leader: bool) -> None:
        if topic != TRANSACTION_STATE_TOPIC or stopped.is_set():
            return
        if is_leader:
            coordinator.on_become_leader(partition)
        else:
            coordinator.on_resign(partition)

    replica_manager.add_leadership_listener(on_leadership)
    coordinator.start()
    return coordinator, writer
