"""Kafka error codes as one exception hierarchy.

Every failure that reaches a client is a Kafka error code. Code that detects a problem
raises the matching subclass (``raise NotLeaderOrFollower(...)``); the broker converts it
to the code exactly once, at the response boundary, with :func:`error_code_of`. The numeric
codes come from kio's ``ErrorCode`` enum (generated from Kafka's own list), so there is one
source of truth for numbers and retriability.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "KafkaError", "error_code_of", "error_for_code", "response_error"]

log = logging.getLogger(__name__)


class KafkaError(Exception):
    """Base class: an error with a Kafka error code that can be sent to a client."""

    code: ClassVar[ErrorCode] = ErrorCode.unknown_server_error
    _by_code: ClassVar[dict[ErrorCode, type[KafkaError]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # The first class declared for a code is the one error_for_code raises.
        KafkaError._by_code.setdefault(cls.code, cls)

    @property
    def retriable(self) -> bool:
        return bool(self.code.retriable)


def error_code_of(exc: BaseException) -> ErrorCode:
    """The code to send for ``exc``: its own for Kafka errors, UNKNOWN_SERVER_ERROR otherwise."""
    if isinstance(exc, KafkaError):
        return exc.code
    return ErrorCode.unknown_server_error


def error_for_code(code: ErrorCode, message: str) -> KafkaError:
    """The exception for an error code that came back from below (a partition's result):
    its class when one is declared, else a plain :class:`KafkaError` carrying the code."""
    cls = KafkaError._by_code.get(code)
    if cls is not None:
        return cls(message)
    error = KafkaError(message)
    error.code = code  # type: ignore[misc]
    return error


def response_error(exc: BaseException, context: str) -> tuple[ErrorCode, str | None]:
    """The error code and message a response carries for ``exc``: the one conversion at
    the request boundary, wherever a request answers per partition or per resource.

    A :class:`KafkaError` carries its own code and message. Anything else is a bug: it is
    logged with its traceback and ``context`` (what was being done, for whom) and answered
    UNKNOWN_SERVER_ERROR, so the client sees a failure and the broker keeps serving.
    """
    if isinstance(exc, KafkaError):
        return exc.code, str(exc) or None
    log.error("%s failed", context, exc_info=exc)
    return ErrorCode.unknown_server_error, str(exc) or None


class UnknownServerError(KafkaError):
    code = ErrorCode.unknown_server_error


class OffsetOutOfRange(KafkaError):
    code = ErrorCode.offset_out_of_range


class CorruptRecord(KafkaError):
    """A batch failed its CRC, has an impossible length, or is otherwise malformed."""

    code = ErrorCode.corrupt_message


class UnknownTopicOrPartition(KafkaError):
    code = ErrorCode.unknown_topic_or_partition


class LeaderNotAvailable(KafkaError):
    code = ErrorCode.leader_not_available


class NotLeaderOrFollower(KafkaError):
    code = ErrorCode.not_leader_or_follower


class RequestTimedOut(KafkaError):
    code = ErrorCode.request_timed_out


class MessageTooLarge(KafkaError):
    code = ErrorCode.message_too_large


class StaleControllerEpoch(KafkaError):
    code = ErrorCode.stale_controller_epoch


class NotCoordinator(KafkaError):
    code = ErrorCode.not_coordinator


class CoordinatorNotAvailable(KafkaError):
    code = ErrorCode.coordinator_not_available


class CoordinatorLoadInProgress(KafkaError):
    code = ErrorCode.coordinator_load_in_progress


class InvalidTopic(KafkaError):
    code = ErrorCode.invalid_topic_exception


class RecordListTooLarge(KafkaError):
    code = ErrorCode.record_list_too_large


class NotEnoughReplicas(KafkaError):
    code = ErrorCode.not_enough_replicas


class NotEnoughReplicasAfterAppend(KafkaError):
    code = ErrorCode.not_enough_replicas_after_append


class InvalidRequiredAcks(KafkaError):
    code = ErrorCode.invalid_required_acks


class InvalidTimestamp(KafkaError):
    code = ErrorCode.invalid_timestamp


class UnsupportedVersion(KafkaError):
    code = ErrorCode.unsupported_version


class TopicAlreadyExists(KafkaError):
    code = ErrorCode.topic_already_exists


class InvalidPartitions(KafkaError):
    code = ErrorCode.invalid_partitions


class InvalidReplicationFactor(KafkaError):
    code = ErrorCode.invalid_replication_factor


class InvalidReplicaAssignment(KafkaError):
    code = ErrorCode.invalid_replica_assignment


class InvalidConfig(KafkaError):
    code = ErrorCode.invalid_config


class InvalidRequest(KafkaError):
    code = ErrorCode.invalid_request


class UnsupportedForMessageFormat(KafkaError):
    code = ErrorCode.unsupported_for_message_format


class PolicyViolation(KafkaError):
    code = ErrorCode.policy_violation


class OutOfOrderSequenceNumber(KafkaError):
    code = ErrorCode.out_of_order_sequence_number


class DuplicateSequenceNumber(KafkaError):
    code = ErrorCode.duplicate_sequence_number


class InvalidProducerEpoch(KafkaError):
    code = ErrorCode.invalid_producer_epoch


class ProducerFenced(KafkaError):
    code = ErrorCode.producer_fenced


class InvalidTxnState(KafkaError):
    code = ErrorCode.invalid_txn_state


class TransactionCoordinatorFenced(KafkaError):
    code = ErrorCode.transaction_coordinator_fenced


class UnknownProducerId(KafkaError):
    code = ErrorCode.unknown_producer_id


class InvalidRecord(KafkaError):
    code = ErrorCode.invalid_record


class UnsupportedCompressionType(KafkaError):
    code = ErrorCode.unsupported_compression_type


class KafkaStorageError(KafkaError):
    code = ErrorCode.kafka_storage_error


class FencedLeaderEpoch(KafkaError):
    code = ErrorCode.fenced_leader_epoch


class UnknownLeaderEpoch(KafkaError):
    code = ErrorCode.unknown_leader_epoch


class OffsetNotAvailable(KafkaError):
    code = ErrorCode.offset_not_available


class UnsupportedSaslMechanism(KafkaError):
    code = ErrorCode.unsupported_sasl_mechanism


class IllegalSaslState(KafkaError):
    code = ErrorCode.illegal_sasl_state


class AuthorizationFailed(KafkaError):
    """An ACL denied the request's principal: carries Kafka's text unless given another
    (what Kafka sends where the answer has an error_message)."""

    default_message: ClassVar[str] = ""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.default_message)


class ClusterAuthorizationFailed(AuthorizationFailed):
    code = ErrorCode.cluster_authorization_failed
    default_message = "Cluster authorization failed."


class TopicAuthorizationFailed(AuthorizationFailed):
    code = ErrorCode.topic_authorization_failed
    default_message = "Topic authorization failed."


class GroupAuthorizationFailed(AuthorizationFailed):
    code = ErrorCode.group_authorization_failed
    default_message = "Group authorization failed."


class TransactionalIdAuthorizationFailed(AuthorizationFailed):
    code = ErrorCode.transactional_id_authorization_failed
    default_message = "Transactional Id authorization failed."


class InvalidGroupId(KafkaError):
    code = ErrorCode.invalid_group_id


class BrokerNotAvailable(KafkaError):
    code = ErrorCode.broker_not_available


class SaslAuthenticationFailed(KafkaError):
    code = ErrorCode.sasl_authentication_failed


class TopicDeletionDisabled(KafkaError):
    code = ErrorCode.topic_deletion_disabled


class KafkaProtocolViolation(KafkaError):
    """The peer broke the framing or message grammar; the connection must be closed.

    Kafka answers such requests by closing the socket (there is no way to send an error
    for a request whose header or body cannot be read). Subclasses say what was wrong so
    the one log line the broker writes is useful.
    """

    code = ErrorCode.invalid_request


class FrameSizeInvalid(KafkaProtocolViolation):
    """A length prefix was negative or above ``socket.request.max.bytes``."""


class MalformedRequest(KafkaProtocolViolation):
    """A request header or body could not be decoded (truncated, garbage, bad lengths)."""


class UnsupportedApi(KafkaProtocolViolation):
    """An API key, or a version of it, this broker does not implement."""

    code = ErrorCode.unsupported_version
