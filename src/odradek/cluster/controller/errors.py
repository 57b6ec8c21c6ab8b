"""Kafka errors that only controller requests produce (ElectLeaders, reassignments,
ControlledShutdown). Each carries its Kafka error code, like :mod:`odradek.protocol.errors`."""

from __future__ import annotations

from odradek.protocol.errors import ErrorCode, KafkaError

__all__ = [
    "ElectionNotNeeded",
    "EligibleLeadersNotAvailable",
    "NoReassignmentInProgress",
    "NotController",
    "PreferredLeaderNotAvailable",
    "ReassignmentInProgress",
    "StaleBrokerEpoch",
]


class NotController(KafkaError):
    """Sent to a broker that is not (or no longer) the controller: the client re-reads
    metadata for the current controller and retries."""

    code = ErrorCode.not_controller


class StaleBrokerEpoch(KafkaError):
    code = ErrorCode.stale_broker_epoch


class ElectionNotNeeded(KafkaError):
    code = ErrorCode.election_not_needed


class PreferredLeaderNotAvailable(KafkaError):
    code = ErrorCode.preferred_leader_not_available


class EligibleLeadersNotAvailable(KafkaError):
    code = ErrorCode.eligible_leaders_not_available


class NoReassignmentInProgress(KafkaError):
    code = ErrorCode.no_reassignment_in_progress


class ReassignmentInProgress(KafkaError):
    code = ErrorCode.reassignment_in_progress


class ControllerMoved(Exception):
    """Another broker became controller; this one's writes are fenced off."""
