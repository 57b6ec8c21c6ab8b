"""The controller: one broker, elected through ZooKeeper, that owns partition leadership.

**Election.** Every broker tries to create the ephemeral ``/controller``. The winner, in
the *same* ZooKeeper transaction, increments ``/controller_epoch`` conditionally on the
version it read. The epoch is the fencing token: every later controller write is a
transaction that first checks ``/controller_epoch`` still has the version this controller
wrote, so a zombie controller (paused, its session expired, a successor elected) can
never overwrite its successor's decisions. Losers watch ``/controller`` and race again
when it disappears; a controller whose session expires resigns at once.

**Work.** While active, the controller watches ``/brokers/ids`` (liveness),
``/brokers/topics`` and each topic's assignment (new topics and partitions) and
``/admin/delete_topics``. Any change schedules a *reconcile*: read the current state from
ZooKeeper, apply :mod:`odradek.cluster.election` to every partition, write the changed
``/brokers/topics/<t>/partitions/<p>/state`` znodes (conditionally on their version, and
fenced by the epoch), and remove topics marked for deletion. Events arriving while a
reconcile runs coalesce into one more pass, so a burst of broker failures costs two passes,
not one per event. Reading everything each pass keeps the controller stateless and obviously
right after failover ("rebuild from ZooKeeper") at the cost of O(partitions) reads per
event — the place to add an incremental context when clusters grow.

Brokers do not get LeaderAndIsr requests: each broker's ClusterView watches the state
znodes directly (and the topic znodes, for replica lists).

**Beyond leader election** (each rule pure, in its own module):

* partition reassignment (:mod:`~odradek.cluster.reassignment`): requests come from
  ``/admin/reassign_partitions`` (Kafka's tools in ZK mode) or the AlterPartitionReassignments
  API; progress lives in the topic znode's ``adding_replicas``/``removing_replicas``, so a
  new controller resumes it. The controller re-reads when a leader announces an ISR change
  under ``/isr_change_notification`` (and deletes the notification, as Kafka does) and
  watches the state znodes of partitions being moved;
* preferred-leader election on request (ElectLeaders, ``/admin/preferred_replica_election``)
  and periodically (:mod:`~odradek.cluster.preferred`, ``auto.leader.rebalance.enable``);
* controlled shutdown: a broker about to stop asks the controller to move its leaderships
  and drop it from every ISR; it stays "shutting down" (never elected) until its
  registration (identified by its broker epoch) disappears.

Requests from the API handlers and the reconcile loop take one lock: like Kafka's
single-threaded controller event queue, they never interleave (znode versions would catch
it, but serial is simpler to reason about). Topic deletion removes the znodes at once;
brokers delete logs when the topic leaves their view (Kafka waits for StopReplica
acknowledgements first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence, Set

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.protocol.states import WatchedEvent

from odradek.cluster import znodes
from odradek.cluster.controller_errors import ControllerMoved
from odradek.cluster.controller_requests import ControllerRequests
from odradek.cluster.election import (
    LeaderAndIsr,
    decide,
    initial_leader_and_isr,
    reassignment_complete_leader_and_isr,
)
from odradek.cluster.model import TopicPartition
from odradek.cluster.reassignment import ReplicaAssignment, validate_target
from odradek.cluster.topic_znode import TopicZnode, read_topic_znode
from odradek.cluster.zk import SessionEvent, ZkSession
from odradek.protocol.errors import KafkaError

__all__ = ["Controller", "ControllerMoved"]

log = logging.getLogger(__name__)

UNCLEAN_CONFIG = "unclean.leader.election.enable"


class Controller(ControllerRequests):
    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        *,
        unclean_leader_election: bool = False,
        auto_leader_rebalance: bool = False,
        leader_imbalance_check_interval_s: float = 300.0,
        leader_imbalance_percentage: int = 10,
    ) -> None:
        self.session = session
        self.broker_id = broker_id
        self.unclean_leader_election = unclean_leader_election
        self.auto_leader_rebalance = auto_leader_rebalance
        self.leader_imbalance_check_interval_s = leader_imbalance_check_interval_s
        self.leader_imbalance_percentage = leader_imbalance_percentage
        self.epoch: int | None = None
        self._epoch_zk_version = -1
        self._need_election = True
        self._need_reconcile = False
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._rebalance_task: asyncio.Task[None] | None = None
        self._changed: list[Callable[[], None]] = []
        # broker id -> broker epoch (registration czxid) of brokers in controlled shutdown.
        self._shutting_down: dict[int, int] = {}
        # One watch function per purpose: kazoo keeps watchers in sets, so re-arming with
        # the same function object never stacks duplicates.
        self._controller_watch = session.watcher(self._on_controller_znode)
        self._work_watch = session.watcher(self._on_work_znode)
        session.add_listener(self._on_session_event)

    @property
    def is_active(self) -> bool:
        return self.epoch is not None

    def add_listener(self, callback: Callable[[], None]) -> None:
        """``callback()`` runs on the loop whenever this broker gains or loses the role."""
        self._changed.append(callback)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"controller-{self.broker_id}")
        if self.auto_leader_rebalance:
            self._rebalance_task = asyncio.create_task(
                self._rebalance_loop(), name=f"leader-rebalance-{self.broker_id}"
            )
        self._wake.set()

    async def stop(self) -> None:
        """Stop taking part; an active controller resigns (deletes ``/controller``) so the
        others elect a successor at once instead of after our session closes."""
        self._stopped = True
        self._wake.set()
        for task in (self._task, self._rebalance_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.is_active:
            with contextlib.suppress(KazooException, Exception):
                await asyncio.wait_for(self.session.call(self._resign_sync), 5)
        self._set_epoch(None)

    def _resign_sync(self) -> None:
        client = self.session.client
        stat = client.exists(znodes.CONTROLLER)
        if stat is not None and stat.ephemeralOwner == self.session.session_id:
            client.delete(znodes.CONTROLLER, version=stat.version)
            log.info("controller %d resigned", self.broker_id)

    # -- events (all on the loop) ----------------------------------------------------------

    def _on_controller_znode(self, event: WatchedEvent) -> None:
        self._need_election = True
        self._wake.set()

    def _on_work_znode(self, event: WatchedEvent) -> None:
        self._need_reconcile = True
        self._wake.set()

    def _on_session_event(self, event: SessionEvent) -> None:
        if event is SessionEvent.EXPIRED:
            if self.is_active:
                log.warning("controller %d resigning: ZooKeeper session expired", self.broker_id)
            self._set_epoch(None)
        elif event in (SessionEvent.NEW_SESSION, SessionEvent.RECONNECTED):
            # kazoo forgets watchers on a connection drop: re-arm them all.
            self._need_election = True
            self._need_reconcile = True
            self._wake.set()

    def _set_epoch(self, epoch: int | None) -> None:
        changed = (epoch is None) != (self.epoch is None)
        self.epoch = epoch
        if changed:
            if epoch is None:
                self._shutting_down.clear()
            for callback in list(self._changed):
                try:
                    callback()
                except Exception:
                    log.exception("controller listener failed")

    async def _run(self) -> None:
        while not self._stopped:
            await self._wake.wait()
            self._wake.clear()
            try:
                if self._need_election:
                    self._need_election = False
                    await self._elect()
                if self.is_active and self._need_reconcile:
                    self._need_reconcile = False
                    async with self._lock:
                        again = await self.session.call(self._reconcile_sync)
                    if again:
                        self._need_reconcile = True
                        self._wake.set()
            except ControllerMoved:
                log.warning("controller %d fenced: another controller was elected", self.broker_id)
                self._set_epoch(None)
                self._need_election = True
                self._wake.set()
            except (ConnectionLoss, SessionExpiredError):
                # Retried once the session is back; the session listener re-raises the flags.
                self._need_election = True
                self._need_reconcile = True
                await self.session.connected.wait()
                self._wake.set()
            except KazooException:
                log.exception("controller %d: ZooKeeper error; retrying", self.broker_id)
                self._need_election = self._need_reconcile = True
                await asyncio.sleep(0.5)
                self._wake.set()

    async def _rebalance_loop(self) -> None:
        """Kafka's auto leader rebalance task: a periodic check, not a synchronisation."""
        while not self._stopped:
            await asyncio.sleep(self.leader_imbalance_check_interval_s)
            if not self.is_active:
                continue
            try:
                async with self._lock:
                    await self.session.call(self._auto_rebalance_sync)
            except ControllerMoved:
                self._need_election = True
                self._wake.set()
            except KazooException as exc:
                log.warning("controller %d: leader rebalance failed: %s", self.broker_id, exc)

    # -- election -----------------------------------------------------------------------------

    async def _elect(self) -> None:
        was_active = self.is_active
        result = await self.session.call(self._elect_sync)
        if result is None:
            if was_active:
                log.warning("controller %d lost the controller role", self.broker_id)
            self._set_epoch(None)
            return
        epoch, version = result
        self._epoch_zk_version = version
        self._set_epoch(epoch)
        if not was_active:
            log.info("broker %d is now controller (epoch %d)", self.broker_id, epoch)
            self._need_reconcile = True

    def _elect_sync(self) -> tuple[int, int] | None:
        """``(epoch, epoch znode version)`` if we hold ``/controller``, else None."""
        client = self.session.client
        while True:
            stat = client.exists(znodes.CONTROLLER, watch=self._controller_watch)
            if stat is not None:
                if stat.ephemeralOwner != self.session.session_id:
                    return None
                if self.epoch is not None:
                    return self.epoch, self._epoch_zk_version
                # Our own node from a create whose reply was lost: adopt the current epoch.
                data, epoch_stat = client.get(znodes.CONTROLLER_EPOCH)
                return znodes.decode_controller_epoch(data), epoch_stat.version
            epoch, epoch_version = self._read_or_create_epoch(client)
            txn = client.transaction()
            txn.create(znodes.CONTROLLER, znodes.encode_controller(self.broker_id), ephemeral=True)
            txn.set_data(
                znodes.CONTROLLER_EPOCH,
                znodes.encode_controller_epoch(epoch + 1),
                version=epoch_version,
            )
            results = txn.commit()
            if not any(isinstance(r, Exception) for r in results):
                client.exists(znodes.CONTROLLER, watch=self._controller_watch)
                return epoch + 1, results[1].version
            # Lost the race (NodeExists) or the epoch moved (BadVersion): look again.

    @staticmethod
    def _read_or_create_epoch(client: KazooClient) -> tuple[int, int]:
        try:
            data, stat = client.get(znodes.CONTROLLER_EPOCH)
            return znodes.decode_controller_epoch(data), stat.version
        except NoNodeError:
            pass
        with contextlib.suppress(NodeExistsError):
            client.create(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(0))
        data, stat = client.get(znodes.CONTROLLER_EPOCH)
        return znodes.decode_controller_epoch(data), stat.version

    # -- fenced writes -----------------------------------------------------------------------

    def _fenced(self, build: Callable[[TransactionRequest], None]) -> list[object]:
        """Commit ``build``'s operations only if we are still the current controller."""
        txn = self.session.client.transaction()
        txn.check(znodes.CONTROLLER_EPOCH, self._epoch_zk_version)
        build(txn)
        results = txn.commit()
        if isinstance(results[0], (BadVersionError, NoNodeError)):
            raise ControllerMoved()
        return list(results[1:])

    def _set_fenced(self, path: str, data: bytes, version: int) -> bool:
        """Fenced conditional set; False if the znode changed (or vanished) meanwhile."""
        results = self._fenced(lambda txn: txn.set_data(path, data, version=version))
        return not isinstance(results[0], Exception)

    def _write_topic_and_states(
        self,
        topic: TopicZnode,
        assignment: Mapping[int, ReplicaAssignment],
        states: Mapping[int, tuple[LeaderAndIsr, int]],
    ) -> bool:
        """Rewrite the topic znode and some partition states atomically (fenced, each
        conditional on the version read); False if anything changed meanwhile."""
        encoded = topic.encode(assignment)

        def build(txn: TransactionRequest) -> None:
            txn.set_data(znodes.topic_path(topic.name), encoded, version=topic.version)
            for partition, (decided, version) in sorted(states.items()):
                path = znodes.partition_state_path(topic.name, partition)
                txn.set_data(path, self._encode_state(decided), version=version)

        results = self._fenced(build)
        if any(isinstance(r, Exception) for r in results):
            return False
        for partition, (decided, _) in sorted(states.items()):
            self._log_change(topic.name, partition, decided)
        return True

    # -- reconcile ---------------------------------------------------------------------------

    def _live_brokers(self, client: KazooClient, watch: bool = True) -> set[int]:
        children = client.get_children(znodes.BROKER_IDS, watch=self._work_watch if watch else None)
        return {int(b) for b in children}

    def _current_shutting_down(self, client: KazooClient, live: Set[int]) -> frozenset[int]:
        """Brokers in controlled shutdown whose registration is still the one that asked."""
        for broker_id, broker_epoch in list(self._shutting_down.items()):
            stat = client.exists(znodes.broker_path(broker_id)) if broker_id in live else None
            if stat is None or stat.czxid != broker_epoch:
                del self._shutting_down[broker_id]
        return frozenset(self._shutting_down)

    def _reconcile_sync(self) -> bool:
        """One pass over the cluster; returns True if a conflicting write needs another."""
        if self.epoch is None:
            return False
        client = self.session.client
        watch = self._work_watch
        live = self._live_brokers(client)
        shutting_down = self._current_shutting_down(client, live)
        deleting = set(client.get_children(znodes.DELETE_TOPICS, watch=watch))
        requested, requested_version = self._read_reassign_requests(client)
        retry = self._consume_isr_change_notifications(client)
        for topic in sorted(deleting):
            retry |= self._delete_topic(client, topic)
        topics: dict[str, TopicZnode] = {}
        for name in sorted(client.get_children(znodes.BROKER_TOPICS, watch=watch)):
            if name in deleting:
                continue
            topic = read_topic_znode(client, name, watch)
            if topic is None:
                continue
            topics[name] = topic
            if topic.topic_id is None:  # written by a pre-2.8 tool: give the topic an id
                retry |= not self._set_fenced(
                    znodes.topic_path(name), topic.encode(topic.assignment), topic.version
                )
                continue
            wanted = {p: t for (n, p), t in requested.items() if n == name}
            retry |= self._reconcile_topic(client, topic, live, shutting_down, wanted)
        if requested_version >= 0:
            retry |= self._prune_reassign_requests(requested, requested_version, topics, live)
        retry |= self._run_preferred_election_request(client)
        return retry

    def _reconcile_topic(
        self,
        client: KazooClient,
        topic: TopicZnode,
        live: Set[int],
        shutting_down: Set[int],
        requested: Mapping[int, Sequence[int]],
    ) -> bool:
        starts: dict[int, Sequence[int] | None] = {}
        for partition, target in requested.items():
            moving = topic.assignment.get(partition)
            if moving is None or tuple(target) == moving.target:
                continue
            try:
                validate_target(target, live)
            except KafkaError:
                continue  # pruned from the request znode; the error is logged there
            starts[partition] = target
        if starts:
            self._start_reassignments(client, topic, starts, live)
            return True  # re-read the rewritten topic next pass
        retry = False
        completions: dict[int, tuple[LeaderAndIsr, int]] = {}
        electable = live - shutting_down
        for partition, assigned in sorted(topic.assignment.items()):
            path = znodes.partition_state_path(topic.name, partition)
            try:
                # Watch the partitions being moved: their ISR growing is what we wait for.
                data, stat = client.get(
                    path, watch=self._work_watch if assigned.is_reassigning else None
                )
            except NoNodeError:
                initial = initial_leader_and_isr(assigned.replicas, electable)
                if initial is not None:
                    retry |= self._create_state(client, topic.name, partition, initial)
                continue
            current = znodes.decode_partition_state(data, assigned.replicas, stat.version)
            unclean = self.unclean_leader_election
            if current.leader not in live and not any(r in live for r in current.isr):
                unclean = self._topic_unclean(client, topic.name)
            decided = decide(current, live, shutting_down, unclean=unclean)
            if decided is not None:
                if not self._set_fenced(path, self._encode_state(decided), stat.version):
                    retry = True  # someone (a leader's ISR update) wrote first: re-read
                else:
                    self._log_change(topic.name, partition, decided)
                    retry |= assigned.is_reassigning
                continue
            if assigned.is_reassigning:
                done = reassignment_complete_leader_and_isr(current, assigned.target, electable)
                if done is not None:
                    completions[partition] = (done, stat.version)
        if completions:
            assignment = {
                p: (a.completed() if p in completions else a) for p, a in topic.assignment.items()
            }
            if self._write_topic_and_states(topic, assignment, completions):
                log.info(
                    "controller %d: reassignment of %s partitions %s completed",
                    self.broker_id,
                    topic.name,
                    sorted(completions),
                )
            else:
                retry = True
        return retry

    def _create_state(
        self, client: KazooClient, topic: str, partition: int, decided: LeaderAndIsr
    ) -> bool:
        parents = [znodes.partitions_path(topic), f"{znodes.partitions_path(topic)}/{partition}"]
        missing = [p for p in parents if client.exists(p) is None]
        encoded = self._encode_state(decided)

        def build(txn: TransactionRequest) -> None:
            for parent in missing:
                txn.create(parent, b"")
            txn.create(znodes.partition_state_path(topic, partition), encoded)

        results = self._fenced(build)
        if any(isinstance(r, Exception) for r in results):
            return True
        self._log_change(topic, partition, decided)
        return False

    def _encode_state(self, decided: LeaderAndIsr) -> bytes:
        assert self.epoch is not None
        return znodes.encode_partition_state(
            decided.leader, decided.leader_epoch, decided.isr, self.epoch
        )

    def _topic_unclean(self, client: KazooClient, topic: str) -> bool:
        try:
            data, _ = client.get(znodes.topic_config_path(topic))
        except NoNodeError:
            return self.unclean_leader_election
        value = znodes.decode_entity_config(data).get(UNCLEAN_CONFIG)
        return self.unclean_leader_election if value is None else value.lower() == "true"

    def _log_change(self, topic: str, partition: int, decided: LeaderAndIsr) -> None:
        log.info(
            "controller %d: %s-%d leader=%d leader_epoch=%d isr=%s",
            self.broker_id,
            topic,
            partition,
            decided.leader,
            decided.leader_epoch,
            list(decided.isr),
        )

    def _consume_isr_change_notifications(self, client: KazooClient) -> bool:
        """Delete leaders' ISR change notifications (this pass re-reads every state), then
        re-arm the watch; True if more arrived meanwhile."""
        path = znodes.ISR_CHANGE_NOTIFICATION
        for child in client.get_children(path):
            with contextlib.suppress(NoNodeError):
                client.delete(f"{path}/{child}")
        return bool(client.get_children(path, watch=self._work_watch))

    def _read_reassign_requests(
        self, client: KazooClient
    ) -> tuple[dict[tuple[str, int], tuple[int, ...]], int]:
        """``/admin/reassign_partitions`` as ``({(topic, p): target}, version)``; version -1
        when absent (an exists-watch then waits for its creation)."""
        while True:
            try:
                data, stat = client.get(znodes.REASSIGN_PARTITIONS, watch=self._work_watch)
            except NoNodeError:
                if client.exists(znodes.REASSIGN_PARTITIONS, watch=self._work_watch) is None:
                    return {}, -1
                continue
            try:
                return znodes.decode_reassignment(data), stat.version
            except (ValueError, KeyError, TypeError):
                log.error("ignoring unparseable %s: %r", znodes.REASSIGN_PARTITIONS, data)
                return {}, stat.version

    def _prune_reassign_requests(
        self,
        requested: Mapping[tuple[str, int], tuple[int, ...]],
        version: int,
        topics: Mapping[str, TopicZnode],
        live: Set[int],
    ) -> bool:
        """Drop finished, unknown and invalid entries; delete the znode once it is empty."""
        keep: dict[tuple[str, int], tuple[int, ...]] = {}
        for (name, partition), target in requested.items():
            topic = topics.get(name)
            current = topic.assignment.get(partition) if topic else None
            if current is None:
                log.error("reassignment of unknown partition %s-%d dropped", name, partition)
                continue
            try:
                validate_target(target, live)
            except KafkaError as exc:
                log.error("reassignment of %s-%d dropped: %s", name, partition, exc)
                continue
            if not current.is_reassigning and current.replicas == tuple(target):
                continue  # done
            keep[(name, partition)] = target
        if keep == dict(requested):
            return False
        path = znodes.REASSIGN_PARTITIONS
        if keep:
            return not self._set_fenced(path, znodes.encode_reassignment(keep), version)
        results = self._fenced(lambda txn: txn.delete(path, version=version))
        if isinstance(results[0], Exception):
            return True
        log.info("controller %d: all requested reassignments done", self.broker_id)
        return False

    def _run_preferred_election_request(self, client: KazooClient) -> bool:
        """Kafka's ZK-mode ``kafka-preferred-replica-election``: elect, then delete the znode."""
        path = znodes.PREFERRED_REPLICA_ELECTION
        try:
            data, stat = client.get(path, watch=self._work_watch)
        except NoNodeError:
            client.exists(path, watch=self._work_watch)
            return False
        try:
            wanted = [TopicPartition(t, p) for t, p in znodes.decode_partition_list(data)]
        except (ValueError, KeyError, TypeError):
            wanted = []
        self._elect_partitions_sync(wanted, unclean=False)
        results = self._fenced(lambda txn: txn.delete(path, version=stat.version))
        return isinstance(results[0], Exception)

    def _delete_topic(self, client: KazooClient, topic: str) -> bool:
        """Remove every znode of ``topic`` and its deletion marker in one fenced transaction."""
        paths: list[str] = []

        def collect(path: str) -> None:
            try:
                children = client.get_children(path)
            except NoNodeError:
                return
            for child in children:
                collect(f"{path}/{child}")
            paths.append(path)  # children first: ZooKeeper deletes only leaves

        collect(znodes.topic_path(topic))
        config_path = znodes.topic_config_path(topic)
        if client.exists(config_path) is not None:
            paths.append(config_path)
        paths.append(znodes.delete_topic_path(topic))

        def build(txn: TransactionRequest) -> None:
            for path in paths:
                txn.delete(path)

        results = self._fenced(build)
        if any(isinstance(r, Exception) for r in results):
            return True  # changed while collecting: try again next pass
        log.info("controller %d: deleted topic %s", self.broker_id, topic)
        return False
