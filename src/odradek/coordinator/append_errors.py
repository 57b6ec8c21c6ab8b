"""What a client is told when the coordinator's write to ``__consumer_offsets`` fails.

Kafka maps the replication layer's errors to coordinator errors: the client should look
for the coordinator again (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) rather than see a
storage error, and an oversized commit is INVALID_COMMIT_OFFSET_SIZE. Shared by the group
and the transaction coordinator.
"""

from __future__ import annotations

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.types import TopicPartition

from .offsets import CommitPlan

__all__ = ["AppendFailed", "AppendTimedOut", "append_error_to_coordinator_error",
           "commit_failed"]

_STORE_ERRORS = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
}


def append_error_to_coordinator_error(error: ErrorCode, *, for_commit: bool = False) -> ErrorCode:
    """What a client is told when the offsets log refused a write (Kafka's mapping: the
    client should look for the coordinator again rather than see a storage error)."""
    if for_commit and error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
        return ErrorCode.invalid_commit_offset_size
    return _STORE_ERRORS.get(error, error)


def commit_failed(plan: CommitPlan, exc: KafkaError) -> dict[TopicPartition, ErrorCode]:
    """Every partition the plan accepted gets the append's error, as the client sees it."""
    failed = append_error_to_coordinator_error(exc.code, for_commit=True)
    return {tp: failed if e is ErrorCode.none else e for tp, e in plan.errors.items()}


class AppendTimedOut(KafkaError):
    code = ErrorCode.request_timed_out


class AppendFailed(KafkaError):
    code = ErrorCode.unknown_server_error
