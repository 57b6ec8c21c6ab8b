"""Kafka's ``acks``: how many replicas must hold a Produce's records before it is answered.

The wire carries a plain int16; the Produce handler converts it once (:meth:`Acks.from_wire`)
and everything below it takes an :class:`Acks`, so an unchecked value cannot reach the
replication rules. Kafka answers any other value with INVALID_REQUIRED_ACKS per partition.
"""

from __future__ import annotations

from enum import IntEnum

from odradek.protocol.errors import InvalidRequiredAcks

__all__ = ["Acks"]


class Acks(IntEnum):
    ALL = -1
    """Every in-sync replica: answered once the high watermark covers the records, and
    refused before appending while the ISR is below ``min.insync.replicas``."""
    NONE = 0
    """No answer at all (a failure closes the connection instead)."""
    LEADER = 1
    """Answered once the leader's own log has the records."""

    @classmethod
    def from_wire(cls, value: int) -> Acks:
        """The request's ``acks``; raises :class:`InvalidRequiredAcks` for any other value."""
        try:
            return cls(value)
        except ValueError:
            raise InvalidRequiredAcks(f"acks={value}") from None
