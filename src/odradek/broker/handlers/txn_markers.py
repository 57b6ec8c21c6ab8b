"""WriteTxnMarkers (v1-v2): the transaction coordinator ends a transaction in a partition.

Broker to broker: the coordinator of a transactional id sends, for each producer, COMMIT or
ABORT and the partitions to mark; the leader of each appends one control batch (Kafka's
marker layout, :mod:`odradek.protocol.control_records`) with acks=all semantics and answers
per partition once the marker is replicated (or ``request.timeout.ms`` passes). The
producer's epoch and the coordinator epoch are checked against the partition's producer
state: INVALID_PRODUCER_EPOCH for a marker older than the producer, and
TRANSACTION_COORDINATOR_FENCED for one from a deposed coordinator. Markers of different
producers are independent: one failing does not stop the others. The sender needs
CLUSTER_ACTION on the cluster, else every partition is CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import build, build_response, response_module
from odradek.protocol.control_records import ControlType, TxnMarker
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType
from odradek.types import TopicPartition

from ..context import RequestContext
from ..txn_marker_writer import append_markers_locally

if TYPE_CHECKING:
    from odradek.protocol.api_types import WriteTxnMarkersRequest

__all__ = ["handle_write_txn_markers"]


async def handle_write_txn_markers(
    ctx: RequestContext, request: WriteTxnMarkersRequest
) -> ResponsePayload:
    module = response_module(ApiKey.WRITE_TXN_MARKERS, ctx.api_version)
    if not ctx.authorize(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        denied = ErrorCode.cluster_authorization_failed
        return build_response(module.WriteTxnMarkersResponse, markers=tuple(
            build(module.WritableTxnMarkerResult, producer_id=wanted.producer_id, topics=tuple(
                build(module.WritableTxnMarkerTopicResult, name=topic.name, partitions=tuple(
                    build(module.WritableTxnMarkerPartitionResult, partition_index=index,
                          error_code=denied) for index in topic.partition_indexes))
                for topic in wanted.topics))
            for wanted in request.markers))
    pending: list[tuple[int, asyncio.Task[dict[TopicPartition, ErrorCode]]]] = []
    for wanted in request.markers:
        marker = TxnMarker(
            int(wanted.producer_id),
            int(wanted.producer_epoch),
            ControlType.COMMIT if wanted.transaction_result else ControlType.ABORT,
            int(wanted.coordinator_epoch),
        )
        partitions = [TopicPartition(topic.name, int(index))
                      for topic in wanted.topics for index in topic.partition_indexes]
        # appended at once, one task per marker, so markers of different producers proceed
        # together and one waiting for replication does not hold the others
        task = asyncio.ensure_future(append_markers_locally(ctx.services, marker, partitions))
        pending.append((marker.producer_id, task))
    results = []
    for producer_id, task in pending:
        errors = await task
        by_topic: dict[str, list[object]] = {}
        for key, error in errors.items():
            by_topic.setdefault(key.topic, []).append(
                build(module.WritableTxnMarkerPartitionResult, partition_index=key.partition,
                      error_code=error)
            )
        results.append(
            build(
                module.WritableTxnMarkerResult,
                producer_id=producer_id,
                topics=tuple(
                    build(module.WritableTxnMarkerTopicResult, name=name,
                          partitions=tuple(parts))
                    for name, parts in by_topic.items()
                ),
            )
        )
    return build_response(module.WriteTxnMarkersResponse, markers=tuple(results))
