"""Sending a transaction's markers to the leaders of its partitions (the coordinator side
of WriteTxnMarkers).

Partitions this broker leads get the marker appended directly (the same replica-manager
path the WriteTxnMarkers handler takes, acks=all); the others get one WriteTxnMarkers v1
request per leader over the inter-broker listener. Whatever is not confirmed is retried,
regrouped by the current leaders, with a backoff up to 1 s, until every partition has its
marker: a coordinator may only record CompleteCommit/CompleteAbort after that. A partition
that answers INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED already has a newer
epoch's state (a later coordinator or producer moved on), and one whose topic was deleted
needs no marker: all three count as done, as in Kafka.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from odradek.client.connection import Connection, NodeAddress
from odradek.client.security import PLAINTEXT, ClientSecurity
from odradek.clock import wall_ms
from odradek.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.control_records import ControlType, TxnMarker, encode_marker_batch
from odradek.replication import Acks
from odradek.types import TopicPartition

from .context import BrokerServices
from .inter_broker import inter_broker_endpoint

if TYPE_CHECKING:  # the version _VERSION names
    from kio.schema.write_txn_markers.v1.response import WriteTxnMarkersResponse

__all__ = ["ClusterMarkerWriter", "append_markers_locally"]

log = logging.getLogger(__name__)

_DONE = frozenset({ErrorCode.none, ErrorCode.invalid_producer_epoch,
                   ErrorCode.transaction_coordinator_fenced,
                   ErrorCode.unknown_topic_or_partition})
_VERSION = 1


async def append_markers_locally(services: BrokerServices, marker: TxnMarker,
                                 partitions: Iterable[TopicPartition]
                                 ) -> dict[TopicPartition, ErrorCode]:
    """Append ``marker`` to partitions this broker leads (acks=all); errors per partition.

    The one place markers enter local logs (WriteTxnMarkers and this coordinator's own
    partitions alike), so it is also where the group coordinator learns that a transaction
    ended in a ``__consumer_offsets`` partition and installs or drops its pending offsets.
    """
    batch = encode_marker_batch(marker, wall_ms())
    outcome = services.replica_manager.append_records(
        dict.fromkeys(partitions, batch), acks=Acks.ALL,
        timeout_ms=services.sections.network.request_timeout_ms, from_coordinator=True,
    )
    results = await outcome if isinstance(outcome, asyncio.Future) else outcome
    errors = {key: result.error for key, result in results.items()}
    groups = services.group_coordinator
    for key, error in errors.items():
        if error == ErrorCode.none and key.topic == CONSUMER_OFFSETS_TOPIC:
            groups.complete_txn(key.partition, marker.producer_id, not marker.is_abort)
    return errors


class ClusterMarkerWriter:
    def __init__(self, services: BrokerServices, security: ClientSecurity = PLAINTEXT) -> None:
        self._services = services
        self._security = security  # the inter-broker listener's TLS/SASL
        self._connections: dict[int, Connection] = {}

    async def write_markers(self, producer_id: int, producer_epoch: int, commit: bool,
                            coordinator_epoch: int,
                            partitions: frozenset[TopicPartition]) -> None:
        marker = TxnMarker(producer_id, producer_epoch,
                           ControlType.COMMIT if commit else ControlType.ABORT,
                           coordinator_epoch)
        pending = set(partitions)
        backoff = 0.05
        while pending:
            for leader, group in self._by_leader(pending).items():
                done = await self._send(leader, marker, group)
                pending -= done
            if pending:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)

    def _by_leader(self, pending: set[TopicPartition]) -> dict[int, list[TopicPartition]]:
        view = self._services.cluster.view
        groups: dict[int, list[TopicPartition]] = {}
        for key in list(pending):
            topic = view.topics.get(key.topic)
            state = topic.partitions.get(key.partition) if topic is not None else None
            if topic is None or state is None:
                pending.discard(key)  # deleted: nothing left to mark
                continue
            if state.leader >= 0:
                groups.setdefault(state.leader, []).append(key)
        return groups

    async def _send(self, leader: int, marker: TxnMarker,
                    partitions: list[TopicPartition]) -> set[TopicPartition]:
        try:
            if leader == self._services.broker_id:
                errors = await self._append_locally(marker, partitions)
            else:
                errors = await self._send_remote(leader, marker, partitions)
        except Exception as exc:
            log.info("markers for producer %d to broker %d failed: %s", marker.producer_id,
                     leader, exc)
            self._drop(leader)
            return set()
        return {key for key, error in errors.items() if error in _DONE}

    async def _append_locally(self, marker: TxnMarker, partitions: list[TopicPartition]
                              ) -> dict[TopicPartition, ErrorCode]:
        return await append_markers_locally(self._services, marker, partitions)

    async def _send_remote(self, leader: int, marker: TxnMarker,
                           partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        connection = await self._connection(leader)
        by_topic: dict[str, list[int]] = {}
        for key in partitions:
            by_topic.setdefault(key.topic, []).append(key.partition)
        body = {"markers": [{
            "producer_id": marker.producer_id, "producer_epoch": marker.producer_epoch,
            "transaction_result": not marker.is_abort,
            "coordinator_epoch": marker.coordinator_epoch,
            "topics": [{"name": topic, "partition_indexes": ids}
                       for topic, ids in by_topic.items()],
        }]}
        timeout = self._services.sections.network.request_timeout_ms / 1000 + 5
        response: WriteTxnMarkersResponse = await asyncio.wait_for(  # at _VERSION
            connection.send(ApiKey.WRITE_TXN_MARKERS, body, version=_VERSION), timeout)
        return {
            TopicPartition(str(topic.name), int(part.partition_index)):
                ErrorCode(part.error_code)
            for result in response.markers for topic in result.topics
            for part in topic.partitions
        }

    async def _connection(self, broker_id: int) -> Connection:
        found = self._connections.get(broker_id)
        if found is not None and not found.closed:
            return found
        info = self._services.cluster.view.brokers.get(broker_id)
        if info is None:
            raise ConnectionError(f"broker {broker_id} is not registered")
        host, port = inter_broker_endpoint(
            info, self._services.sections.network.inter_broker_listener)
        connection = await Connection.open(NodeAddress(broker_id, host, port),
                                           client_id=f"txn-coordinator-{broker_id}",
                                           security=self._security)
        self._connections[broker_id] = connection
        return connection

    def _drop(self, broker_id: int) -> None:
        found = self._connections.pop(broker_id, None)
        if found is not None:
            found.close()

    async def close(self) -> None:
        for broker_id in list(self._connections):
            connection = self._connections.pop(broker_id)
            connection.close()
            with contextlib.suppress(Exception):
                await connection.wait_closed(1.0)
