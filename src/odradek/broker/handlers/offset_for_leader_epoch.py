"""OffsetForLeaderEpoch (v2-v4): where a leader epoch ended, for truncation checks."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, response_module
from odradek.protocol.errors import KafkaError, error_code_of

from ..context import RequestContext

__all__ = ["handle_offset_for_leader_epoch"]

log = logging.getLogger(__name__)


def handle_offset_for_leader_epoch(ctx: RequestContext, request: Any) -> Any:
    module = response_module(ApiKey.OFFSET_FOR_LEADER_EPOCH, ctx.api_version)
    replica_manager = ctx.services.replica_manager
    topics = []
    for topic in request.topics:
        partitions = []
        for part in topic.partitions:
            index = int(part.partition)
            try:
                partition = replica_manager.leader_partition(topic.topic, index)
                partition.check_leader_epoch(int(part.current_leader_epoch))
                found = partition.log.end_offset_for_leader_epoch(int(part.leader_epoch))
                if found is None:
                    epoch, end_offset = -1, -1
                else:
                    epoch, end_offset = found
                code = ErrorCode.none
            except KafkaError as exc:
                code, epoch, end_offset = error_code_of(exc), -1, -1
            except Exception:
                log.exception("offset for leader epoch of %s-%d failed", topic.topic, index)
                code, epoch, end_offset = ErrorCode.unknown_server_error, -1, -1
            partitions.append(
                build(module.EpochEndOffset, error_code=code, partition=index,
                      leader_epoch=epoch, end_offset=end_offset)
            )
        topics.append(
            build(module.OffsetForLeaderTopicResult, topic=topic.topic,
                  partitions=tuple(partitions))
        )
    return build(module.OffsetForLeaderEpochResponse, throttle_time=NO_THROTTLE,
                 topics=tuple(topics))
