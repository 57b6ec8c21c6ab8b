"""Offset lookups shared by consumer, admin and CLI: ListOffsets by timestamp, per leader.

Kafka's special timestamps: -2 is the earliest offset (log start), -1 the latest (the high
watermark, i.e. the offset the next record will get). Any other timestamp gives the earliest
offset whose record timestamp is >= it, or offset -1 when no record is that new.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey

from .cluster_client import STALE_METADATA_CODES, ClusterClient
from .errors import BrokerResponseError, KafkaClientError
from .metadata import TopicPartition

__all__ = ["EARLIEST", "LATEST", "OffsetAndTimestamp", "list_offsets"]

EARLIEST = -2
LATEST = -1


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


async def list_offsets(client: ClusterClient, query: Mapping[TopicPartition, int], *,
                       isolation_level: int = 0, timeout: float | None = None
                       ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
    """Offsets for ``{tp: timestamp}``; a partition with no record that new maps to None.

    As Kafka's clients do, stale metadata is never an answer: a partition the cached
    metadata lacks, has no leader for, or whose leader answers a retriable error
    (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION from a
    broker whose view lags a new topic) is retried with fresh metadata and backoff until
    ``timeout`` (default ``request.timeout.ms``). Only then is the last error raised —
    UNKNOWN_TOPIC_OR_PARTITION when fresh metadata still lacks the partition.
    """
    remaining = dict(query)
    result: dict[TopicPartition, OffsetAndTimestamp | None] = {}
    last_error: BaseException | None = None
    deadline = monotonic_s() + (client.request_timeout if timeout is None else timeout)
    attempt = 0
    while remaining:
        fresh = attempt > 0 or not client.metadata.knows({tp.topic for tp in remaining})
        metadata = (await client.refresh_metadata({tp.topic for tp in remaining}) if fresh
                    else client.metadata)
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, ts in remaining.items():
            if metadata.partition(tp) is None:
                last_error = BrokerResponseError(ErrorCode.unknown_topic_or_partition,
                                                 f"{tp.topic}-{tp.partition}")
                continue
            by_leader.setdefault(metadata.leader_for(tp), {})[tp] = ts
        unknown = by_leader.pop(-1, None)
        if unknown:
            last_error = BrokerResponseError(ErrorCode.leader_not_available,
                                             f"no leader for {sorted(unknown)}")
        answers = await asyncio.gather(
            *(_list_from(client, node, parts, isolation_level)
              for node, parts in by_leader.items()), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException):
                if not isinstance(answer, KafkaClientError):
                    raise answer
                last_error = answer
                continue
            for tp, value in answer.items():
                if isinstance(value, BrokerResponseError):
                    last_error = value
                    if value.code in STALE_METADATA_CODES or value.retriable:
                        continue
                    raise value
                result[tp] = value
                remaining.pop(tp, None)
        if not remaining:
            break
        client.invalidate()
        attempt += 1
        pause = client.retry_backoff * min(attempt, 10)
        if monotonic_s() + pause > deadline:
            raise last_error or BrokerResponseError(ErrorCode.leader_not_available,
                                                    f"offsets for {sorted(remaining)}")
        await asyncio.sleep(pause)
    return result


async def _list_from(client: ClusterClient, node: int, parts: Mapping[TopicPartition, int],
                     isolation_level: int
                     ) -> dict[TopicPartition, OffsetAndTimestamp | BrokerResponseError | None]:
    topics: dict[str, list[dict[str, int]]] = {}
    for tp, ts in parts.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": ts})
    response = await client.send(node, ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "isolation_level": isolation_level,
        "topics": [{"name": t, "partitions": p} for t, p in topics.items()]})
    out: dict[TopicPartition, OffsetAndTimestamp | BrokerResponseError | None] = {}
    for topic in response.topics:
        for part in topic.partitions:
            tp = TopicPartition(topic.name, int(part.partition_index))
            code = part.error_code
            if code:
                out[tp] = BrokerResponseError(code, f"ListOffsets {tp.topic}-{tp.partition}")
            elif int(part.offset) < 0:
                out[tp] = None
            else:
                out[tp] = OffsetAndTimestamp(int(part.offset), int(part.timestamp))
    return out
