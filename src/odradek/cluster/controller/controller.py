"""The controller: one broker, elected through ZooKeeper, that owns partition leadership.

This class is the event loop around the duties; it holds no rules. Events (ZooKeeper
watches, session changes, requests from the API handlers, failed brokers reported by the
connection probes) set flags and wake one task, which runs the matching duty under the
context's lock in a worker thread:

==========================  ===========================================================
:mod:`.context`             the lock, the controller epoch, fenced conditional writes,
                            which brokers are live / shutting down / failed
:mod:`.candidacy`           winning, resigning, deposing a dead controller
:mod:`.reconcile`           the pass that brings every partition state in line
:mod:`.leader_election`     ElectLeaders (preferred, unclean)
:mod:`.rebalance`           preferred-leader rebalance (automatic, znode request)
:mod:`.reassignments`       AlterPartitionReassignments, ``/admin/reassign_partitions``
:mod:`.deletion`            topic deletion
:mod:`.shutdown`            ControlledShutdown
:mod:`.broker_failure`      a broker whose connections are refused: failed at once
==========================  ===========================================================

While active, the controller holds a connection to every other registered broker
(:class:`~odradek.cluster.liveness.ConnectionProbes`, when
``controller.fast.failover.enable``), so a killed broker's leaderships move within
milliseconds of its death instead of after its ZooKeeper session expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from kazoo.exceptions import ConnectionLoss, KazooException, SessionExpiredError
from kazoo.protocol.states import WatchedEvent

from odradek.clock import monotonic_s
from odradek.cluster.controller import (
    broker_failure,
    candidacy,
    leader_election,
    reassignments,
    rebalance,
    reconcile,
    shutdown,
)
from odradek.cluster.controller.context import ControllerContext, Liveness
from odradek.cluster.controller.errors import ControllerMoved, NotController
from odradek.cluster.liveness import ConnectionProbes, ProbeTarget
from odradek.cluster.model import TopicPartition
from odradek.cluster.reassignment import ReplicaAssignment
from odradek.cluster.zk import SessionEvent, ZkSession
from odradek.config_sections import ControllerConfig
from odradek.protocol.errors import KafkaError

__all__ = ["Controller", "PartitionResults"]

log = logging.getLogger(__name__)

T = TypeVar("T")
PartitionResults = dict[TopicPartition, KafkaError | None]

_SETTLE_S = 0.5  # how long a new controller waits for its probes' first verdicts


class _Wake(asyncio.Event):
    """The loop's wake-up flag, remembering when it was first raised: how long work waited
    before the loop took it (Kafka's controller event queue time)."""

    def __init__(self) -> None:
        super().__init__()
        self.raised_at = 0.0

    def set(self) -> None:
        if not self.is_set():
            self.raised_at = monotonic_s()
        super().set()


class Controller:
    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        settings: ControllerConfig,
    ) -> None:
        self.session = session
        self.broker_id = broker_id
        # One watch function per purpose: kazoo keeps watchers in sets, so re-arming with
        # the same function object never stacks duplicates.
        self._controller_watch = session.watcher(self._on_controller_znode)
        self.context = ControllerContext(
            session, broker_id, settings, session.watcher(self._on_work_znode)
        )
        self._probes = (
            ConnectionProbes(self._on_broker_dead) if settings.fast_failover_enable else None
        )
        self._failed_reports: dict[int, int] = {}
        self._need_election = True
        self._need_reconcile = False
        self._wake = _Wake()
        # Told how long raised work waited for the loop (the event queue time metric).
        self.on_event_taken: Callable[[float], None] | None = None
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._rebalance_task: asyncio.Task[None] | None = None
        self._changed: list[Callable[[], None]] = []
        session.add_listener(self._on_session_event)

    @property
    def is_active(self) -> bool:
        return self.context.is_active

    @property
    def epoch(self) -> int | None:
        return self.context.epoch

    def reconfigure(self, settings: ControllerConfig) -> None:
        """A new ``controller`` section (dynamic broker configs). A changed
        ``unclean.leader.election.enable`` applies at once: offline partitions are looked at
        again with the new rule. The rebalance interval applies from the next period;
        whether the rebalance task and the connection probes run stays as started."""
        previous = self.context.settings
        self.context.settings = settings
        if settings.unclean_leader_election_enable != previous.unclean_leader_election_enable:
            self._need_reconcile = True
            self._wake.set()

    def pending_events(self) -> int:
        """Work the controller loop has not started yet: an election, a reconcile pass, and
        each failed broker reported (its event queue, in Kafka's terms)."""
        return (int(self._need_election) + int(self._need_reconcile)
                + len(self._failed_reports))

    def add_listener(self, callback: Callable[[], None]) -> None:
        """``callback()`` runs on the loop whenever this broker gains or loses the role."""
        self._changed.append(callback)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"controller-{self.broker_id}")
        if self.context.settings.auto_leader_rebalance_enable:
            self._rebalance_task = asyncio.create_task(
                self._rebalance_loop(), name=f"leader-rebalance-{self.broker_id}"
            )
        self._wake.set()

    async def stop(self) -> None:
        """Stop taking part; an active controller resigns (deletes ``/controller``) so the
        others elect a successor at once instead of after our session closes. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._wake.set()
        for task in (self._task, self._rebalance_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._probes is not None:
            await self._probes.close()
        if self.is_active:
            with contextlib.suppress(KazooException, Exception):
                await asyncio.wait_for(self.session.call(candidacy.resign, self.context), 5)
        self._set_epoch(None)

    # -- requests (on the loop; each runs under the lock in a worker thread) ---------------

    async def elect_leaders(
        self, partitions: Collection[TopicPartition] | None, *, unclean: bool = False
    ) -> PartitionResults:
        """ElectLeaders: preferred (default) or unclean; ``None`` means every partition."""
        wanted = None if partitions is None else list(partitions)
        return await self._as_controller(leader_election.elect_partitions, wanted, unclean)

    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> PartitionResults:
        """Start (target list) or cancel (``None``) reassignments."""
        return await self._as_controller(reassignments.alter_reassignments, dict(targets))

    async def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """Ongoing reassignments (of ``partitions``, or all)."""
        wanted = None if partitions is None else set(partitions)
        return await self._as_controller(reassignments.list_reassignments, wanted)

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        """Move ``broker_id``'s leaderships away and drop it from ISRs; returns the partitions
        it still leads (their only in-sync replica is the broker itself)."""
        return await self._as_controller(shutdown.controlled_shutdown, broker_id, broker_epoch)

    async def _as_controller(self, duty: Callable[..., T], *args: Any) -> T:
        if not self.is_active:
            raise NotController(f"broker {self.broker_id} is not the controller")
        async with self.context.lock:
            if not self.is_active:
                raise NotController(f"broker {self.broker_id} is not the controller")
            try:
                return await self.session.call(duty, self.context, *args)
            except ControllerMoved:
                self._need_election = True
                self._wake.set()
                raise NotController(f"broker {self.broker_id} lost the controller role") from None

    # -- events (all on the loop) ------------------------------------------------------------

    def _on_controller_znode(self, event: WatchedEvent) -> None:
        self._need_election = True
        self._wake.set()

    def _on_work_znode(self, event: WatchedEvent) -> None:
        self._need_reconcile = True
        self._wake.set()

    def _on_broker_dead(self, target: ProbeTarget) -> None:
        if self.is_active:
            self._failed_reports[target.broker_id] = target.epoch
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
        changed = (epoch is None) != (self.context.epoch is None)
        self.context.epoch = epoch
        if changed:
            if epoch is None:
                self.context.forget_brokers()
                self._failed_reports.clear()
                if self._probes is not None:
                    self._probes.update(())
            for callback in list(self._changed):
                try:
                    callback()
                except Exception:
                    log.exception("controller listener failed")

    # -- the loop ------------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopped:
            await self._wake.wait()
            self._wake.clear()
            if self.on_event_taken is not None:
                self.on_event_taken(monotonic_s() - self._wake.raised_at)
            try:
                if self._need_election:
                    self._need_election = False
                    await self._elect()
                if self.is_active and (self._need_reconcile or self._failed_reports):
                    self._need_reconcile = False
                    await self._reconcile()
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

    async def _elect(self) -> None:
        was_active = self.is_active
        result = await self.session.call(candidacy.elect, self.context, self._controller_watch)
        if result is None:
            if was_active:
                log.warning("controller %d lost the controller role", self.broker_id)
            self._set_epoch(None)
            return
        epoch, version = result
        self.context.epoch_zk_version = version
        self._set_epoch(epoch)
        if not was_active:
            log.info("broker %d is now controller (epoch %d)", self.broker_id, epoch)
            self._need_reconcile = True
            if self._probes is not None:
                # Ask every broker first, so the first pass already knows who is gone
                # (a dead broker's registration outlives it by a session timeout).
                brokers = await self.session.call(self.context.read_liveness, False)
                self._follow(brokers)
                await self._probes.settled(_SETTLE_S)

    async def _reconcile(self) -> None:
        async with self.context.lock:
            reports, self._failed_reports = self._failed_reports, {}
            try:
                outcome = await self.session.call(self._fail_and_reconcile, reports)
            except BaseException:
                for broker_id, epoch in reports.items():  # not handled: keep for the retry
                    self._failed_reports.setdefault(broker_id, epoch)
                raise
        if outcome.brokers is not None:
            self._follow(outcome.brokers)
        if outcome.again:
            self._need_reconcile = True
            self._wake.set()

    def _fail_and_reconcile(self, reports: Mapping[int, int]) -> reconcile.PassResult:
        if reports:
            broker_failure.fail_brokers(self.context, reports)
        return reconcile.run_pass(self.context)

    def _follow(self, brokers: Liveness) -> None:
        """Probe every other registered broker not already known failed."""
        if self._probes is None or not self.is_active:
            return
        targets = []
        for broker_id, registration in brokers.registrations.items():
            info = registration.info
            if broker_id == self.broker_id or broker_id in brokers.failed or info is None:
                continue
            targets.append(ProbeTarget(broker_id, registration.epoch, info.host, info.port))
        self._probes.update(targets)

    async def _rebalance_loop(self) -> None:
        """Kafka's auto leader rebalance task: a periodic check, not a synchronisation."""
        while not self._stopped:
            await asyncio.sleep(self.context.settings.leader_imbalance_check_interval_s)
            if not self.is_active:
                continue
            try:
                async with self.context.lock:
                    await self.session.call(rebalance.auto_rebalance, self.context)
            except ControllerMoved:
                self._need_election = True
                self._wake.set()
            except KazooException as exc:
                log.warning("controller %d: leader rebalance failed: %s", self.broker_id, exc)
