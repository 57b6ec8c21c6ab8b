"""Fetch (v4-v12): read partition logs and answer with zero-copy record regions.

Rules clients depend on (COMPAT.md): the response holds exactly the requested partitions;
an offset above the high watermark (or below the log start) is OFFSET_OUT_OF_RANGE, equal
to it is simply empty; ``max_bytes`` bounds the response except that the first partition
with data always gets at least one whole batch (KIP-74); ``min_bytes`` and
``max_wait_ms`` decide whether to answer now or wait in the fetch purgatory, and the
answer always comes by ``max_wait_ms``. Incremental fetch sessions are not offered
(session id 0 in every response), so every request is a full fetch.

A Fetch with ``replica_id >= 0`` comes from a follower: it reads up to the log end, not
the high watermark; its fetch offset (once checked to lie inside our log) is the
follower's log end offset, which may advance the HW and bring the follower into the ISR
(``ReplicaManager.record_follower_fetch``). Consumers (``replica_id == -1``) read only
below the HW.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.builder import millis
from odradek.protocol.errors import KafkaError, OffsetOutOfRange, error_code_of
from odradek.protocol.fetch_response import (
    FetchPartitionResult,
    FetchTopicResult,
    encode_fetch_response,
)

from ..context import RequestContext
from ..delayed import DelayedOperation
from ..replica_manager import ReplicaManager

__all__ = ["handle_fetch"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _WantedPartition:
    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int


@dataclass(frozen=True, slots=True)
class _FetchParams:
    replica_id: int
    min_bytes: int
    max_bytes: int
    wanted: tuple[_WantedPartition, ...]

    @property
    def from_follower(self) -> bool:
        return self.replica_id >= 0


def _read_all(
    replica_manager: ReplicaManager, params: _FetchParams
) -> tuple[list[FetchTopicResult], int, bool]:
    """Read every wanted partition; returns (topics, record bytes, any partition errored)."""
    remaining = params.max_bytes
    total = 0
    errored = False
    first_with_data = True
    topics: list[FetchTopicResult] = []
    by_topic: dict[str, list[FetchPartitionResult]] = {}
    for wanted in params.wanted:
        parts = by_topic.get(wanted.topic)
        if parts is None:
            parts = by_topic[wanted.topic] = []
            topics.append(FetchTopicResult(wanted.topic, parts))
        try:
            result, size = _read_one(
                replica_manager, params, wanted, min(remaining, wanted.partition_max_bytes),
                first_with_data,
            )
        except KafkaError as exc:
            errored = True
            result, size = FetchPartitionResult(wanted.partition, error_code_of(exc)), 0
        except Exception:
            log.exception("fetch from %s-%d failed", wanted.topic, wanted.partition)
            errored = True
            result, size = FetchPartitionResult(wanted.partition, ErrorCode.unknown_server_error), 0
        parts.append(result)
        if size:
            first_with_data = False
            total += size
            remaining = max(remaining - size, 0)
    return topics, total, errored


def _read_one(
    replica_manager: ReplicaManager,
    params: _FetchParams,
    wanted: _WantedPartition,
    max_bytes: int,
    min_one_batch: bool,
) -> tuple[FetchPartitionResult, int]:
    partition = replica_manager.leader_partition(wanted.topic, wanted.partition)
    partition.check_leader_epoch(wanted.current_leader_epoch)
    partition_log = partition.log
    upper = partition_log.log_end_offset if params.from_follower else partition_log.high_watermark
    if wanted.fetch_offset > upper or wanted.fetch_offset < partition_log.log_start_offset:
        raise OffsetOutOfRange(
            f"{wanted.topic}-{wanted.partition}: offset {wanted.fetch_offset} outside "
            f"[{partition_log.log_start_offset}, {upper}]"
        )
    if params.from_follower:
        # Only an offset inside our log is the follower's LEO: one past our end would be
        # a diverged follower, and must never count towards the high watermark.
        replica_manager.record_follower_fetch(partition, params.replica_id, wanted.fetch_offset)
    region = None
    if wanted.fetch_offset < upper and (max_bytes > 0 or min_one_batch):
        read = partition_log.read(
            wanted.fetch_offset,
            max_bytes,
            isolation_high_watermark=not params.from_follower,
            min_one_batch=min_one_batch,
        )
        region = read.region
    high_watermark = partition_log.high_watermark
    result = FetchPartitionResult(
        partition_index=wanted.partition,
        error_code=0,
        high_watermark=high_watermark,
        last_stable_offset=high_watermark,
        log_start_offset=partition_log.log_start_offset,
        records=region,
    )
    return result, (region.length if region is not None else 0)


def _has_new_data(replica_manager: ReplicaManager, params: _FetchParams) -> bool:
    """Cheap pre-check before re-reading: did any wanted partition move past its offset?"""
    for wanted in params.wanted:
        try:
            partition = replica_manager.leader_partition(wanted.topic, wanted.partition)
        except KafkaError:
            return True  # an error is an answer
        upper = (
            partition.log.log_end_offset if params.from_follower else partition.log.high_watermark
        )
        if upper != wanted.fetch_offset:
            return True
    return False


class DelayedFetch(DelayedOperation[list[Any]]):
    def __init__(
        self, replica_manager: ReplicaManager, params: _FetchParams, version: int,
        correlation_id: int,
    ) -> None:
        super().__init__()
        self._replica_manager = replica_manager
        self._params = params
        self._version = version
        self._correlation_id = correlation_id

    def try_complete(self) -> bool:
        if not _has_new_data(self._replica_manager, self._params):
            return False
        topics, total, errored = _read_all(self._replica_manager, self._params)
        if total >= self._params.min_bytes or errored:
            self.complete(encode_fetch_response(self._version, self._correlation_id, topics))
            return True
        return False

    def on_expire(self) -> None:
        topics, _total, _errored = _read_all(self._replica_manager, self._params)
        self.complete(encode_fetch_response(self._version, self._correlation_id, topics))


def handle_fetch(ctx: RequestContext, request: Any) -> Any:
    replica_manager = ctx.services.replica_manager
    params = _FetchParams(
        replica_id=int(request.replica_id),
        min_bytes=int(request.min_bytes),
        max_bytes=max(int(request.max_bytes), 0),
        wanted=tuple(
            _WantedPartition(
                topic.topic,
                int(part.partition),
                int(part.fetch_offset),
                max(int(part.partition_max_bytes), 0),
                int(getattr(part, "current_leader_epoch", -1)),
            )
            for topic in request.topics
            for part in topic.partitions
        ),
    )
    version = ctx.api_version
    correlation_id = ctx.header.correlation_id
    topics, total, errored = _read_all(replica_manager, params)
    max_wait_ms = millis(request.max_wait)
    if total >= params.min_bytes or errored or max_wait_ms <= 0 or not params.wanted:
        return encode_fetch_response(version, correlation_id, topics)
    operation = DelayedFetch(replica_manager, params, version, correlation_id)
    keys = {(w.topic, w.partition) for w in params.wanted}
    return replica_manager.fetch_purgatory.try_complete_else_watch(
        operation, keys, max_wait_ms / 1000
    )
