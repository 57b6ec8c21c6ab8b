"""Produce (v3-v9): hand each partition's batches to the replica manager; answer per acks.

The rules (acks, min.insync.replicas, waiting for the high watermark, what each failure
answers) are the replication layer's (:meth:`ReplicaManager.append_records`); this
handler decodes, calls, and encodes (the response is laid out directly, byte-identical to
kio's: :mod:`odradek.protocol.produce_response`). acks=0 sends nothing back — a failure closes the
connection instead, as Kafka does, so the client notices. Produce never creates topics.
Record data is handed on as the bytes kio parsed — no per-record Python work.

Authorization (Kafka's): a transactional producer needs WRITE on its transactional id, else
every partition is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each topic needs WRITE,
else its partitions are answered TOPIC_AUTHORIZATION_FAILED beside the others' results.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING

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
from odradek.security.acl import Operation, ResourceType
from odradek.types import TopicPartition

from ..context import RequestContext
from ..outcomes import CLOSE_CONNECTION, NO_RESPONSE, Deferred, Marker

if TYPE_CHECKING:
    from odradek.protocol.api_types import ProduceRequest

__all__ = ["handle_produce"]


def handle_produce(
    ctx: RequestContext, request: ProduceRequest
) -> EncodedResponse | Marker | Deferred[AppendResults]:
    entries = {}
    denied: dict[TopicPartition, ErrorCode] = {}
    transactional_id = request.transactional_id
    if transactional_id is not None and not ctx.authorize(
            Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        whole: ErrorCode | None = ErrorCode.transactional_id_authorization_failed
    else:
        whole = None
    for topic_data in request.topic_data:
        code = whole
        if code is None and not ctx.authorize(Operation.WRITE, ResourceType.TOPIC,
                                              topic_data.name):
            code = ErrorCode.topic_authorization_failed
        for partition_data in topic_data.partition_data:
            key = TopicPartition(topic_data.name, int(partition_data.index))
            if code is None:
                entries[key] = partition_data.records
            else:
                denied[key] = code
    try:
        acks = Acks.from_wire(int(request.acks))
    except InvalidRequiredAcks as exc:  # every partition refused, as Kafka answers
        refused = AppendResult(exc.code, message=str(exc))
        return _response(ctx, dict.fromkeys(entries, refused), denied)
    if not entries and acks != Acks.NONE:
        return _response(ctx, {}, denied)
    outcome = ctx.services.replica_manager.append_records(
        entries, acks=acks, timeout_ms=millis(request.timeout)
    )
    if acks == Acks.NONE:
        assert not isinstance(outcome, asyncio.Future)  # acks=0 never waits
        failed = bool(denied) or any(result.error != ErrorCode.none
                                     for result in outcome.values())
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    if isinstance(outcome, asyncio.Future):
        return Deferred(outcome, functools.partial(_response, ctx, denied=denied))
    return _response(ctx, outcome, denied)


def _response(ctx: RequestContext, results: AppendResults,
              denied: dict[TopicPartition, ErrorCode]) -> EncodedResponse:
    """The answer, laid out directly (:mod:`odradek.protocol.produce_response`);
    ``denied``: the partitions authorization refused, with their codes."""
    by_topic: dict[str, list[PartitionProduceResult]] = {}
    codes: list[int] = []
    for (topic, index), code in denied.items():
        codes.append(code)
        by_topic.setdefault(topic, []).append(PartitionProduceResult(index, code))
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
