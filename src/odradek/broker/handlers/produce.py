"""Produce (v3-v9): hand each partition's batches to the replica manager; answer per acks.

The rules (acks, min.insync.replicas, waiting for the high watermark, what each failure
answers) are the replication layer's (:meth:`ReplicaManager.append_records`); this
handler decodes, calls, and encodes (the response is laid out directly, byte-identical to
kio's: :mod:`odradek.protocol.produce_response`). acks=0 sends nothing back — a failure closes the
connection instead, as Kafka does, so the client notices. Produce never creates topics.
Record data is handed on as the bytes kio parsed — no per-record Python work.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.builder import millis
from odradek.protocol.errors import InvalidRequiredAcks
from odradek.protocol.fetch_response import EncodedResponse
from odradek.protocol.produce_response import (
    PartitionProduceResult,
    encode_produce_response,
    throttle_offset,
)
from odradek.replication import Acks, AppendResult, AppendResults
from odradek.types import TopicPartition

from ..context import RequestContext
from ..outcomes import CLOSE_CONNECTION, NO_RESPONSE, Deferred

__all__ = ["handle_produce"]


def handle_produce(ctx: RequestContext, request: Any) -> Any:
    entries = {
        TopicPartition(topic_data.name, int(partition_data.index)): partition_data.records
        for topic_data in request.topic_data
        for partition_data in topic_data.partition_data
    }
    try:
        acks = Acks.from_wire(int(request.acks))
    except InvalidRequiredAcks as exc:  # every partition refused, as Kafka answers
        return _response(ctx, dict.fromkeys(entries, AppendResult(exc.code, message=str(exc))))
    outcome = ctx.services.replica_manager.append_records(
        entries, acks=acks, timeout_ms=millis(request.timeout)
    )
    if acks == Acks.NONE:
        assert not isinstance(outcome, asyncio.Future)  # acks=0 never waits
        failed = any(result.error != ErrorCode.none for result in outcome.values())
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    if isinstance(outcome, asyncio.Future):
        return Deferred(outcome, functools.partial(_response, ctx))
    return _response(ctx, outcome)


def _response(ctx: RequestContext, results: AppendResults) -> EncodedResponse:
    """The answer, laid out directly (:mod:`odradek.protocol.produce_response`)."""
    by_topic: dict[str, list[PartitionProduceResult]] = {}
    codes: list[int] = []
    for (topic, index), result in results.items():
        error = result.error
        if error:
            codes.append(error)
        by_topic.setdefault(topic, []).append(PartitionProduceResult(
            index, error, result.base_offset, result.log_append_time, result.log_start_offset,
            result.message if error else None))
    version = ctx.api_version
    frame = encode_produce_response(version, ctx.header.correlation_id, list(by_topic.items()))
    return EncodedResponse([frame], codes, throttle_at=(0, throttle_offset(version, frame)))
