"""Partitions this broker replicates: leaders take writes, followers copy from them.

The replica manager is the broker's single owner of ``PartitionLog`` objects in use. The
cluster view says who leads what; :meth:`ReplicaManager.apply_cluster_view` makes the local
state match it: open the log and take writes when we become leader (recording the new
leader epoch in ``leader-epoch-checkpoint``), hand the partition to a replica fetcher when
we become a follower, and refuse writes at once (NOT_LEADER_OR_FOLLOWER) when leadership
moves away — the view changes before any request is answered under the new state.

Invariants (the leader's side; :mod:`.replica_fetcher` holds the follower's):

* **High watermark = the smallest log end offset over the ISR**, and it never moves back
  while we lead. A follower's LEO is the offset of its latest Fetch; a follower that has
  not fetched since we became leader counts as unknown, so a new leader's HW waits for its
  ISR instead of guessing. While an ISR *expansion* is being written, the joining replica
  already counts (Kafka's "maximal ISR"), so the HW is never computed over a set smaller
  than the one ZooKeeper may already hold.
* **The ISR changes only through conditional ZooKeeper writes** (:mod:`.isr_manager`,
  :mod:`odradek.cluster.isr`); the local ISR is updated only after the write succeeded or
  when the view shows a newer state znode. A leader that cannot write (session lost,
  controller moved leadership) keeps its old ISR and so cannot acknowledge acks=all writes
  its followers do not have.
* acks=-1 writes complete when the HW passes them; a produce waiting across a loss of
  leadership (``leader_generation`` changed) fails with NOT_LEADER_OR_FOLLOWER even if we
  lead again, because our log may have been truncated in between.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from odradek.clock import monotonic_ms
from odradek.config_sections import ReplicationConfig
from odradek.protocol.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    UnknownLeaderEpoch,
    UnknownTopicOrPartition,
)
from odradek.types import TopicPartition

from .delayed import Purgatory

if TYPE_CHECKING:
    from .isr_manager import IsrManager
    from .replica_fetcher import ReplicaFetcherManager

__all__ = [
    "FollowerProgress",
    "LeadershipListener",
    "Partition",
    "PartitionLeadership",
    "ReplicaManager",
    "TopicPartitionKey",
]

log = logging.getLogger(__name__)

TopicPartitionKey = TopicPartition
LeadershipListener = Callable[[str, int, bool], None]
"""``(topic, partition, is_leader)``: told when this broker starts or stops leading."""

NO_LEADER = -1
UNKNOWN_OFFSET = -1


class PartitionLeadership(Protocol):
    """What the replica manager reads from the cluster's partition state."""

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
    """The leader's knowledge of one follower, from its fetches (Kafka's replica state)."""

    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_leader_end_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0


@dataclass
class Partition:
    """A partition this broker replicates, as leader (``is_leader``) or follower."""

    topic: str
    index: int
    log: Any  # odradek.storage.PartitionLog
    broker_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    min_insync_replicas: int = 1
    is_leader: bool = True
    topic_id: Any = None
    leader: int = NO_LEADER
    zk_version: int = -1
    controller_epoch: int = -1
    leader_epoch_start_offset: int = 0
    leader_generation: int = 0  # +1 each time we become leader after not leading
    followers: dict[int, FollowerProgress] = field(default_factory=dict)
    pending_isr: tuple[int, ...] | None = None  # an ISR write in flight
    isr_retry_after_ms: int = 0

    @property
    def key(self) -> TopicPartitionKey:
        return TopicPartition(self.topic, self.index)

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR plus replicas a pending write is adding (never minus those it removes)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing check for requests carrying the client's view of the epoch."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpoch(f"{self.topic}-{self.index}: epoch {current_leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpoch(f"{self.topic}-{self.index}: epoch {current_leader_epoch}")

    def check_enough_replicas(self) -> None:
        """acks=-1 is refused before appending when the ISR is below min.insync.replicas."""
        if len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicas(
                f"{self.topic}-{self.index}: isr {list(self.isr)} < "
                f"min.insync.replicas {self.min_insync_replicas}"
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
        LEO we had at this follower's previous fetch (it is keeping pace)."""
        if replica_id == self.broker_id or replica_id not in self.replicas:
            return False
        now = monotonic_ms() if now is None else now
        progress = self.followers.setdefault(replica_id, FollowerProgress())
        leader_end = int(self.log.log_end_offset)
        if fetch_offset >= leader_end:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, now)
        elif fetch_offset >= progress.last_fetch_leader_end_offset >= 0:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, progress.last_fetch_ms)
        progress.log_end_offset = fetch_offset
        progress.last_fetch_leader_end_offset = leader_end
        progress.last_fetch_ms = now
        return self.maybe_advance_high_watermark()

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

    def out_of_sync_replicas(self, now: int, lag_time_max_ms: int) -> tuple[int, ...]:
        """ISR followers that have not caught up within ``replica.lag.time.max.ms``."""
        return tuple(
            replica
            for replica in self.isr
            if replica != self.broker_id
            and now - self.followers.setdefault(replica, FollowerProgress()).last_caught_up_ms
            > lag_time_max_ms
        )


