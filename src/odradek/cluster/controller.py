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
znodes directly. Extension points for the next issue, deliberately not faked here:
``/admin/reassign_partitions`` (reassignment), ``/isr_change_notification`` (leaders'
ISR updates — state writes here already tolerate concurrent writers via znode versions),
preferred-leader election and controlled shutdown (add rules to ``election`` and a trigger
here). Topic deletion removes the znodes at once; brokers delete logs when the topic
leaves their view (Kafka waits for StopReplica acknowledgements first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

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
from odradek.cluster.election import LeaderAndIsr, initial_leader_and_isr, next_leader_and_isr
from odradek.cluster.zk import SessionEvent, ZkSession

log = logging.getLogger(__name__)

UNCLEAN_CONFIG = "unclean.leader.election.enable"


class ControllerMoved(Exception):
    """Another broker became controller; this one's writes are fenced off."""


class Controller:
    def __init__(
        self, session: ZkSession, broker_id: int, *, unclean_leader_election: bool = False
    ) -> None:
        self.session = session
        self.broker_id = broker_id
        self.unclean_leader_election = unclean_leader_election
        self.epoch: int | None = None
        self._epoch_zk_version = -1
        self._need_election = True
        self._need_reconcile = False
        self._wake = asyncio.Event()
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._changed: list[Callable[[], None]] = []
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
        self._wake.set()

    async def stop(self) -> None:
        self._stopped = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._set_epoch(None)

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
                    if await self.session.call(self._reconcile_sync):
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

    # -- reconcile ---------------------------------------------------------------------------

    def _reconcile_sync(self) -> bool:
        """One pass over the cluster; returns True if a conflicting write needs another."""
        if self.epoch is None:
            return False
        client = self.session.client
        watch = self._work_watch
        live = {int(b) for b in client.get_children(znodes.BROKER_IDS, watch=watch)}
        deleting = set(client.get_children(znodes.DELETE_TOPICS, watch=watch))
        retry = False
        for topic in sorted(deleting):
            retry |= self._delete_topic(client, topic)
        for topic in sorted(client.get_children(znodes.BROKER_TOPICS, watch=watch)):
            if topic in deleting:
                continue
            try:
                data, stat = client.get(znodes.topic_path(topic), watch=watch)
            except NoNodeError:
                continue
            topic_id, assignment = znodes.decode_topic_assignment(data)
            if topic_id is None:  # written by a pre-2.8 tool: give the topic an id
                encoded = znodes.encode_topic_assignment(znodes.random_kafka_uuid(), assignment)
                retry |= not self._set_fenced(znodes.topic_path(topic), encoded, stat.version)
            for partition, replicas in sorted(assignment.items()):
                retry |= self._reconcile_partition(client, topic, partition, replicas, live)
        return retry

    def _reconcile_partition(
        self,
        client: KazooClient,
        topic: str,
        partition: int,
        replicas: Sequence[int],
        live: set[int],
    ) -> bool:
        path = znodes.partition_state_path(topic, partition)
        try:
            data, stat = client.get(path)
        except NoNodeError:
            initial = initial_leader_and_isr(replicas, live)
            if initial is None:
                return False
            return self._create_state(client, topic, partition, initial)
        current = znodes.decode_partition_state(data, replicas, stat.version)
        unclean = self.unclean_leader_election
        if current.leader not in live and not any(r in live for r in current.isr):
            unclean = self._topic_unclean(client, topic)
        decided = next_leader_and_isr(current, live, unclean=unclean)
        if decided is None:
            return False
        encoded = self._encode_state(decided)
        if not self._set_fenced(path, encoded, stat.version):
            return True  # someone (a leader's ISR update) wrote first: re-read next pass
        self._log_change(topic, partition, decided)
        return False

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
