"""Partitions this broker leads: appends, reads, high watermarks, leadership changes.

The replica manager is the broker's single owner of ``PartitionLog`` objects in use. The
cluster view says who leads what; :meth:`ReplicaManager.apply_cluster_view` makes the local
state match it (open the log when we become leader, stop serving when we do not).

High watermark: the smallest log end offset among the ISR. Until replication lands the ISR
of every partition we lead is at most ourselves, so the HW follows the LEO right after each
append. The hooks for followers are already here: :meth:`Partition.record_follower_fetch`
stores a follower's fetch offset (a Fetch with ``replica_id >= 0``) and re-computes the HW,
and every HW move wakes the delayed produces and fetches watching the partition.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from odradek.protocol.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    UnknownLeaderEpoch,
    UnknownTopicOrPartition,
)

from .delayed import Purgatory

__all__ = ["Partition", "PartitionLeadership", "ReplicaManager", "TopicPartitionKey"]

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]


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
class Partition:
    """A partition this broker leads (or led: ``is_leader`` turns False on a change)."""

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
    follower_end_offsets: dict[int, int] = field(default_factory=dict)

    @property
    def key(self) -> TopicPartitionKey:
        return (self.topic, self.index)

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
        """Move the HW to the smallest LEO in the ISR; True if it moved."""
        candidate = int(self.log.log_end_offset)
        for replica in self.isr:
            if replica != self.broker_id:
                candidate = min(candidate, self.follower_end_offsets.get(replica, 0))
        if candidate > self.log.high_watermark:
            self.log.update_high_watermark(candidate)
            return True
        return False

    def record_follower_fetch(self, replica_id: int, fetch_offset: int) -> bool:
        """A follower fetching from ``fetch_offset`` has everything below it."""
        self.follower_end_offsets[replica_id] = fetch_offset
        return self.maybe_advance_high_watermark()


class ReplicaManager:
    """Owns the leader partitions of this broker and the purgatories they wake."""

    def __init__(
        self,
        broker_id: int,
        log_manager: Any,
        log_config_for: Callable[[str], Any],
        *,
        fetch_purgatory: Purgatory | None = None,
        produce_purgatory: Purgatory | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self._log_config_for = log_config_for
        self.fetch_purgatory = fetch_purgatory or Purgatory("fetch")
        self.produce_purgatory = produce_purgatory or Purgatory("produce")
        self._partitions: dict[TopicPartitionKey, Partition] = {}
        self._known: set[TopicPartitionKey] = set()

    # Lookup ------------------------------------------------------------------------------
    def leader_partition(self, topic: str, partition: int) -> Partition:
        """The partition if we lead it; Kafka's errors otherwise."""
        found = self._partitions.get((topic, partition))
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

    # Leadership --------------------------------------------------------------------------
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
                key = (topic, index)
                seen.add(key)
                current = self._partitions.get(key)
                if current is not None and current.topic_id != topic_id:
                    self._forget(key)
                if state.leader == self.broker_id:
                    self._become_leader(topic, index, state, topic_id)
                else:
                    self._stop_leading(key)
        self._known = seen
        for key in [k for k in self._partitions if k not in seen]:
            self._forget(key)

    def _become_leader(
        self, topic: str, index: int, state: PartitionLeadership, topic_id: Any
    ) -> None:
        key = (topic, index)
        current = self._partitions.get(key)
        if (
            current is not None
            and current.is_leader
            and current.leader_epoch == state.leader_epoch
            and current.isr == tuple(state.isr)
        ):
            return
        config = self._log_config_for(topic)
        if current is None:
            partition_log = self.log_manager.get_or_create_log(topic, index, config)
            if getattr(partition_log, "config", config) != config:  # loaded at startup
                self.log_manager.update_config(topic, config)
        else:
            partition_log = current.log
        min_isr = int(getattr(config, "min_insync_replicas", 1))
        partition = Partition(
            topic=topic,
            index=index,
            log=partition_log,
            broker_id=self.broker_id,
            leader_epoch=state.leader_epoch,
            isr=tuple(state.isr),
            replicas=tuple(state.replicas),
            min_insync_replicas=min_isr,
            topic_id=topic_id,
        )
        if current is not None:
            partition.follower_end_offsets = current.follower_end_offsets
        self._partitions[key] = partition
        if current is None or current.leader_epoch != state.leader_epoch:
            log.info("leader of %s-%d at epoch %d", topic, index, state.leader_epoch)
            assign = getattr(partition_log, "assign_leader_epoch", None)
            if assign is not None:
                assign(state.leader_epoch, partition_log.log_end_offset)
        partition.maybe_advance_high_watermark()
        self.after_high_watermark_change(key)

    def _stop_leading(self, key: TopicPartitionKey) -> None:
        current = self._partitions.get(key)
        if current is not None and current.is_leader:
            log.info("no longer leader of %s-%d", *key)
            current.is_leader = False
            self.after_high_watermark_change(key)

    def _forget(self, key: TopicPartitionKey) -> None:
        """The topic is gone from the cluster: delete the local log."""
        partition = self._partitions.pop(key)
        partition.is_leader = False
        self.after_high_watermark_change(key)
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
