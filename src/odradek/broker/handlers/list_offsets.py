"""ListOffsets (v1-v7): earliest (-2), latest (-1), max timestamp (-3), or by timestamp."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, response_module
from odradek.protocol.errors import KafkaError, error_code_of

from ..context import RequestContext
from ..replica_manager import Partition

__all__ = ["EARLIEST", "LATEST", "MAX_TIMESTAMP", "handle_list_offsets"]

log = logging.getLogger(__name__)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3


def _lookup(partition: Partition, timestamp: int) -> tuple[int, int]:
    """(offset, timestamp) for one query; (-1, -1) when no record is that recent."""
    partition_log = partition.log
    if timestamp == LATEST:
        return partition_log.high_watermark, -1
    if timestamp == EARLIEST:
        return partition_log.log_start_offset, -1
    found = partition_log.offset_for_timestamp(timestamp)  # also answers MAX_TIMESTAMP
    if found is None:
        return -1, -1
    offset, found_timestamp = found
    if offset >= partition_log.high_watermark:
        return -1, -1
    return int(offset), int(found_timestamp)


def handle_list_offsets(ctx: RequestContext, request: Any) -> Any:
    module = response_module(ApiKey.LIST_OFFSETS, ctx.api_version)
    replica_manager = ctx.services.replica_manager
    topics = []
    for topic in request.topics:
        partitions = []
        for part in topic.partitions:
            index = int(part.partition_index)
            try:
                partition = replica_manager.leader_partition(topic.name, index)
                partition.check_leader_epoch(int(getattr(part, "current_leader_epoch", -1)))
                offset, timestamp = _lookup(partition, int(part.timestamp))
                code = ErrorCode.none
                epoch = partition.leader_epoch if offset >= 0 else -1
            except KafkaError as exc:
                code, offset, timestamp, epoch = error_code_of(exc), -1, -1, -1
            except Exception:
                log.exception("list offsets of %s-%d failed", topic.name, index)
                code, offset, timestamp, epoch = ErrorCode.unknown_server_error, -1, -1, -1
            partitions.append(
                build(module.ListOffsetsPartitionResponse, partition_index=index,
                      error_code=code, timestamp=timestamp, offset=offset, leader_epoch=epoch,
                      old_style_offsets=())
            )
        topics.append(
            build(module.ListOffsetsTopicResponse, name=topic.name, partitions=tuple(partitions))
        )
    return build(module.ListOffsetsResponse, throttle_time=NO_THROTTLE, topics=tuple(topics))
