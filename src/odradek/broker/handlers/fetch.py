"""Fetch (v4-v12): the replica manager reads; the answer goes out as zero-copy regions.

isolation_level 1 (read_committed) reads below the last stable offset and gets the aborted
transactions of the range returned; 0 reads below the high watermark.

What is read, for whom, and how long a fetch may wait are the replication layer's rules
(:mod:`odradek.replication.reads`, :meth:`ReplicaManager.fetch`). This handler decodes
the request into :class:`FetchParams` and encodes the answer with the zero-copy encoder
(bulk record data leaves the page cache by ``sendfile``; a region of at most 16 KiB is
copied into the response's one write, see ``response_stream``).

From v7 a fetch may belong to an incremental fetch session (KIP-227,
:mod:`odradek.replication.fetch_session`): the session's context says which partitions to
visit (only those that changed on either side since the client last heard of them), lets
the read skip partitions with nothing new, and cuts the answer to what the client does not
know yet. A session error
(FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) is answered at once, with no
partitions.

Authorization (Kafka's): a follower needs CLUSTER_ACTION on the cluster, else every
partition it names is answered TOPIC_AUTHORIZATION_FAILED. A consumer needs READ on each
topic, checked per topic of everything the fetch reads (the replication layer's
``authorized``), so a session's partitions are checked on every fetch, not only when the
client first names them.

A consumer's fetch counts against its ``consumer_byte_rate`` quota (Kafka's way): it reads
at most the quota's bytes of one measurement window, the response size is recorded once it
is known, and a fetch over quota is answered *empty* with the throttle time (its bytes are
taken back: the consumer fetches them again after the throttle) while the connection is
muted (:mod:`..throttling`). Replica fetches are never throttled.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_ms
from odradek.protocol.builder import millis
from odradek.protocol.fetch_response import (
    EncodedResponse,
    FetchPartitionResult,
    FetchTopicResult,
    encode_fetch_response,
)
from odradek.quota import QuotaManager, QuotaType
from odradek.replication import FetchParams, FetchRead, PartitionFetch
from odradek.replication.fetch_session import FetchContext, SessionError
from odradek.replication.reads import Authorized
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType
from odradek.types import TopicPartition

from ..context import RequestContext
from ..outcomes import Deferred
from ..throttling import quota_user

if TYPE_CHECKING:
    from odradek.protocol.api_types import FetchRequest

__all__ = ["handle_fetch"]

_FETCH = QuotaType.FETCH
_TOPIC_DENIED = int(ErrorCode.topic_authorization_failed)


def handle_fetch(
    ctx: RequestContext, request: FetchRequest
) -> EncodedResponse | Deferred[FetchRead]:
    version, correlation_id = ctx.api_version, ctx.header.correlation_id
    replica_id = int(request.replica_id)
    authorized: Authorized | None = None
    if ctx.services.authorizer is not None:
        if replica_id < 0:
            authorized = _readable(ctx)
        elif not ctx.authorize(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            denied = [FetchTopicResult(topic.topic, tuple(
                FetchPartitionResult(int(part.partition), _TOPIC_DENIED)
                for part in topic.partitions)) for topic in request.topics]
            return encode_fetch_response(version, correlation_id, denied)
    max_bytes = max(int(request.max_bytes), 0)
    quotas = ctx.services.quotas
    if quotas is None or replica_id >= 0 or not quotas.enabled(_FETCH):
        quotas = None
    else:
        cap = quotas.max_bytes_in_window(_FETCH, quota_user(ctx.principal), _client_id(ctx))
        if cap is not None:
            max_bytes = min(max_bytes, cap)
    wanted = tuple(
        PartitionFetch(
            topic.topic,
            int(part.partition),
            int(part.fetch_offset),
            max(int(part.partition_max_bytes), 0),
            int(getattr(part, "current_leader_epoch", -1)),
        )
        for topic in request.topics
        for part in topic.partitions
    )
    replica_manager = ctx.services.replica_manager
    context: FetchContext | SessionError
    if version >= 7:  # fetch sessions; mypy does not narrow the kio union by version
        context = replica_manager.fetch_sessions.new_context(
            session_id=int(request.session_id),  # type: ignore[union-attr]
            epoch=int(request.session_epoch),  # type: ignore[union-attr]
            wanted=wanted, forgotten=[
                TopicPartition(topic.topic, int(index))
                for topic in request.forgotten_topics_data  # type: ignore[union-attr]
                for index in topic.partitions
            ],
            replica_id=replica_id, now_ms=monotonic_ms())
        if isinstance(context, SessionError):
            return encode_fetch_response(version, correlation_id, (),
                                         error_code=context.code)
    else:
        context = FetchContext(wanted)
    params = FetchParams(
        replica_id=replica_id,
        min_bytes=int(request.min_bytes),
        max_bytes=max_bytes,
        max_wait_ms=millis(request.max_wait),
        partitions=context.partitions,
        isolation_level=int(request.isolation_level),
    )
    outcome = replica_manager.fetch(
        params, session=context if context.incremental else None, authorized=authorized)
    if isinstance(outcome, asyncio.Future):
        return Deferred(outcome,
                        functools.partial(_respond, ctx, quotas, context))
    return _respond(ctx, quotas, context, outcome)


def _readable(ctx: RequestContext) -> Authorized:
    """May the consumer READ a topic (decided once per topic of the request)."""
    readable: dict[str, bool] = {}

    def authorized(topic: str) -> bool:
        allowed = readable.get(topic)
        if allowed is None:
            allowed = readable[topic] = ctx.authorize(Operation.READ, ResourceType.TOPIC, topic)
        return allowed

    return authorized


def _client_id(ctx: RequestContext) -> str:
    return ctx.header.client_id or ""


def _respond(ctx: RequestContext, quotas: QuotaManager | None, context: FetchContext,
             read: FetchRead) -> EncodedResponse:
    version, correlation_id = ctx.api_version, ctx.header.correlation_id
    if quotas is not None:
        user, client_id = quota_user(ctx.principal), _client_id(ctx)
        throttle_ms = quotas.record(_FETCH, user, client_id, read.total_bytes)
        if throttle_ms > 0:
            quotas.unrecord(_FETCH, user, client_id, read.total_bytes)
            if ctx.throttle is not None:
                ctx.throttle.mute(throttle_ms)
            return encode_fetch_response(version, correlation_id, (),
                                         throttle_time_ms=throttle_ms,
                                         session_id=context.throttled())
    topics, session_id = context.respond(read.topics)
    return encode_fetch_response(version, correlation_id, topics,
                                 session_id=session_id)
