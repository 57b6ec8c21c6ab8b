"""ListOffsets (v1-v7): earliest (-2), latest (-1), max timestamp (-3), or by timestamp.

With isolation_level 1 (read_committed, v2+) latest is the last stable offset and a
timestamp lookup only finds offsets below it, as in Kafka. A topic the client may not
DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import TopicAuthorizationFailed, response_error
from odradek.security.acl import Operation, ResourceType
from odradek.storage.log_reader import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from odradek.types import TopicPartition

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import ListOffsetsRequest

__all__ = ["EARLIEST", "LATEST", "MAX_TIMESTAMP", "handle_list_offsets"]

LATEST = LATEST_TIMESTAMP
EARLIEST = EARLIEST_TIMESTAMP


def handle_list_offsets(ctx: RequestContext, request: ListOffsetsRequest) -> ResponsePayload:
    module = response_module(ApiKey.LIST_OFFSETS, ctx.api_version)
    replica_manager = ctx.services.replica_manager
    read_committed = int(getattr(request, "isolation_level", 0)) == 1
    topics = []
    for topic in request.topics:
        partitions = []
        allowed = ctx.authorize(Operation.DESCRIBE, ResourceType.TOPIC, topic.name)
        for part in topic.partitions:
            key = TopicPartition(topic.name, int(part.partition_index))
            offset: int
            epoch: int
            try:
                if not allowed:
                    raise TopicAuthorizationFailed
                offset, timestamp, epoch = replica_manager.offset_for_timestamp(
                    key,
                    int(part.timestamp),
                    int(getattr(part, "current_leader_epoch", -1)),
                    read_committed,
                )
                code = ErrorCode.none
            except Exception as exc:
                code, _message = response_error(exc, f"list offsets of {key}")
                offset, timestamp, epoch = -1, -1, -1
            partitions.append(
                build(module.ListOffsetsPartitionResponse, partition_index=key.partition,
                      error_code=code, timestamp=timestamp, offset=offset, leader_epoch=epoch,
                      old_style_offsets=())
            )
        topics.append(
            build(module.ListOffsetsTopicResponse, name=topic.name, partitions=tuple(partitions))
        )
    return build_response(module.ListOffsetsResponse,
                          throttle_time=NO_THROTTLE, topics=tuple(topics))
