"""One partition this broker replicates: its log, and its leader or follower state.

A :class:`Partition` wraps the partition's :class:`~odradek.storage.PartitionLog` and holds
what replication adds to it: who leads at which epoch, the ISR, and — while we lead — what
we know of each follower. Everything that reads or writes the log on behalf of a request
goes through it, so the leader's rules are applied in one place:

* **Writes** (:meth:`append_as_leader`) only while we lead; acks=-1 is refused with
  NOT_ENOUGH_REPLICAS *before* appending when the ISR is below ``min.insync.replicas`` —
  capped at the number of replicas, as Kafka's ``effectiveMinIsr`` does.
* **High watermark = the smallest log end offset over the ISR**, and it never moves back
  while we lead. A follower's LEO is the offset of its latest Fetch; a follower that has
  not fetched since we became leader counts as unknown, so a new leader's HW waits for its
  ISR instead of guessing. While an ISR *expansion* is being written, the joining replica
  already counts (Kafka's "maximal ISR"), so the HW is never computed over a set smaller
  than the one ZooKeeper may already hold.
* **Reads** below the HW for consumers, up to the log end for followers; requests that
  carry the client's leader epoch are fenced (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
* ``leader_generation`` counts the terms we led: an acks=-1 write waiting across a loss of
  leadership fails even if we lead again, because our log may have been truncated between.

The ISR itself changes only through :mod:`.isr_manager` (conditional ZooKeeper writes) or
a newer state in the cluster view (:mod:`.replica_manager`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from odradek.clock import monotonic_ms
from odradek.protocol.errors import (
    CorruptRecord,
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    UnknownLeaderEpoch,
)
from odradek.storage import AppendInfo, PartitionLog
from odradek.storage.log_reader import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from odradek.types import BrokerId, LeaderEpoch, Offset, TopicPartition

from .acks import Acks

__all__ = [
    "NO_LEADER",
    "UNKNOWN_OFFSET",
    "FollowerProgress",
    "Partition",
    "PartitionLeadership",
]

NO_LEADER = BrokerId(-1)
NO_EPOCH = LeaderEpoch(-1)
UNKNOWN_OFFSET = Offset(-1)
_LOG_START = Offset(0)
_TO_HIGH_WATERMARK = -1


class PartitionLeadership(Protocol):
    """What replication reads from the cluster's state of one partition."""

    @property
    def leader(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def isr(self) -> tuple[int, ...]: ...

    @property
    def replicas(self) -> tuple[int, ...]: ...


@dataclass
class FollowerProgress:
    """The leader's knowledge of one follower, from its fetches (Kafka's replica state).
    Times are :func:`~odradek.clock.monotonic_ms`."""

    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_leader_end_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0


@dataclass(eq=False)
class Partition:
    """A partition this broker replicates, as leader (``is_leader``) or follower."""

    topic: str
    index: int
    log: PartitionLog
    broker_id: BrokerId
    leader_epoch: LeaderEpoch = NO_EPOCH
    isr: tuple[BrokerId, ...] = ()
    replicas: tuple[BrokerId, ...] = ()
    min_insync_replicas: int = 1
    is_leader: bool = False
    topic_id: object = None
    leader: BrokerId = NO_LEADER
    zk_version: int = -1
    controller_epoch: int = -1
    leader_epoch_start_offset: Offset = _LOG_START
    leader_generation: int = 0  # +1 each time we become leader after not leading
    followers: dict[int, FollowerProgress] = field(default_factory=dict)
    pending_isr: tuple[BrokerId, ...] | None = None  # an ISR write in flight
    isr_retry_after_ms: int = 0  # monotonic
    key: TopicPartition = field(init=False)

    def __post_init__(self) -> None:
        self.key = TopicPartition(self.topic, self.index)

    def __str__(self) -> str:
        return f"{self.topic}-{self.index}"

    # Offsets ---------------------------------------------------------------------------
    @property
    def high_watermark(self) -> Offset:
        return Offset(self.log.high_watermark)

    @property
    def log_end_offset(self) -> Offset:
        return Offset(self.log.log_end_offset)

    @property
    def log_start_offset(self) -> Offset:
        return Offset(self.log.log_start_offset)

    @property
    def maximal_isr(self) -> tuple[BrokerId, ...]:
        """The ISR plus replicas a pending write is adding (never minus those it removes)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    # Checks ----------------------------------------------------------------------------
    def check_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollower(f"broker {self.broker_id} does not lead {self}")

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing check for requests carrying the client's view of the epoch."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpoch(f"{self}: epoch {current_leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpoch(f"{self}: epoch {current_leader_epoch}")

    @property
    def effective_min_insync_replicas(self) -> int:
        """``min.insync.replicas``, but never more than the partition has replicas (Kafka's
        ``Partition.effectiveMinIsr``): a replication-factor-1 topic under a cluster-wide
        min.insync.replicas=2 still takes acks=all writes, the producers' default."""
        return min(self.min_insync_replicas, len({*self.replicas, self.broker_id}))

    def check_enough_replicas(self) -> None:
        """acks=-1 is refused before appending when the ISR is below min.insync.replicas."""
        if len(self.isr) < self.effective_min_insync_replicas:
            raise NotEnoughReplicas(
                f"{self}: isr {list(self.isr)} < min.insync.replicas "
                f"{self.effective_min_insync_replicas}"
            )

    # Leader: writes and the high watermark ----------------------------------------------
    def append_as_leader(
        self, records: bytes | memoryview | None, acks: Acks, *, from_coordinator: bool = False
    ) -> AppendInfo:
        """Append a producer's batches (whole, as received) at our epoch. The caller then
        moves the HW (it may move at once when we are the whole ISR) and wakes waiters.
        ``from_coordinator``: a coordinator's own write (WriteTxnMarkers' markers, the only
        control batches a leader accepts, or a TxnOffsetCommit batch, which has no sequence)."""
        self.check_leader()
        if acks == Acks.ALL:
            self.check_enough_replicas()
        if not records:
            raise CorruptRecord("produce request carries no records")
        return self.log.append(
            records, leader_epoch=self.leader_epoch, from_coordinator=from_coordinator
        )

    def maybe_advance_high_watermark(self) -> bool:
        """Move the HW up to the smallest LEO in the (maximal) ISR; True if it moved."""
        if not self.is_leader:
            return False
        candidate = int(self.log.log_end_offset)
        for replica in self.maximal_isr:
            if replica != self.broker_id:
                progress = self.followers.get(replica)
                known = progress.log_end_offset if progress is not None else UNKNOWN_OFFSET
                candidate = min(candidate, known)
        if candidate > self.log.high_watermark:
            self.log.update_high_watermark(candidate)
            return True
        return False

    def record_follower_fetch(
        self, replica_id: int, fetch_offset: int, now: int | None = None
    ) -> bool:
        """A follower fetching from ``fetch_offset`` has everything below it; True if the
        HW moved. "Caught up" follows Kafka: the fetch reached our LEO now, or reached the
        LEO we had at this follower's previous fetch (it is keeping pace). The HW is
        re-derived only when the follower's position moved: every other change that can
        raise it (our own append, an ISR change) re-derives it where it happens, and in a
        fetch session most partitions of every fetch have not moved."""
        if replica_id == self.broker_id or replica_id not in self.replicas:
            return False
        now = monotonic_ms() if now is None else now
        progress = self.followers.setdefault(replica_id, FollowerProgress())
        leader_end = int(self.log.log_end_offset)
        if fetch_offset >= leader_end:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, now)
        elif fetch_offset >= progress.last_fetch_leader_end_offset >= 0:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, progress.last_fetch_ms)
        moved = progress.log_end_offset != fetch_offset
        progress.log_end_offset = fetch_offset
        progress.last_fetch_leader_end_offset = leader_end
        progress.last_fetch_ms = now
        return moved and self.maybe_advance_high_watermark()

    def record_caught_up(self, replica_id: int, at_ms: int) -> None:
        """The follower fetched with our whole log at ``at_ms`` (and at every fetch since
        the last one recorded): what :meth:`record_follower_fetch` would have noted of the
        fetches a fetch session answered without visiting this partition."""
        progress = self.followers.get(replica_id)
        if progress is not None:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, at_ms)
            progress.last_fetch_ms = max(progress.last_fetch_ms, at_ms)

    def can_join_isr(self, replica_id: int) -> bool:
        """Kafka's expansion rule: the follower reached the HW and this epoch's start."""
        progress = self.followers.get(replica_id)
        return (
            self.is_leader
            and replica_id in self.replicas
            and replica_id not in self.isr
            and progress is not None
            and progress.log_end_offset >= self.log.high_watermark
            and progress.log_end_offset >= self.leader_epoch_start_offset
        )

    def out_of_sync_replicas(self, now: int, lag_time_max_ms: int) -> tuple[BrokerId, ...]:
        """ISR followers that lack some of our log and have not caught up within
        ``replica.lag.time.max.ms`` (Kafka's ``ReplicaState.isCaughtUp``: a follower with
        our whole log stays, however long ago it fetched)."""
        leader_end = int(self.log.log_end_offset)
        out = []
        for replica in self.isr:
            if replica == self.broker_id:
                continue
            progress = self.followers.setdefault(replica, FollowerProgress())
            if (progress.log_end_offset != leader_end
                    and now - progress.last_caught_up_ms > lag_time_max_ms):
                out.append(replica)
        return tuple(out)

    # Leader: reads ------------------------------------------------------------------------
    def fetchable_end(self, from_follower: bool, read_committed: bool = False) -> int:
        """Where a fetch stops: the log end for followers, the HW for consumers, the last
        stable offset for read_committed consumers."""
        partition_log = self.log
        if from_follower:
            return partition_log.log_end_offset
        return partition_log.last_stable_offset if read_committed else partition_log.high_watermark

    def check_fetch_offset(
        self, fetch_offset: int, from_follower: bool, read_committed: bool = False
    ) -> int:
        """OFFSET_OUT_OF_RANGE unless ``fetch_offset`` lies in the log (log start to log
        end), for consumers too; returns where the fetch stops (:meth:`fetchable_end`).

        A consumer between the HW and the log end gets an empty answer, as in Kafka's
        ``LocalLog.read``: a new leader's HW lags the old one's until its followers fetch,
        so a consumer at the old HW is ahead of the new one for a moment. Out of range, it
        would reset its position (to the beginning, or with Kafka's default ``latest``
        past records it never read)."""
        start, end = self.log.log_start_offset, self.log.log_end_offset
        if fetch_offset > end or fetch_offset < start:
            raise OffsetOutOfRange(f"{self}: offset {fetch_offset} outside [{start}, {end}]")
        return self.fetchable_end(from_follower, read_committed)

    def offset_for_timestamp(
        self, timestamp: int, read_committed: bool = False
    ) -> tuple[Offset, int]:
        """ListOffsets for consumers: (offset, timestamp), (-1, -1) when no committed
        record is that recent; -1 latest is the HW (the last stable offset for
        read_committed), -2 earliest the log start."""
        end = Offset(self.fetchable_end(False, read_committed))
        if timestamp == LATEST_TIMESTAMP:
            return end, -1
        if timestamp == EARLIEST_TIMESTAMP:
            return self.log_start_offset, -1
        found = self.log.offset_for_timestamp(timestamp)  # also answers max timestamp (-3)
        if found is None or found[0] >= end:
            return UNKNOWN_OFFSET, -1
        return Offset(int(found[0])), int(found[1])

    def end_offset_for_leader_epoch(self, epoch: LeaderEpoch) -> tuple[LeaderEpoch, Offset]:
        """OffsetForLeaderEpoch: the largest epoch <= ``epoch`` we know, and where it ends."""
        found_epoch, end_offset = self.log.end_offset_for_leader_epoch(epoch)
        return LeaderEpoch(found_epoch), Offset(end_offset)

    def delete_records_before(self, offset: int) -> Offset:
        """DeleteRecords up to ``offset`` (-1: the HW); returns the new log start."""
        high_watermark = self.log.high_watermark
        if offset == _TO_HIGH_WATERMARK:
            offset = high_watermark
        if offset < 0 or offset > high_watermark:
            raise OffsetOutOfRange(f"{self}: {offset} is beyond the high watermark")
        return Offset(self.log.delete_records_before(offset))
