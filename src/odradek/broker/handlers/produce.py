"""Produce (v3-v9): hand each partition's batches to the replica manager; answer per acks.

The rules (acks, min.insync.replicas, waiting for the high watermark, what each failure
answers) are the replication layer's (:meth:`ReplicaManager.append_records`); this
handler decodes, calls, and encodes. acks=0 sends nothing back — a failure closes the
connection instead, as Kafka does, so the client notices. Produce never creates topics.
Record data is handed on as the bytes kio parsed — no per-record Python work.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import (
    NO_THROTTLE,
    build,
    millis,
    response_module,
    timestamp_or_none,
)
from odradek.replication import AppendResults
from odradek.types import TopicPartition

from ..context import RequestContext
from ..outcomes import CLOSE_CONNECTION, NO_RESPONSE, Deferred

__all__ = ["handle_produce"]


def handle_produce(ctx: RequestContext, request: Any) -> Any:
    acks = int(request.acks)
    entries = {
        TopicPartition(topic_data.name, int(partition_data.index)): partition_data.records
        for topic_data in request.topic_data
        for partition_data in topic_data.partition_data
    }
    outcome = ctx.services.replica_manager.append_records(
        entries, acks=acks, timeout_ms=millis(request.timeout)
    )
    if acks == 0:
        assert not isinstance(outcome, asyncio.Future)  # acks=0 never waits
        failed = any(result.error != ErrorCode.none for result in outcome.values())
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    if isinstance(outcome, asyncio.Future):
        return Deferred(outcome, functools.partial(_response, ctx.api_version))
    return _response(ctx.api_version, outcome)


def _response(version: int, results: AppendResults) -> Any:
    module = response_module(ApiKey.PRODUCE, version)
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), result in results.items():
        by_topic.setdefault(topic, []).append(
            build(
                module.PartitionProduceResponse,
                index=index,
                error_code=result.error,
                base_offset=result.base_offset,
                log_append_time=timestamp_or_none(result.log_append_time),
                log_start_offset=result.log_start_offset,
                record_errors=(),
                error_message=result.message if result.error != ErrorCode.none else None,
            )
        )
    return build(
        module.ProduceResponse,
        responses=tuple(
            build(module.TopicProduceResponse, name=topic, partition_responses=tuple(parts))
            for topic, parts in by_topic.items()
        ),
        throttle_time=NO_THROTTLE,
    )
