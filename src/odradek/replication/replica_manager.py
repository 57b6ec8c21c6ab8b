"""The partitions this broker replicates, and the entry points requests go through.

As Kafka's ReplicaManager, it is where request handlers meet replication: handlers decode,
call one entry point, and encode what comes back.

* :meth:`ReplicaManager.append_records` — Produce and the group coordinator's offsets log:
  append whole batches to the partitions we lead; acks=-1 waits for the high watermark
  (:mod:`.delayed_produce`).
* :meth:`ReplicaManager.fetch` — consumers and followers: zero-copy reads
  (:mod:`.reads`), long-polling in the fetch purgatory (:mod:`.delayed_fetch`); a
  follower's fetch advances the HW and may expand the ISR; the replication throttles
  (:mod:`.throttles`) hold back what followers get and fetch.
* ListOffsets, DeleteRecords, OffsetForLeaderEpoch, DescribeLogDirs: one call each.

Either append and fetch answer at once (a plain value: the fast path creates no task) or
return a future the purgatory completes.

Leadership follows the cluster view: :meth:`apply_cluster_view` opens the log and takes
writes when we become leader (recording the new leader epoch in
``leader-epoch-checkpoint``), hands the partition to a follower fetcher (:mod:`.fetcher`)
when we become a follower, and refuses writes at once (NOT_LEADER_OR_FOLLOWER) when
leadership moves away — the view changes before any request is answered under the new
state. The ISR changes only through conditional ZooKeeper writes (:mod:`.isr_manager`);
the local ISR is updated only after a write succeeded or when the view shows a newer state
znode, so a leader that cannot write keeps its old ISR and cannot acknowledge acks=all
writes its followers do not have.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import Callable, Hashable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kio.schema.errors import ErrorCode

from odradek.client.security import PLAINTEXT, ClientSecurity
from odradek.clock import monotonic_ms
from odradek.protocol.errors import (
    NotLeaderOrFollower,
    UnknownTopicOrPartition,
    response_error,
)
from odradek.storage import LogConfig, PartitionLog
from odradek.types import BrokerId, LeaderEpoch, Offset, TopicPartition

from .acks import Acks
from .delayed_fetch import DelayedFetch
from .delayed_produce import (
    AppendResult,
    AppendResults,
    AwaitingReplication,
    DelayedProduce,
    settle,
)
from .fetch_session import FetchSessionCache
from .fetcher import ReplicaFetcherManager
from .isr_manager import IsrManager
from .partition import NO_LEADER, FollowerProgress, Partition, PartitionLeadership
from .purgatory import Purgatory
from .reads import (
    Authorized,
    FetchParams,
    FetchRead,
    SessionReads,
    has_new_data,
    read_partitions,
)
from .throttles import ReplicationQuotas

if TYPE_CHECKING:
    from odradek.config_sections import ReplicationConfig
    from odradek.metrics import BrokerMetrics
    from odradek.storage import LogManager

__all__ = ["LeadershipListener", "ReplicaManager"]

log = logging.getLogger(__name__)

LeadershipListener = Callable[[str, int, bool], None]
"""``(topic, partition, is_leader)``: told when this broker starts or stops leading."""

class ReplicaManager:
    """Owns the partitions of this broker, the purgatories they wake, and replication.

    ``replication`` is the broker config's ``replication`` section; :meth:`reconfigure`
    replaces it whole (the ISR manager and the fetchers read it at each use).
    """

    def __init__(
        self,
        broker_id: BrokerId,
        log_manager: LogManager,
        log_config_for: Callable[[str], LogConfig],
        replication: ReplicationConfig,
        *,
        isr_writer: Any = None,
        broker_address: Callable[[int], tuple[str, int] | None] | None = None,
        metrics: BrokerMetrics | None = None,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self._log_config_for = log_config_for
        self.fetch_purgatory = Purgatory("fetch")
        self.fetch_sessions = FetchSessionCache(
            replication.max_incremental_fetch_session_cache_slots)
        self.fetch_sessions.on_caught_up = self._follower_caught_up
        self._loop: asyncio.AbstractEventLoop | None = None  # where partitions are changed
        self.produce_purgatory = Purgatory("produce")
        self.replication = replication
        self._partitions: dict[TopicPartition, Partition] = {}
        self._known: set[TopicPartition] = set()
        self._leadership_listeners: list[LeadershipListener] = []
        self.isr_manager: IsrManager | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        # The window configs are read-only (as in Kafka); the rates follow the dynamic
        # broker configs (odradek.broker.reconfigure), the throttled replicas each topic.
        self.throttles = ReplicationQuotas(replication.replication_quota_window_num,
                                           replication.replication_quota_window_size_seconds)
        if isr_writer is not None:
            self.isr_manager = IsrManager(isr_writer, replication,
                                          lambda: self._partitions.values(),
                                          self.after_isr_change)
        if broker_address is not None:
            self.fetchers = ReplicaFetcherManager(broker_id, replication, broker_address,
                                                  security, self.throttles.follower)
        # Traffic is counted once per partition of a request (a counter add), never per
        # record; the state (sizes, offsets, ISR) is read at scrape time instead.
        self._traffic = metrics.traffic if metrics is not None else None
        if metrics is not None:
            if self.isr_manager is not None:
                self.isr_manager.on_applied = _isr_counter(metrics)
            if self.fetchers is not None:
                self.fetchers.on_appended = metrics.traffic.replicated_in
                self.fetchers.on_failure = metrics.replication.fetcher_failed
            self.throttles.leader.on_record = metrics.replication.leader_throttled
            self.throttles.follower.on_record = metrics.replication.follower_throttled
            self.fetch_sessions.on_change = metrics.fetch_sessions.changed
            self.fetch_sessions.on_evict = metrics.fetch_sessions.evicted
            for purgatory in (self.fetch_purgatory, self.produce_purgatory):
                purgatory.on_expired = metrics.purgatory.expired
                metrics.purgatory.expired(purgatory.name, 0)  # a series from the start

    def reconfigure(self, replication: ReplicationConfig) -> None:
        """A new ``replication`` section (dynamic broker configs)."""
        self.replication = replication
        if self.isr_manager is not None:
            self.isr_manager.settings = replication
        if self.fetchers is not None:
            self.fetchers.settings = replication

    async def start(self) -> None:
        if self.isr_manager is not None:
            self.isr_manager.start()

    async def shutdown(self) -> None:
        """Stop replication: fetchers first (no more follower appends), then ISR checks."""
        if self.fetchers is not None:
            await self.fetchers.shutdown()
        if self.isr_manager is not None:
            await self.isr_manager.stop()

    def complete_delayed_now(self) -> None:
        """Answer every waiting fetch and produce with what is there (broker shutdown)."""
        self.fetch_purgatory.expire_all()
        self.produce_purgatory.expire_all()

    # Lookup ------------------------------------------------------------------------------
    def leader_partition(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> Partition:
        """The partition if we lead it; Kafka's errors otherwise. A request carrying the
        client's leader epoch is fenced first, leader or follower, as in Kafka's
        ``Partition.getLocalLog``: a client with stale metadata asking the former leader
        hears FENCED_LEADER_EPOCH, not NOT_LEADER_OR_FOLLOWER."""
        # A plain tuple finds a TopicPartition key (equal hash and value), and is cheaper
        # to make on the request path.
        key = cast(TopicPartition, (topic, partition))
        found = self._partitions.get(key)
        if found is not None:
            found.check_leader_epoch(current_leader_epoch)
            if found.is_leader:
                return found
        if key in self._known:
            raise NotLeaderOrFollower(f"broker {self.broker_id} does not lead {topic}-{partition}")
        raise UnknownTopicOrPartition(f"{topic}-{partition}")

    def hosted_partition(self, topic: str, partition: int) -> Partition:
        """The partition if we hold a replica of it, leader or follower (readers of local
        state any replica has, like Kafka's DescribeProducers); Kafka's errors otherwise."""
        key = cast(TopicPartition, (topic, partition))
        found = self._partitions.get(key)
        if found is not None:
            return found
        if key in self._known:
            raise NotLeaderOrFollower(f"broker {self.broker_id} holds no replica of "
                                      f"{topic}-{partition}")
        raise UnknownTopicOrPartition(f"{topic}-{partition}")

    def partitions(self) -> Mapping[TopicPartition, Partition]:
        return self._partitions

    def local_log(self, key: TopicPartition) -> PartitionLog | None:
        """The local log of a partition we hold, leader or follower (internal readers:
        the group coordinator loads ``__consumer_offsets`` from it)."""
        found = self._partitions.get(key)
        return found.log if found is not None else None

    # Produce -----------------------------------------------------------------------------
    def append_records(
        self,
        entries: Mapping[TopicPartition, bytes | memoryview | None],
        *,
        acks: Acks,
        timeout_ms: int,
        from_coordinator: bool = False,
    ) -> AppendResults | asyncio.Future[AppendResults]:
        """Append each partition's batches (whole, as received) to the partitions we lead.

        With ``Acks.NONE`` or ``Acks.LEADER``, or when nothing needs to wait, the results
        come back at once; so do ``Acks.ALL`` appends the HW covered at once (we are the whole
        ISR). Otherwise the appended partitions wait until the HW covers them (or
        ``timeout_ms``), and a future of the results comes back. ``from_coordinator``:
        a coordinator's own write (see :meth:`Partition.append_as_leader`).
        """
        results: AppendResults = {}
        waiting: dict[TopicPartition, AwaitingReplication] = {}
        for key, records in entries.items():
            try:
                partition = self.leader_partition(key.topic, key.partition)
                info = partition.append_as_leader(
                    records, acks, from_coordinator=from_coordinator
                )
            except Exception as exc:
                results[key] = _failed(exc, key)
                continue
            self.after_append(partition)
            if self._traffic is not None and records is not None:
                self._traffic.produced(key.topic, len(records), info.record_count)
            results[key] = AppendResult(base_offset=info.first_offset,
                                        log_append_time=info.log_append_time,
                                        log_start_offset=info.log_start_offset)
            if acks == Acks.ALL:
                waiting[key] = AwaitingReplication.after(partition, info.last_offset)
        if not waiting or settle(results, waiting):
            return results  # nothing to wait for, or the HW covered it at once
        operation = DelayedProduce(results, waiting)
        # settle() has just found it waiting, in this loop turn: watch without testing again.
        return self.produce_purgatory.watch(operation, list(waiting), timeout_ms / 1000)

    # Fetch -------------------------------------------------------------------------------
    def fetch(self, params: FetchParams, *, session: SessionReads | None = None,
              authorized: Authorized | None = None) -> FetchRead | asyncio.Future[FetchRead]:
        """Read the wanted partitions; answer at once when there is enough data (or an
        error, or no wait allowed), else long-poll until data arrives or ``max_wait_ms``.
        ``session`` and ``authorized``: see :func:`.reads.read_partitions`."""

        def read() -> FetchRead:
            return read_partitions(params, self.leader_partition, self._record_follower_fetch,
                                   session=session, authorized=authorized,
                                   held_back=self._leader_holds_back)

        found = read()
        if found.satisfies(params) or params.max_wait_ms <= 0 or not params.partitions:
            self._answered(params, found)
            return found
        operation = DelayedFetch(
            params, read, lambda: has_new_data(params, self.leader_partition, session)
        )
        keys: Iterable[Hashable] = (
            {TopicPartition(p.topic, p.partition) for p in params.partitions}
            if session is None else (session.watch_key,))
        # The read just found too little, in this loop turn: watch without testing again.
        waiting = self.fetch_purgatory.watch(operation, keys, params.max_wait_ms / 1000)

        def answered(done: asyncio.Future[FetchRead]) -> None:
            if not done.cancelled() and done.exception() is None:
                self._answered(params, done.result())

        waiting.add_done_callback(answered)
        return waiting

    def _answered(self, params: FetchParams, read: FetchRead) -> None:
        """What an answer sends: bytes out (one add per partition with data; a follower's
        fetch is replication), and a follower's bytes of throttled partitions against the
        leader's replication quota (counted once, on the answer: a long poll reads more
        than once)."""
        if not read.total_bytes:
            return
        traffic = self._traffic
        if params.from_follower:
            if traffic is not None:
                traffic.replicated_out(read.total_bytes)
            quota = self.throttles.leader
            for topic in read.topics:
                for part in topic.partitions:
                    size = part.records_size
                    if size and quota.is_throttled(topic.topic, part.partition_index,
                                                   self.broker_id):
                        quota.record(size)
            return
        if traffic is None:
            return
        for topic in read.topics:
            size = sum(part.records_size for part in topic.partitions)
            if size:
                traffic.fetched(topic.topic, size)

    def _leader_holds_back(self, partition: Partition, replica_id: int) -> bool:
        """Kafka's ``shouldLeaderThrottle``: a follower outside the ISR, of a replica the
        topic throttles on this leader, while the leader quota is exceeded. An in-sync
        follower is never held back: it would fall out of the ISR."""
        quota = self.throttles.leader
        return (replica_id not in partition.isr
                and quota.is_throttled(partition.topic, partition.index, self.broker_id)
                and quota.is_quota_exceeded())

    def _follower_caught_up(self, key: tuple[str, int], replica_id: int, at_ms: int) -> None:
        """A follower's session had ``key``'s whole log at every fetch up to ``at_ms``
        without visiting it (:mod:`.fetch_session`): its progress says so now."""
        partition = self._partitions.get(cast(TopicPartition, key))
        if partition is not None and partition.is_leader:
            partition.record_caught_up(replica_id, at_ms)

    def _record_follower_fetch(self, partition: Partition, replica_id: int, offset: int) -> None:
        """A follower's Fetch at ``offset`` (validated in range): HW, then ISR expansion."""
        if partition.record_follower_fetch(replica_id, offset):
            self.after_high_watermark_change(partition.key)
        if self.isr_manager is not None and partition.can_join_isr(replica_id):
            self.isr_manager.expand(partition, BrokerId(replica_id))

    # Other reads and writes of led partitions ---------------------------------------------
    def offset_for_timestamp(
        self,
        key: TopicPartition,
        timestamp: int,
        current_leader_epoch: int = -1,
        read_committed: bool = False,
    ) -> tuple[Offset, int, LeaderEpoch]:
        """ListOffsets: (offset, timestamp, leader epoch); (-1, -1, -1) when no committed
        record is that recent (for read_committed: none below the last stable offset)."""
        partition = self.leader_partition(key.topic, key.partition, current_leader_epoch)
        offset, found_timestamp = partition.offset_for_timestamp(timestamp, read_committed)
        epoch = partition.leader_epoch if offset >= 0 else LeaderEpoch(-1)
        return offset, found_timestamp, epoch

    def delete_records(self, key: TopicPartition, offset: int) -> Offset:
        """DeleteRecords before ``offset`` (-1: the HW); returns the new low watermark."""
        return self.leader_partition(key.topic, key.partition).delete_records_before(offset)

    def end_offset_for_leader_epoch(
        self, key: TopicPartition, current_leader_epoch: int, leader_epoch: int
    ) -> tuple[LeaderEpoch, Offset]:
        """OffsetForLeaderEpoch, answered by the leader."""
        partition = self.leader_partition(key.topic, key.partition, current_leader_epoch)
        return partition.end_offset_for_leader_epoch(LeaderEpoch(leader_epoch))

    def log_dir_sizes(
        self, wanted: Iterable[TopicPartition] | None = None
    ) -> dict[Path, dict[TopicPartition, int]]:
        """DescribeLogDirs: every log dir, and the size of each wanted partition in it."""
        sizes: dict[Path, dict[TopicPartition, int]] = {
            Path(d): {} for d in self.log_manager.log_dirs
        }
        chosen = None if wanted is None else set(wanted)
        for key, partition in self._partitions.items():
            if chosen is not None and key not in chosen:
                continue
            parent = Path(os.path.dirname(str(partition.log.dir).rstrip("/")))
            sizes.setdefault(parent, {})[key] = partition.log.size_bytes()
        return sizes

    # Changes to the log ------------------------------------------------------------------
    # Each of these marks the partition dirty in the fetch sessions holding it first, so
    # that a waiting fetch re-tested here visits it.
    def after_append(self, partition: Partition) -> None:
        """Wake whoever waits on this partition: new data, maybe a new HW."""
        partition.maybe_advance_high_watermark()
        self.after_high_watermark_change(partition.key)

    def after_high_watermark_change(self, key: TopicPartition) -> None:
        """The HW moved, or leadership did: fetches and acks=all writes look again."""
        fetch_purgatory = self.fetch_purgatory
        for session in self.fetch_sessions.partition_changed(key):
            fetch_purgatory.check(session)
        fetch_purgatory.check(key)
        self.produce_purgatory.check(key)

    def _after_log_start_change(self, key: TopicPartition) -> None:
        """The log start moved (DeleteRecords on the loop, or retention on a storage
        thread, which hands it to the loop): fetch sessions tell their clients."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                loop.call_soon_threadsafe(self.fetch_sessions.partition_changed, key)
                return
        self.fetch_sessions.partition_changed(key)

    def after_isr_change(self, partition: Partition) -> None:
        """The ISR changed (our write landed, or a newer state was read): HW and waiters."""
        partition.maybe_advance_high_watermark()
        self.after_high_watermark_change(partition.key)

    # Leadership --------------------------------------------------------------------------
    def add_leadership_listener(self, callback: LeadershipListener) -> None:
        """Call ``callback`` whenever we start leading a partition (or at a new epoch) and
        whenever we stop; the group coordinator loads and drops its offsets partitions so."""
        self._leadership_listeners.append(callback)

    def _notify_leadership(self, key: TopicPartition, is_leader: bool) -> None:
        for callback in self._leadership_listeners:
            try:
                callback(key.topic, key.partition, is_leader)
            except Exception:
                log.exception("leadership listener failed for %s", key)

    def apply_cluster_view(self, topics: Mapping[str, Any]) -> None:
        """Make local leadership match the cluster.

        ``topics[name]`` has ``topic_id`` and ``partitions`` (index -> partition state). A
        topic that vanished, or came back under a new id (deleted and re-created), loses
        its local log.
        """
        seen: set[TopicPartition] = set()
        for topic, metadata in topics.items():
            topic_id = getattr(metadata, "topic_id", None)
            for index, state in metadata.partitions.items():
                key = TopicPartition(topic, index)
                seen.add(key)
                current = self._partitions.get(key)
                if current is not None and current.topic_id != topic_id:
                    self._forget(key)
                if state.leader == self.broker_id:
                    self._become_leader(key, state, topic_id)
                elif self.broker_id in tuple(state.replicas):
                    self._become_follower(key, state, topic_id)
                elif key in self._partitions:
                    self._forget(key)  # reassigned away: Kafka's StopReplica(delete=true)
        self._known = seen
        for key in [k for k in self._partitions if k not in seen]:
            self._forget(key)

    def _open(self, key: TopicPartition, topic_id: Any) -> Partition:
        current = self._partitions.get(key)
        if current is not None:
            return current
        config = self._log_config_for(key.topic)
        partition_log = self.log_manager.get_or_create_log(key.topic, key.partition, config)
        if partition_log.config != config:  # loaded at startup
            self.log_manager.update_config(key.topic, config)
        partition = Partition(
            topic=key.topic, index=key.partition, log=partition_log,
            broker_id=self.broker_id, topic_id=topic_id,
            min_insync_replicas=config.min_insync_replicas,
        )
        with contextlib.suppress(RuntimeError):  # no loop: tests that drive it directly
            self._loop = asyncio.get_running_loop()
        partition_log.on_log_start_change = functools.partial(self._after_log_start_change, key)
        self._partitions[key] = partition
        self._follow_throttles(key.topic, config)
        return partition

    def _become_leader(self, key: TopicPartition, state: PartitionLeadership,
                       topic_id: Any) -> None:
        partition = self._open(key, topic_id)
        zk_version = int(getattr(state, "zk_version", -1))
        if partition.is_leader and partition.leader_epoch == state.leader_epoch:
            # Same term: adopt a newer state znode (our own ISR write coming back, or a
            # write we could not confirm), never an older one.
            if zk_version > partition.zk_version or zk_version < 0:
                partition.isr = tuple(map(BrokerId, state.isr))
                partition.replicas = tuple(map(BrokerId, state.replicas))
                partition.zk_version = zk_version
                self.after_isr_change(partition)
            return
        was_leader = partition.is_leader
        if self.fetchers is not None:
            self.fetchers.remove_partition(key)
        now = monotonic_ms()
        partition.leader = self.broker_id
        partition.leader_epoch = LeaderEpoch(state.leader_epoch)
        partition.isr = tuple(map(BrokerId, state.isr))
        partition.replicas = tuple(map(BrokerId, state.replicas))
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
        partition.leader_epoch_start_offset = Offset(partition_log.log_end_offset)
        partition_log.leader_epoch_cache.assign(state.leader_epoch, partition_log.log_end_offset)
        partition.is_leader = True
        log.info("leader of %s at epoch %d, isr %s, log end %d", key, state.leader_epoch,
                 list(partition.isr), partition_log.log_end_offset)
        self.after_isr_change(partition)
        self._notify_leadership(key, True)

    def _become_follower(self, key: TopicPartition, state: PartitionLeadership,
                         topic_id: Any) -> None:
        partition = self._open(key, topic_id)
        was_leader = partition.is_leader
        same_term = (
            not was_leader
            and partition.leader == state.leader
            and partition.leader_epoch == state.leader_epoch
        )
        partition.isr = tuple(map(BrokerId, state.isr))
        partition.replicas = tuple(map(BrokerId, state.replicas))
        partition.zk_version = int(getattr(state, "zk_version", -1))
        partition.controller_epoch = int(getattr(state, "controller_epoch", -1))
        if same_term:
            return
        partition.is_leader = False
        partition.pending_isr = None
        partition.leader = BrokerId(state.leader)
        partition.leader_epoch = LeaderEpoch(state.leader_epoch)
        if was_leader:
            log.info("no longer leader of %s (leader now %d, epoch %d)", key, state.leader,
                     state.leader_epoch)
            self.after_high_watermark_change(key)  # waiters fail now
            self._notify_leadership(key, False)
        if self.fetchers is None:
            return
        if state.leader == NO_LEADER:
            self.fetchers.remove_partition(key)
        else:
            self.fetchers.add_partition(partition)

    def _forget(self, key: TopicPartition) -> None:
        """We no longer hold this partition (topic deleted, or reassigned away from us):
        stop leading and fetching, then delete the local log."""
        partition = self._partitions.pop(key)
        if self.fetchers is not None:
            self.fetchers.remove_partition(key)
        was_leader, partition.is_leader = partition.is_leader, False
        self.after_high_watermark_change(key)
        if was_leader:
            self._notify_leadership(key, False)
        log.info("deleting log of removed partition %s", key)
        try:
            self.log_manager.delete_log(key.topic, key.partition)
        except Exception:
            log.exception("deleting %s failed", key)

    def update_topic_config(self, topic: str) -> None:
        """Re-read the topic's effective config (AlterConfigs, dynamic changes)."""
        config = self._log_config_for(topic)
        self.log_manager.update_config(topic, config)
        for key, partition in self._partitions.items():
            if key.topic == topic:
                partition.min_insync_replicas = config.min_insync_replicas
        self._follow_throttles(topic, config)

    def _follow_throttles(self, topic: str, config: LogConfig) -> None:
        self.throttles.set_topic(topic, config.leader_replication_throttled_replicas,
                                 config.follower_replication_throttled_replicas)


def _isr_counter(metrics: BrokerMetrics) -> Callable[[tuple[int, ...], tuple[int, ...]], None]:
    replication = metrics.replication

    def applied(old: tuple[int, ...], new: tuple[int, ...]) -> None:
        removed = sum(1 for r in old if r not in new)
        added = sum(1 for r in new if r not in old)
        if removed:
            replication.isr_shrunk(removed)
        if added:
            replication.isr_expanded(added)

    return applied


def _failed(exc: BaseException, key: TopicPartition) -> AppendResult:
    code, message = response_error(exc, f"append to {key}")
    return AppendResult(error=code, message=message if code != ErrorCode.none else None)
