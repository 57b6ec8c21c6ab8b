"""DeleteRecords (v0-v2): move a partition's log start offset forward (a topic the
client may not DELETE is answered TOPIC_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import TopicAuthorizationFailed, response_error
from odradek.security.acl import Operation, ResourceType
from odradek.types import TopicPartition

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import DeleteRecordsRequest

__all__ = ["handle_delete_records"]


def handle_delete_records(ctx: RequestContext, request: DeleteRecordsRequest) -> ResponsePayload:
    module = response_module(ApiKey.DELETE_RECORDS, ctx.api_version)
    replica_manager = ctx.services.replica_manager
    topics = []
    for topic in request.topics:
        partitions = []
        allowed = ctx.authorize(Operation.DELETE, ResourceType.TOPIC, topic.name)
        for part in topic.partitions:
            key = TopicPartition(topic.name, int(part.partition_index))
            low_watermark: int
            try:
                if not allowed:
                    raise TopicAuthorizationFailed
                low_watermark = replica_manager.delete_records(key, int(part.offset))
                code = ErrorCode.none
            except Exception as exc:
                code, _message = response_error(exc, f"delete records of {key}")
                low_watermark = -1
            partitions.append(
                build(module.DeleteRecordsPartitionResult, partition_index=key.partition,
                      low_watermark=low_watermark, error_code=code)
            )
        topics.append(
            build(module.DeleteRecordsTopicResult, name=topic.name, partitions=tuple(partitions))
        )
    return build_response(module.DeleteRecordsResponse,
                          throttle_time=NO_THROTTLE, topics=tuple(topics))
