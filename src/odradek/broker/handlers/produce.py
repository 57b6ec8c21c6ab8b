"""Produce (v3-v9): append batches to partition logs; answer per acks.

acks=0 sends nothing back (a failure closes the connection, as Kafka does, so the client
notices); acks=1 answers once the leader has appended; acks=-1 is refused with
NOT_ENOUGH_REPLICAS before appending when the ISR is below ``min.insync.replicas``, and
answers once the high watermark covers the appended records (immediately while the ISR is
only the leader), waiting in the produce purgatory otherwise. If the ISR shrank below
``min.insync.replicas`` by the time the HW covers them, the answer is
NOT_ENOUGH_REPLICAS_AFTER_APPEND (Kafka's rule); if leadership was lost meanwhile —
even if regained since, as the log may have been truncated in between — it is
NOT_LEADER_OR_FOLLOWER. Produce never creates topics.
Record data is handed to storage as the bytes kio parsed — no per-record Python work.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, millis, response_module, timestamp_or_none
from odradek.protocol.errors import CorruptRecord, KafkaError, error_code_of

from ..context import RequestContext
from ..delayed import DelayedOperation
from ..dispatch import CLOSE_CONNECTION, NO_RESPONSE
from ..replica_manager import Partition, ReplicaManager

__all__ = ["PartitionAppendResult", "handle_produce"]

log = logging.getLogger(__name__)


@dataclass
class PartitionAppendResult:
    error: ErrorCode = ErrorCode.none
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    message: str | None = None


@dataclass(frozen=True, slots=True)
class _Awaiting:
    """An acks=-1 append waiting for the HW, in the leadership term that appended it."""

    partition: Partition
    required_offset: int
    leader_generation: int


def _append_one(
    replica_manager: ReplicaManager, topic: str, index: int, records: Any, acks: int
) -> tuple[PartitionAppendResult, Partition | None, int]:
    """Append to one partition; returns (result, partition, offset the HW must reach)."""
    try:
        partition = replica_manager.leader_partition(topic, index)
        if acks == -1:
            partition.check_enough_replicas()
        if not records:
            raise CorruptRecord("produce request carries no records")
        info = partition.log.append(records, leader_epoch=partition.leader_epoch)
        replica_manager.after_append(partition)
        result = PartitionAppendResult(
            base_offset=info.first_offset,
            log_append_time=info.log_append_time,
            log_start_offset=info.log_start_offset,
        )
        return result, partition, info.last_offset + 1
    except KafkaError as exc:
        return PartitionAppendResult(error=error_code_of(exc), message=str(exc) or None), None, 0
    except Exception as exc:
        log.exception("append to %s-%d failed", topic, index)
        failed = PartitionAppendResult(error=ErrorCode.unknown_server_error, message=str(exc))
        return failed, None, 0


class DelayedProduce(DelayedOperation[Any]):
    """An acks=-1 produce waiting for the high watermark of each appended partition."""

    def __init__(
        self,
        results: dict[tuple[str, int], PartitionAppendResult],
        waiting: dict[tuple[str, int], _Awaiting],
        respond: Any,
    ) -> None:
        super().__init__()
        self._results = results
        self._waiting = waiting
        self._respond = respond

    def try_complete(self) -> bool:
        for key, awaiting in list(self._waiting.items()):
            partition = awaiting.partition
            if not partition.is_leader or (
                partition.leader_generation != awaiting.leader_generation
            ):
                self._results[key].error = ErrorCode.not_leader_or_follower
                del self._waiting[key]
            elif partition.log.high_watermark >= awaiting.required_offset:
                if len(partition.isr) < partition.min_insync_replicas:
                    self._results[key].error = ErrorCode.not_enough_replicas_after_append
                del self._waiting[key]
        if self._waiting:
            return False
        self.complete(self._respond(self._results))
        return True

    def on_expire(self) -> None:
        for key in self._waiting:
            self._results[key].error = ErrorCode.request_timed_out
        self.complete(self._respond(self._results))


def handle_produce(ctx: RequestContext, request: Any) -> Any:
    replica_manager = ctx.services.replica_manager
    acks = int(request.acks)
    results: dict[tuple[str, int], PartitionAppendResult] = {}
    waiting: dict[tuple[str, int], _Awaiting] = {}
    for topic_data in request.topic_data:
        topic = topic_data.name
        for partition_data in topic_data.partition_data:
            key = (topic, int(partition_data.index))
            if acks not in (-1, 0, 1):
                results[key] = PartitionAppendResult(error=ErrorCode.invalid_required_acks)
                continue
            result, partition, required = _append_one(
                replica_manager, topic, key[1], partition_data.records, acks
            )
            results[key] = result
            if acks == -1 and partition is not None:
                waiting[key] = _Awaiting(partition, required, partition.leader_generation)

    if acks == 0:
        failed = any(result.error != ErrorCode.none for result in results.values())
        return CLOSE_CONNECTION if failed else NO_RESPONSE

    version = ctx.api_version

    def respond(final: dict[tuple[str, int], PartitionAppendResult]) -> Any:
        return _response(version, final)

    if not waiting:
        return respond(results)
    operation = DelayedProduce(results, waiting, respond)
    return replica_manager.produce_purgatory.try_complete_else_watch(
        operation, list(waiting), millis(request.timeout) / 1000
    )


def _response(version: int, results: dict[tuple[str, int], PartitionAppendResult]) -> Any:
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
