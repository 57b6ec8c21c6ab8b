"""Errors the group coordinator reports, each carrying its Kafka error code.

The protocol package defines the codes every part of the broker shares; the ones here only
ever come out of group management, so they live beside the code that raises them. Handlers
convert them with :func:`odradek.protocol.errors.error_code_of`, like every other error.
"""

from __future__ import annotations

from odradek.protocol.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    ErrorCode,
    InvalidGroupId,
    KafkaError,
    NotCoordinator,
)

__all__ = [
    "CoordinatorLoadInProgress",
    "CoordinatorNotAvailable",
    "FencedInstanceId",
    "FencedMemberEpoch",
    "GroupIdNotFound",
    "GroupMaxSizeReached",
    "GroupSubscribedToTopic",
    "IllegalGeneration",
    "InconsistentGroupProtocol",
    "InvalidGroupId",
    "InvalidRegularExpression",
    "InvalidSessionTimeout",
    "MemberIdRequired",
    "NonEmptyGroup",
    "NotCoordinator",
    "OffsetMetadataTooLarge",
    "RebalanceInProgress",
    "StaleMemberEpoch",
    "UnknownMemberId",
    "UnreleasedInstanceId",
    "UnsupportedAssignor",
]


class UnknownMemberId(KafkaError):
    code = ErrorCode.unknown_member_id


class IllegalGeneration(KafkaError):
    code = ErrorCode.illegal_generation


class RebalanceInProgress(KafkaError):
    code = ErrorCode.rebalance_in_progress


class InconsistentGroupProtocol(KafkaError):
    code = ErrorCode.inconsistent_group_protocol


class InvalidSessionTimeout(KafkaError):
    code = ErrorCode.invalid_session_timeout


class MemberIdRequired(KafkaError):
    code = ErrorCode.member_id_required


class FencedInstanceId(KafkaError):
    code = ErrorCode.fenced_instance_id


class GroupMaxSizeReached(KafkaError):
    code = ErrorCode.group_max_size_reached


class NonEmptyGroup(KafkaError):
    code = ErrorCode.non_empty_group


class GroupIdNotFound(KafkaError):
    code = ErrorCode.group_id_not_found


class GroupSubscribedToTopic(KafkaError):
    code = ErrorCode.group_subscribed_to_topic


class OffsetMetadataTooLarge(KafkaError):
    code = ErrorCode.offset_metadata_too_large


# KIP-848 consumer groups (``ConsumerGroupHeartbeat``, and OffsetCommit with member epochs).


class FencedMemberEpoch(KafkaError):
    code = ErrorCode.fenced_member_epoch


class StaleMemberEpoch(KafkaError):
    code = ErrorCode.stale_member_epoch


class UnreleasedInstanceId(KafkaError):
    code = ErrorCode.unreleased_instance_id


class UnsupportedAssignor(KafkaError):
    code = ErrorCode.unsupported_assignor


class InvalidRegularExpression(KafkaError):
    code = ErrorCode.invalid_regular_expression
