"""DeleteRecords (v0-v2): move a partition's log start offset forward."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, response_module
from odradek.protocol.errors import KafkaError, OffsetOutOfRange, error_code_of

from ..context import RequestContext

__all__ = ["handle_delete_records"]

log = logging.getLogger(__name__)

_TO_HIGH_WATERMARK = -1


def handle_delete_records(ctx: RequestContext, request: Any) -> Any:
    module = response_module(ApiKey.DELETE_RECORDS, ctx.api_version)
    replica_manager = ctx.services.replica_manager
    topics = []
    for topic in request.topics:
        partitions = []
        for part in topic.partitions:
            index = int(part.partition_index)
            try:
                partition = replica_manager.leader_partition(topic.name, index)
                partition_log = partition.log
                offset = int(part.offset)
                if offset == _TO_HIGH_WATERMARK:
                    offset = partition_log.high_watermark
                if offset < 0 or offset > partition_log.high_watermark:
                    raise OffsetOutOfRange(
                        f"{topic.name}-{index}: {offset} is beyond the high watermark"
                    )
                partition_log.delete_records_before(offset)
                code, low_watermark = ErrorCode.none, partition_log.log_start_offset
            except KafkaError as exc:
                code, low_watermark = error_code_of(exc), -1
            except Exception:
                log.exception("delete records of %s-%d failed", topic.name, index)
                code, low_watermark = ErrorCode.unknown_server_error, -1
            partitions.append(
                build(module.DeleteRecordsPartitionResult, partition_index=index,
                      low_watermark=low_watermark, error_code=code)
            )
        topics.append(
            build(module.DeleteRecordsTopicResult, name=topic.name, partitions=tuple(partitions))
        )
    return build(module.DeleteRecordsResponse, throttle_time=NO_THROTTLE, topics=tuple(topics))
