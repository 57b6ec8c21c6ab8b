"""acks=-1 appends waiting for the high watermark (Kafka's DelayedProduce).

An acks=-1 write is acknowledged once the high watermark covers it — every in-sync replica
has it. Until then it waits in the produce purgatory, watching its partitions: an append,
a follower fetch that moves the HW, an ISR or leadership change re-tests it. Per partition:

* the HW reached the write: success, unless the ISR shrank below ``min.insync.replicas``
  (capped at the number of replicas) meanwhile (NOT_ENOUGH_REPLICAS_AFTER_APPEND, Kafka's
  rule);
* leadership was lost — even if regained since, as the log may have been truncated in
  between (``leader_generation`` changed): NOT_LEADER_OR_FOLLOWER;
* the timeout passed first: REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from odradek.types import Offset, TopicPartition

from .partition import Partition
from .purgatory import DelayedOperation

__all__ = [
    "AppendResult", "AppendResults", "AwaitingReplication", "DelayedProduce", "settle",
]


@dataclass
class AppendResult:
    """The outcome of one partition's append, as a Produce response reports it."""

    error: ErrorCode = ErrorCode.none
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    message: str | None = None


AppendResults = dict[TopicPartition, AppendResult]


@dataclass(frozen=True, slots=True)
class AwaitingReplication:
    """An acks=-1 append waiting for the HW, in the leadership term that appended it."""

    partition: Partition
    required_offset: Offset
    leader_generation: int

    @classmethod
    def after(cls, partition: Partition, last_offset: int) -> AwaitingReplication:
        return cls(partition, Offset(last_offset + 1), partition.leader_generation)

    @property
    def replicated(self) -> bool:
        return self.partition.log.high_watermark >= self.required_offset


class DelayedProduce(DelayedOperation[AppendResults]):
    """Completes with ``results`` once every awaited partition is decided."""

    def __init__(
        self, results: AppendResults, waiting: Mapping[TopicPartition, AwaitingReplication]
    ) -> None:
        super().__init__()
        self._results = results
        self._waiting = dict(waiting)

    def try_complete(self) -> bool:
        if not settle(self._results, self._waiting):
            return False
        self.complete(self._results)
        return True

    def on_expire(self) -> None:
        for key in self._waiting:
            self._results[key].error = ErrorCode.request_timed_out
        self.complete(self._results)


def settle(results: AppendResults, waiting: dict[TopicPartition, AwaitingReplication]) -> bool:
    """Decide every partition of ``waiting`` that can be decided now (the rules above),
    recording its error in ``results`` and dropping it from ``waiting``; True when none
    is left. :meth:`ReplicaManager.append_records` calls it right after appending, so a
    write the HW covers at once (we are the whole ISR) needs no delayed operation."""
    for key, awaiting in list(waiting.items()):
        partition = awaiting.partition
        if not partition.is_leader or (
            partition.leader_generation != awaiting.leader_generation
        ):
            results[key].error = ErrorCode.not_leader_or_follower
            del waiting[key]
        elif awaiting.replicated:
            if len(partition.isr) < partition.effective_min_insync_replicas:
                results[key].error = ErrorCode.not_enough_replicas_after_append
            del waiting[key]
    return not waiting
