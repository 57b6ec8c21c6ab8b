"""A shard's groups changing kind: the records and replies of an upgrade or a downgrade.

:mod:`odradek.coordinator.group_conversion` builds the converted group; this module applies
it to a shard's two tables (classic ``groups``, which also hold every group's committed
offsets, and ``consumer_groups``) and says what to write, in Kafka's order:

* upgrade: a tombstone of the classic group's metadata record, then every record of the new
  consumer group; parked JoinGroup/SyncGroup requests of the classic group are answered
  REBALANCE_IN_PROGRESS, so their members rejoin into the consumer group;
* removal of consumer-group members (leave, LeaveGroup, session or rebalance timeout):
  either a downgrade — tombstones of every consumer-group record, then the classic group's
  metadata record, and a rebalance of the classic group — or the members' tombstones and a
  new group epoch.

The offsets holder (the classic :class:`~odradek.coordinator.group.Group` object of the
same id) keeps the offsets across both directions, in memory and in the log (offset records
are never rewritten by a conversion; a group tombstone does not drop them on replay).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence

from odradek.config_sections import GroupCoordinatorConfig
from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import Record

from .classic_members import leaving_members
from .consumer_group import ConsumerGroup
from .consumer_group_records import changed_records, conversion_records, snapshot
from .errors import GroupIdNotFound
from .group import Group
from .group_conversion import (
    MalformedConsumerProtocol,
    classic_from_consumer,
    consumer_from_classic,
    downgrade_allowed,
    upgrade_refusal,
)
from .group_metadata import metadata_record
from .offsets_topic_format import GroupMetadataKey, encode_group_metadata_key
from .results import AppendRecords, Output

__all__ = ["leave_consumer_group", "remove_consumer_members", "upgrade"]


def upgrade(groups: dict[str, Group], consumer_groups: dict[str, ConsumerGroup],
            classic: Group, now_ms: int, topic_ids: Mapping[str, uuid.UUID],
            ) -> tuple[ConsumerGroup, list[Record], list[Output]]:
    """Turn the non-empty classic group into a consumer group (installed in
    ``consumer_groups``; ``groups`` keeps a memberless holder of its offsets).

    :raises GroupIdNotFound: the migration policy or the group does not allow it (Kafka's
        answer to a ConsumerGroupHeartbeat for a classic group it cannot upgrade).
    """
    group_id = classic.group_id
    refusal = upgrade_refusal(classic, classic.config)
    if refusal is None:
        try:
            converted = consumer_from_classic(classic, classic.config, now_ms)
        except MalformedConsumerProtocol:
            refusal = "the embedded consumer protocol is malformed"
    if refusal is not None:
        raise GroupIdNotFound(f"Cannot upgrade classic group {group_id} to consumer group "
                              f"because {refusal}.")
    replies: list[Output] = [reply.with_error(ErrorCode.rebalance_in_progress)
                             for reply in classic.membership.pending_tokens()]
    holder = Group(group_id, classic.config, now_ms, lambda: "")
    holder.offsets, holder.offset_keys = classic.offsets, classic.offset_keys
    groups[group_id] = holder
    consumer_groups[group_id] = converted
    records = [_classic_tombstone(group_id, now_ms),
               *conversion_records(group_id, None, converted, topic_ids, now_ms)]
    return converted, records, replies


def remove_consumer_members(
    groups: dict[str, Group], consumer_groups: dict[str, ConsumerGroup], group: ConsumerGroup,
    member_ids: Collection[str], now_ms: int, topic_ids: Mapping[str, uuid.UUID],
    new_uuid: Callable[[], str],
) -> tuple[list[Record], list[Output]]:
    """Remove members that left or were fenced; downgrade the group if only classic members
    remain and the policy allows it. The records to write, and the classic group's outputs."""
    config: GroupCoordinatorConfig = group.config
    if not member_ids:
        return [], []
    if not downgrade_allowed(group, member_ids, config):
        before = snapshot(group)
        for member_id in member_ids:
            group.remove(member_id, bump=True)
        return changed_records(group.group_id, before, snapshot(group), topic_ids, now_ms), []
    classic = classic_from_consumer(group, member_ids, config, now_ms, new_uuid)
    holder = groups.get(group.group_id)
    if holder is not None:
        classic.offsets, classic.offset_keys = holder.offsets, holder.offset_keys
    groups[group.group_id] = classic
    del consumer_groups[group.group_id]
    records = [*conversion_records(group.group_id, group, None, topic_ids, now_ms),
               metadata_record(classic, now_ms)]
    out: list[Output] = classic.rebalance(now_ms)
    return records, out


def leave_consumer_group(
    groups: dict[str, Group], consumer_groups: dict[str, ConsumerGroup], group: ConsumerGroup,
    members: Sequence[tuple[str, str | None]], now_ms: int,
    topic_ids: Mapping[str, uuid.UUID], new_uuid: Callable[[], str],
) -> tuple[list[ErrorCode], list[Output]]:
    """LeaveGroup in a consumer group: the members found leave together (which may
    downgrade the group); one error per member, and the outputs (the records to write)."""
    errors, leaving = leaving_members(group, members)
    records, out = remove_consumer_members(groups, consumer_groups, group, leaving, now_ms,
                                           topic_ids, new_uuid)
    return errors, [*out, *([AppendRecords(tuple(records))] if records else [])]


def _classic_tombstone(group_id: str, now_ms: int) -> Record:
    return Record(timestamp=now_ms, key=encode_group_metadata_key(GroupMetadataKey(group_id)),
                  value=None)

