"""OffsetForLeaderEpoch (v2-v4): where a leader epoch ended, for truncation checks.

A follower (``replica_id`` >= 0, v3+) needs CLUSTER_ACTION on the cluster, else every
partition is answered CLUSTER_AUTHORIZATION_FAILED; a client needs DESCRIBE on each topic,
else its partitions are answered TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import (
    ClusterAuthorizationFailed,
    KafkaError,
    TopicAuthorizationFailed,
    response_error,
)
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType
from odradek.types import TopicPartition

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import OffsetForLeaderEpochRequest

__all__ = ["handle_offset_for_leader_epoch"]


def handle_offset_for_leader_epoch(
    ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> ResponsePayload:
    module = response_module(ApiKey.OFFSET_FOR_LEADER_EPOCH, ctx.api_version)
    replica_manager = ctx.services.replica_manager
    topics = []
    follower = int(getattr(request, "replica_id", -1)) >= 0
    refused: type[KafkaError] | None = None
    if follower and not ctx.authorize(Operation.CLUSTER_ACTION, ResourceType.CLUSTER,
                                      CLUSTER_NAME):
        refused = ClusterAuthorizationFailed
    for topic in request.topics:
        partitions = []
        denied = refused
        if not follower and not ctx.authorize(Operation.DESCRIBE, ResourceType.TOPIC,
                                              topic.topic):
            denied = TopicAuthorizationFailed
        for part in topic.partitions:
            key = TopicPartition(topic.topic, int(part.partition))
            epoch: int
            end_offset: int
            try:
                if denied is not None:
                    raise denied
                epoch, end_offset = replica_manager.end_offset_for_leader_epoch(
                    key, int(part.current_leader_epoch), int(part.leader_epoch)
                )
                code = ErrorCode.none
            except Exception as exc:
                code, _message = response_error(exc, f"offset for leader epoch of {key}")
                epoch, end_offset = -1, -1
            partitions.append(
                build(module.EpochEndOffset, error_code=code, partition=key.partition,
                      leader_epoch=epoch, end_offset=end_offset)
            )
        topics.append(
            build(module.OffsetForLeaderTopicResult, topic=topic.topic,
                  partitions=tuple(partitions))
        )
    return build_response(module.OffsetForLeaderEpochResponse, throttle_time=NO_THROTTLE,
                          topics=tuple(topics))