class ReplicaManager:
    """Owns the partitions of this broker, the purgatories they wake, and replication."""

    def __init__(
        self,
        broker_id: int,
        log_manager: Any,
        log_config_for: Callable[[str], Any],
        *,
        fetch_purgatory: Purgatory | None = None,
        produce_purgatory: Purgatory | None = None,
        replication: ReplicationConfig | None = None,
        isr_writer: Any = None,
        broker_address: Callable[[int], tuple[str, int] | None] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self._log_config_for = log_config_for
        self.fetch_purgatory = fetch_purgatory or Purgatory("fetch")
        self.produce_purgatory = produce_purgatory or Purgatory("produce")
        self.replication = replication or ReplicationConfig()
        self._partitions: dict[TopicPartitionKey, Partition] = {}
        self._known: set[TopicPartitionKey] = set()
        self._leadership_listeners: list[LeadershipListener] = []
        self.isr_manager: IsrManager | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        if isr_writer is not None:
            from .isr_manager import IsrManager

            self.isr_manager = IsrManager(self, isr_writer)
        if broker_address is not None:
            from .replica_fetcher import ReplicaFetcherManager

            self.fetchers = ReplicaFetcherManager(self, broker_address)

    async def start(self) -> None:
        if self.isr_manager is not None:
            self.isr_manager.start()

    async def shutdown(self) -> None:
        """Stop replication: fetchers first (no more follower appends), then ISR checks."""
        if self.fetchers is not None:
            await self.fetchers.shutdown()
        if self.isr_manager is not None:
            await self.isr_manager.stop()

    # Lookup ------------------------------------------------------------------------------
    def leader_partition(self, topic: str, partition: int) -> Partition:
        """The partition if we lead it; Kafka's errors otherwise."""
        found = self._partitions.get(TopicPartition(topic, partition))
        if found is not None and found.is_leader:
            return found
        if (topic, partition) in self._known:
            raise NotLeaderOrFollower(f"broker {self.broker_id} does not lead {topic}-{partition}")
        raise UnknownTopicOrPartition(f"{topic}-{partition}")

    def partitions(self) -> Mapping[TopicPartitionKey, Partition]:
        return self._partitions

    # Changes to the log ------------------------------------------------------------------
    def after_append(self, partition: Partition) -> None:
        """Wake whoever waits on this partition: new data, maybe a new HW."""
        partition.maybe_advance_high_watermark()
        self.fetch_purgatory.check(partition.key)
        self.produce_purgatory.check(partition.key)

    def after_high_watermark_change(self, key: TopicPartitionKey) -> None:
        self.fetch_purgatory.check(key)
        self.produce_purgatory.check(key)

    def record_follower_fetch(self, partition: Partition, replica_id: int, offset: int) -> None:
        """A follower's Fetch at ``offset`` (validated in range): HW, then ISR expansion."""
        if partition.record_follower_fetch(replica_id, offset):
            self.after_high_watermark_change(partition.key)
        if self.isr_manager is not None and partition.can_join_isr(replica_id):
            self.isr_manager.expand(partition, replica_id)

    def after_isr_change(self, partition: Partition) -> None:
        """The ISR changed (our write landed, or a newer state was read): HW and waiters."""
        partition.maybe_advance_high_watermark()
        self.after_high_watermark_change(partition.key)

    # Leadership --------------------------------------------------------------------------
    def add_leadership_listener(self, callback: LeadershipListener) -> None:
        """Call ``callback`` whenever we start leading a partition (or at a new epoch) and
        whenever we stop; the group coordinator loads and drops its offsets partitions so."""
        self._leadership_listeners.append(callback)

    def _notify_leadership(self, key: TopicPartitionKey, is_leader: bool) -> None:
        for callback in self._leadership_listeners:
            try:
                callback(key[0], key[1], is_leader)
            except Exception:
                log.exception("leadership listener failed for %s-%d", *key)

    def apply_cluster_view(self, topics: Mapping[str, Any]) -> None:
        """Make local leadership match the cluster.

        ``topics[name]`` has ``topic_id`` and ``partitions`` (index -> partition state). A
        topic that vanished, or came back under a new id (deleted and re-created), loses
        its local log.
        """
        seen: set[TopicPartitionKey] = set()
        for topic, metadata in topics.items():
            topic_id = getattr(metadata, "topic_id", None)
            for index, state in metadata.partitions.items():
                key = TopicPartition(topic, index)
                seen.add(key)
                current = self._partitions.get(key)
                if current is not None and current.topic_id != topic_id:
                    self._forget(key)
                if state.leader == self.broker_id:
                    self._become_leader(topic, index, state, topic_id)
                elif self.broker_id in tuple(state.replicas):
                    self._become_follower(topic, index, state, topic_id)
                elif key in self._partitions:
                    self._forget(key)  # reassigned away: Kafka's StopReplica(delete=true)
        self._known = seen
        for key in [k for k in self._partitions if k not in seen]:
            self._forget(key)

    def _open(self, topic: str, index: int, topic_id: Any) -> Partition:
        key = TopicPartition(topic, index)
        current = self._partitions.get(key)
        if current is not None:
            return current
        config = self._log_config_for(topic)
        partition_log = self.log_manager.get_or_create_log(topic, index, config)
        if getattr(partition_log, "config", config) != config:  # loaded at startup
            self.log_manager.update_config(topic, config)
        partition = Partition(
            topic=topic, index=index, log=partition_log, broker_id=self.broker_id,
            leader_epoch=-1, isr=(), replicas=(), is_leader=False, topic_id=topic_id,
            min_insync_replicas=int(getattr(config, "min_insync_replicas", 1)),
        )
        self._partitions[key] = partition
        return partition

    def _become_leader(
        self, topic: str, index: int, state: PartitionLeadership, topic_id: Any
    ) -> None:
        partition = self._open(topic, index, topic_id)
        zk_version = int(getattr(state, "zk_version", -1))
        if partition.is_leader and partition.leader_epoch == state.leader_epoch:
            # Same term: adopt a newer state znode (our own ISR write coming back, or a
            # write we could not confirm), never an older one.
            if zk_version > partition.zk_version or zk_version < 0:
                partition.isr = tuple(state.isr)
                partition.replicas = tuple(state.replicas)
                partition.zk_version = zk_version
                self.after_isr_change(partition)
            return
        was_leader = partition.is_leader
        if self.fetchers is not None:
            self.fetchers.remove_partition(partition.key)
        now = monotonic_ms()
        partition.leader = self.broker_id
        partition.leader_epoch = state.leader_epoch
        partition.isr = tuple(state.isr)
        partition.replicas = tuple(state.replicas)
        partition.zk_version = zk_version
        partition.controller_epoch = int(getattr(state, "controller_epoch", -1))
        partition.pending_isr = None
        if not was_leader:
            # A new term: what we knew about followers belongs to someone else's term.
            partition.leader_generation += 1
            partition.followers = {}
        for replica in partition.replicas:
            if replica != self.broker_id:
                progress = partition.followers.setdefault(replica, FollowerProgress())
                if replica in partition.isr and not was_leader:
                    progress.last_caught_up_ms = now  # give the ISR a full lag period
        partition_log = partition.log
        partition.leader_epoch_start_offset = int(partition_log.log_end_offset)
        partition_log.leader_epoch_cache.assign(state.leader_epoch, partition_log.log_end_offset)
        partition.is_leader = True
        log.info("leader of %s-%d at epoch %d, isr %s, log end %d", topic, index,
                 state.leader_epoch, list(partition.isr), partition_log.log_end_offset)
        self.after_isr_change(partition)
        self._notify_leadership(partition.key, True)

    def _become_follower(
        self, topic: str, index: int, state: PartitionLeadership, topic_id: Any
    ) -> None:
        partition = self._open(topic, index, topic_id)
        was_leader = partition.is_leader
        same_term = (
            not was_leader
            and partition.leader == state.leader
            and partition.leader_epoch == state.leader_epoch
        )
        partition.isr = tuple(state.isr)
        partition.replicas = tuple(state.replicas)
        partition.zk_version = int(getattr(state, "zk_version", -1))
        partition.controller_epoch = int(getattr(state, "controller_epoch", -1))
        if same_term:
            return
        partition.is_leader = False
        partition.pending_isr = None
        partition.leader = state.leader
        partition.leader_epoch = state.leader_epoch
        if was_leader:
            log.info("no longer leader of %s-%d (leader now %d, epoch %d)", topic, index,
                     state.leader, state.leader_epoch)
            self.after_high_watermark_change(partition.key)  # waiters fail now
            self._notify_leadership(partition.key, False)
        if self.fetchers is None:
            return
        if state.leader == NO_LEADER:
            self.fetchers.remove_partition(partition.key)
        else:
            self.fetchers.add_partition(partition)

    def _forget(self, key: TopicPartitionKey) -> None:
        """We no longer hold this partition (topic deleted, or reassigned away from us):
        stop leading and fetching, then delete the local log."""
        partition = self._partitions.pop(key)
        if self.fetchers is not None:
            self.fetchers.remove_partition(key)
        was_leader, partition.is_leader = partition.is_leader, False
        self.after_high_watermark_change(key)
        if was_leader:
            self._notify_leadership(key, False)
        log.info("deleting log of removed partition %s-%d", *key)
        try:
            self.log_manager.delete_log(*key)
        except Exception:
            log.exception("deleting %s-%d failed", *key)

    def update_topic_config(self, topic: str) -> None:
        """Re-read the topic's effective config (AlterConfigs, dynamic changes)."""
        config = self._log_config_for(topic)
        self.log_manager.update_config(topic, config)
        for (name, _index), partition in self._partitions.items():
            if name == topic:
                partition.min_insync_replicas = int(getattr(config, "min_insync_replicas", 1))
