"""What the sans-IO coordinator hands back: results for parked requests and records to write.

The core never awaits. A JoinGroup or SyncGroup that must wait for the rest of the group is
parked under a caller-chosen *token*; later events answer it with a :class:`Reply`. Writes to
``__consumer_offsets`` come out as :class:`StoreGroup` (or plain record lists for offsets);
the adapter appends them and only then releases the replies attached to them, because Kafka
answers SyncGroup only once the new assignment is durable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import Record

__all__ = [
    "AppendRecords",
    "JoinMember",
    "JoinResult",
    "Output",
    "Reply",
    "StoreGroup",
    "SyncResult",
]


@dataclass(frozen=True, slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinMember, ...] = ()  # only the leader gets the member list
    skip_assignment: bool = False  # JoinGroup v9+: static leader rejoined, keep assignment

    def with_error(self, error: ErrorCode) -> JoinResult:
        return JoinResult(error=error, member_id=self.member_id)


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None

    def with_error(self, error: ErrorCode) -> SyncResult:
        return replace(self, error=error, assignment=b"")


@dataclass(frozen=True, slots=True)
class Reply:
    """Answer the parked request ``token``."""

    token: int
    result: JoinResult | SyncResult

    def with_error(self, error: ErrorCode) -> Reply:
        return Reply(self.token, self.result.with_error(error))


@dataclass(frozen=True, slots=True)
class StoreGroup:
    """Append the group's metadata record; send ``replies`` once it is committed.

    If the append fails, the replies go out carrying the append's error and the adapter
    calls ``on_store_failed(now, generation_id)`` so the group can rebalance
    (Kafka resets a Stable group whose assignment could not be persisted).
    """

    group_id: str
    generation_id: int
    record: Record
    replies: tuple[Reply, ...] = ()


@dataclass(frozen=True, slots=True)
class AppendRecords:
    """Append a consumer group's records (a classic member joining it, members leaving it,
    a downgrade); send ``replies`` once they are committed, or with the append's error."""

    records: tuple[Record, ...]
    replies: tuple[Reply, ...] = ()


Output = Reply | StoreGroup | AppendRecords
