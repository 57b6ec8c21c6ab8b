"""Fetch (v4-v12): the replica manager reads; the answer goes out as zero-copy regions.

isolation_level 1 (read_committed) reads below the last stable offset and gets the aborted
transactions of the range returned; 0 reads below the high watermark.

What is read, for whom, and how long a fetch may wait are the replication layer's rules
(:mod:`odradek.replication.reads`, :meth:`ReplicaManager.fetch`). This handler decodes
the request into :class:`FetchParams` and encodes the answer with the zero-copy encoder
(record data leaves the page cache by ``sendfile``). Incremental fetch sessions are not
offered (session id 0 in every response), so every request is a full fetch.
"""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.protocol.builder import millis
from odradek.protocol.fetch_response import Chunk, encode_fetch_response
from odradek.replication import FetchParams, FetchRead, PartitionFetch

from ..context import RequestContext

__all__ = ["handle_fetch"]


def handle_fetch(ctx: RequestContext, request: Any) -> Any:
    params = FetchParams(
        replica_id=int(request.replica_id),
        min_bytes=int(request.min_bytes),
        max_bytes=max(int(request.max_bytes), 0),
        max_wait_ms=millis(request.max_wait),
        partitions=tuple(
            PartitionFetch(
                topic.topic,
                int(part.partition),
                int(part.fetch_offset),
                max(int(part.partition_max_bytes), 0),
                int(getattr(part, "current_leader_epoch", -1)),
            )
            for topic in request.topics
            for part in topic.partitions
        ),
        isolation_level=int(request.isolation_level),
    )
    version, correlation_id = ctx.api_version, ctx.header.correlation_id
    outcome = ctx.services.replica_manager.fetch(params)
    if isinstance(outcome, asyncio.Future):
        return _respond_when_read(version, correlation_id, outcome)
    return encode_fetch_response(version, correlation_id, outcome.topics)


async def _respond_when_read(
    version: int, correlation_id: int, pending: asyncio.Future[FetchRead]
) -> list[Chunk]:
    return encode_fetch_response(version, correlation_id, (await pending).topics)
