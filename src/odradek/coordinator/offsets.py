"""Committed offsets: the value type, the records that persist them, who may commit, and
their expiry.

Kafka keeps a group's offsets next to its membership; so do we (``Group.offsets``). This
module holds the rules that are about offsets alone.

Retention (KIP-211, Kafka 2.1+): offsets do not expire one by one while a group is alive.
They expire ``offsets.retention.minutes`` after

* the group became Empty, for groups that had members (all offsets at once);
* their own commit, for standalone consumers that only store offsets (no protocol type);
* their own commit, for a Stable "consumer" group, but only partitions of topics no member
  subscribes to any more.

A commit made with an explicit retention time (OffsetCommit v2-v4) expires at that time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from odradek.protocol.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import Record
from odradek.types import TopicPartition

from .errors import (
    CoordinatorNotAvailable,
    IllegalGeneration,
    RebalanceInProgress,
    UnknownMemberId,
)
from .group_state import GroupState
from .member import Member
from .offsets_topic_format import (
    OffsetCommitValue,
    offset_commit_key_bytes,
    offset_commit_key_partition,
    offset_commit_key_prefix,
    offset_commit_key_topic,
    offset_commit_value_bytes,
)

if TYPE_CHECKING:
    from .group_members import Membership


class CommittingGroup(Protocol):
    """What the offset rules read of a group (:class:`.group.Group`, which keeps its offsets
    here: a Protocol, so this module does not import the group, not even for type checking)."""

    @property
    def group_id(self) -> str: ...
    @property
    def state(self) -> GroupState: ...
    @property
    def state_timestamp_ms(self) -> int: ...
    @property
    def protocol_type(self) -> str | None: ...
    @property
    def generation_id(self) -> int: ...
    @property
    def membership(self) -> Membership: ...
    @property
    def offsets(self) -> dict[TopicPartition, OffsetAndMetadata]: ...
    @property
    def subscribed_topics(self) -> frozenset[str] | None: ...

__all__ = [
    "CommitPlan",
    "OffsetAndMetadata",
    "OffsetCommitEntry",
    "commit_plan",
    "expired_offsets",
    "offset_tombstone",
    "validate_offset_commit",
]


class OffsetAndMetadata(NamedTuple):
    """One committed offset. A named tuple, not a frozen dataclass: one is built per
    partition of every OffsetCommit, and a frozen dataclass's ``__init__`` costs a
    ``object.__setattr__`` per field."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1

    @classmethod
    def from_value(cls, value: OffsetCommitValue) -> OffsetAndMetadata:
        return cls(
            offset=value.offset,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp_ms=value.commit_timestamp,
            expire_timestamp_ms=value.expire_timestamp,
        )


class OffsetCommitEntry(NamedTuple):
    """One partition of an OffsetCommit (a named tuple: built per partition per request)."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    expire_timestamp_ms: int = -1  # OffsetCommit v2-v4 retention_time_ms, made absolute


@dataclass(frozen=True, slots=True)
class CommitPlan:
    """Per-partition outcome of validation, and the records to append for accepted ones.

    ``offsets`` holds the same accepted offsets decoded, so that once the append commits
    :meth:`.shard.CoordinatorShard.apply_offset_commit` can install them without decoding the
    records just encoded (that round trip was a quarter of a commit's CPU time).
    """

    errors: dict[TopicPartition, ErrorCode]
    records: list[Record]
    group_id: str = ""
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)


def commit_plan(
    group_id: str,
    keys: dict[TopicPartition, bytes],
    entries: Sequence[OffsetCommitEntry],
    now_ms: int,
    max_metadata: int,
) -> CommitPlan:
    """The records that commit ``entries`` (already validated for their group), and each
    partition's error: OFFSET_METADATA_TOO_LARGE past ``offset.metadata.max.bytes``.

    The hottest group path. Each partition's record key is encoded once per group and kept
    in ``keys`` (the group's ``offset_keys``), and the per-partition tuples are built with
    ``tuple.__new__``: a named tuple's own constructor is a Python call of its own.
    """
    errors: dict[TopicPartition, ErrorCode] = {}
    records = []
    accepted: dict[TopicPartition, OffsetAndMetadata] = {}
    key_prefix: bytes | None = None
    none, too_large = ErrorCode.none, ErrorCode.offset_metadata_too_large
    new = tuple.__new__
    for topic, index, committed, epoch, metadata, expire in entries:
        tp = new(TopicPartition, (topic, index))
        if not metadata:
            metadata = ""
        elif len(metadata.encode()) > max_metadata:
            errors[tp] = too_large
            continue
        errors[tp] = none
        key = keys.get(tp)
        if key is None:
            if key_prefix is None:
                key_prefix = offset_commit_key_prefix(group_id)
            key = keys[tp] = (key_prefix + offset_commit_key_topic(topic)
                              + offset_commit_key_partition(index))
        records.append(Record(  # positional (offset_delta, timestamp, key, value): cheaper
            0, now_ms, key, offset_commit_value_bytes(committed, epoch, metadata, now_ms, expire),
        ))
        accepted[tp] = new(OffsetAndMetadata, (committed, epoch, metadata, now_ms, expire))
    return CommitPlan(errors, records, group_id, accepted)


def offset_tombstone(group_id: str, topic: str, partition: int, now_ms: int) -> Record:
    return Record(
        timestamp=now_ms,
        key=offset_commit_key_bytes(group_id, topic, partition),
        value=None,
    )


def expired_offsets(group: CommittingGroup, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    """The partitions whose committed offsets have outlived retention (see module doc)."""
    protected: frozenset[str] = frozenset()
    if group.protocol_type is None:
        base_of_group = None
    elif group.state is GroupState.EMPTY:
        base_of_group = group.state_timestamp_ms
    elif (
        group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.state is GroupState.STABLE
        and group.subscribed_topics is not None
    ):
        base_of_group = None
        protected = group.subscribed_topics
    else:
        return []
    expired = []
    for (topic, partition), offset in group.offsets.items():
        if topic in protected:
            continue
        if offset.expire_timestamp_ms >= 0:
            if now_ms >= offset.expire_timestamp_ms:
                expired.append(TopicPartition(topic, partition))
            continue
        base = offset.commit_timestamp_ms if base_of_group is None else base_of_group
        if now_ms - base >= retention_ms:
            expired.append(TopicPartition(topic, partition))
    return expired


def validate_offset_commit(
    group: CommittingGroup, member_id: str, group_instance_id: str | None, generation_id: int
) -> Member | None:
    """Who may commit: anyone to an Empty group with generation -1 (simple consumers
    keeping offsets in Kafka); otherwise a member of the current generation, and not
    while the group waits for its leader's assignment."""
    if group.state is GroupState.DEAD:
        raise CoordinatorNotAvailable(f"group {group.group_id} is dead")
    if generation_id < 0 and group.state is GroupState.EMPTY:
        return None
    member = None
    if generation_id >= 0 or member_id or group_instance_id is not None:
        member = group.membership.validate_member(member_id, group_instance_id)
        if generation_id != group.generation_id:
            raise IllegalGeneration(
                f"generation {generation_id} is not the group's {group.generation_id}"
            )
    elif group.state is not GroupState.EMPTY:
        raise UnknownMemberId("commits without a member id need an empty group")
    if group.state is GroupState.COMPLETING_REBALANCE:
        raise RebalanceInProgress(f"group {group.group_id} is rebalancing")
    return member
