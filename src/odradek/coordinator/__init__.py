"""Consumer-group coordinator with offsets in ``__consumer_offsets``.

Layers, inside out: :mod:`.group` (one classic group's state machine, sans-IO),
:mod:`.consumer_group` (one KIP-848 group, ``group.protocol=consumer``, with
:mod:`.reconciliation` and :mod:`.assignors`), :mod:`.shard` (all groups of one offsets
partition, log replay), :mod:`.coordinator` (asyncio adapter: futures, timers, appends
through an :class:`OffsetsLog`). Record formats: :mod:`.offsets_topic_format`,
:mod:`.consumer_group_records`.
"""

from odradek.config_sections import GroupCoordinatorConfig

from .coordinator import GroupCoordinator, GroupDescription
from .group import Group, JoinRequest, MemberDescription
from .group_state import GroupState
from .offsets import OffsetCommitEntry
from .offsets_log import InMemoryOffsetsLog, OffsetsLog
from .partitioning import partition_for_group, partition_for_transactional_id
from .results import JoinMember, JoinResult, SyncResult
from .shard import CoordinatorShard, GroupListing, PartitionOffset

__all__ = [
    "CoordinatorShard",
    "Group",
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "GroupDescription",
    "GroupListing",
    "GroupState",
    "InMemoryOffsetsLog",
    "JoinMember",
    "JoinRequest",
    "JoinResult",
    "MemberDescription",
    "OffsetCommitEntry",
    "OffsetsLog",
    "PartitionOffset",
    "SyncResult",
    "partition_for_group",
    "partition_for_transactional_id",
]
