"""What every controller duty shares: the lock, the controller epoch, fenced writes, and
which brokers may lead.

**The epoch is the fencing token.** A controller wins ``/controller`` and, in the same
transaction, bumps ``/controller_epoch`` (:mod:`.candidacy`). Every later write is a
transaction whose first operation checks ``/controller_epoch`` still has the version this
controller wrote (:meth:`ControllerContext.fenced`), so a zombie controller (paused, its
session expired, a successor elected) can never overwrite its successor's decisions. On top
of that every state write is conditional on the znode version it read: a leader's ISR update
racing a controller decision makes one of them re-read, never overwrite.

**One lock.** Like Kafka's single-threaded controller event queue, every duty (the
reconcile pass, requests, failure handling) runs under :attr:`ControllerContext.lock`, in a
worker thread (kazoo calls block). Duties are plain functions of the context, one module
each; the context holds no rules, only the state they share.

**Who may lead** (:class:`Liveness`): a broker is *registered* while its ephemeral
``/brokers/ids/<id>`` exists. Two in-memory sets, each keyed by the registration's broker
epoch (its ``czxid``) so a *new* registration of the same id starts clean, take brokers out:

* ``shutting_down`` — asked for a controlled shutdown: not elected, dropped from ISRs, but
  still counted live (a partition it alone can lead stays with it until it stops);
* ``failed`` — its process is gone (:mod:`.broker_failure`): treated exactly as if its
  registration had vanished, until it really does and the broker registers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import BadVersionError, NoNodeError
from kazoo.protocol.states import WatchedEvent

from odradek.cluster import znodes
from odradek.cluster.controller.errors import ControllerMoved
from odradek.cluster.election import LeaderAndIsr
from odradek.cluster.model import NO_LEADER, BrokerInfo, PartitionRegistration, TopicPartition
from odradek.cluster.reassignment import ReplicaAssignment
from odradek.cluster.topic_znode import TopicZnode, read_topic_znode
from odradek.cluster.zk import ZkSession
from odradek.config_sections import ControllerConfig

__all__ = [
    "ATTEMPTS",
    "ControllerContext",
    "Liveness",
    "Registration",
    "all_partitions",
    "read_state",
]

log = logging.getLogger(__name__)

ATTEMPTS = 5
"""Re-reads after a conflicting write before a request gives up on one partition."""

Watch = Callable[[WatchedEvent], None]


@dataclass(frozen=True, slots=True)
class Registration:
    """One ``/brokers/ids/<id>`` as read: the broker epoch (``czxid``) and endpoints."""

    epoch: int
    info: BrokerInfo | None  # None: unparseable data (still a registration)


@dataclass(frozen=True, slots=True)
class Liveness:
    """The brokers one decision sees."""

    registrations: Mapping[int, Registration]
    shutting_down: frozenset[int]
    failed: frozenset[int]

    @property
    def live(self) -> frozenset[int]:
        """Registered and not failed: what the election rules call live."""
        return frozenset(self.registrations) - self.failed

    @property
    def electable(self) -> frozenset[int]:
        return self.live - self.shutting_down


class ControllerContext:
    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        settings: ControllerConfig,
        work_watch: Watch,
    ) -> None:
        self.session = session
        self.broker_id = broker_id
        self.settings = settings
        self.work_watch = work_watch
        self.lock = asyncio.Lock()
        self.epoch: int | None = None
        self.epoch_zk_version = -1
        # broker id -> broker epoch of the registration that asked / that failed.
        self.shutting_down: dict[int, int] = {}
        self.failed: dict[int, int] = {}
        # Told of each leader change written (the election-rate metrics), with
        # ``unclean=True`` when the new leader was outside the ISR. Called from the worker
        # thread running the pass, one pass at a time (under ``lock``).
        self.on_leader_change: Callable[..., None] | None = None

    @property
    def client(self) -> KazooClient:
        return self.session.client

    @property
    def is_active(self) -> bool:
        return self.epoch is not None

    def forget_brokers(self) -> None:
        """On losing the role: a successor rebuilds both sets from its own evidence."""
        self.shutting_down.clear()
        self.failed.clear()

    # -- fenced writes ---------------------------------------------------------------------

    def fenced(self, build: Callable[[TransactionRequest], None]) -> list[object]:
        """Commit ``build``'s operations only if we are still the current controller;
        returns their results (exceptions for failed conditions)."""
        txn = self.client.transaction()
        txn.check(znodes.CONTROLLER_EPOCH, self.epoch_zk_version)
        build(txn)
        results = txn.commit()
        if isinstance(results[0], (BadVersionError, NoNodeError)):
            raise ControllerMoved()
        return list(results[1:])

    def set_fenced(self, path: str, data: bytes, version: int) -> bool:
        """Fenced conditional set; False if the znode changed (or vanished) meanwhile."""
        results = self.fenced(lambda txn: txn.set_data(path, data, version=version))
        return not isinstance(results[0], Exception)

    def delete_fenced(self, path: str, version: int) -> bool:
        """Fenced conditional delete; False if the znode changed (or vanished) meanwhile."""
        results = self.fenced(lambda txn: txn.delete(path, version=version))
        return not isinstance(results[0], Exception)

    def write_topic_and_states(
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
                txn.set_data(path, self.encode_state(decided), version=version)

        results = self.fenced(build)
        if any(isinstance(r, Exception) for r in results):
            return False
        for partition, (decided, _) in sorted(states.items()):
            self.log_change(topic.name, partition, decided)
        return True

    def encode_state(self, decided: LeaderAndIsr) -> bytes:
        assert self.epoch is not None
        return znodes.encode_partition_state(
            decided.leader, decided.leader_epoch, decided.isr, self.epoch
        )

    def log_change(self, topic: str, partition: int, decided: LeaderAndIsr, *,
                   unclean: bool = False) -> None:
        if self.on_leader_change is not None:
            self.on_leader_change(unclean=unclean)
        log.log(
            logging.WARNING if unclean else logging.INFO,
            "controller %d: %s-%d %sleader=%d leader_epoch=%d isr=%s",
            self.broker_id,
            topic,
            partition,
            "UNCLEAN election (a replica outside the ISR leads; data may be lost) "
            if unclean else "",
            decided.leader,
            decided.leader_epoch,
            list(decided.isr),
        )

    # -- liveness ----------------------------------------------------------------------------

    def read_liveness(self, watch: bool = True) -> Liveness:
        """Read every registration (leaving the work watch on the directory) and drop
        shutting-down / failed marks whose registration is gone or was replaced."""
        client = self.client
        children = client.get_children(znodes.BROKER_IDS, watch=self.work_watch if watch else None)
        registrations: dict[int, Registration] = {}
        for child in children:
            broker_id = int(child)
            try:
                data, stat = client.get(znodes.broker_path(broker_id))
            except NoNodeError:
                continue  # gone meanwhile; its removal fired the watch
            try:
                info: BrokerInfo | None = znodes.decode_broker(broker_id, data)
            except (ValueError, KeyError, TypeError):
                info = None
            registrations[broker_id] = Registration(int(stat.czxid), info)
        for marks in (self.shutting_down, self.failed):
            for broker_id, epoch in list(marks.items()):
                current = registrations.get(broker_id)
                if current is None or current.epoch != epoch:
                    del marks[broker_id]
        return Liveness(registrations, frozenset(self.shutting_down), frozenset(self.failed))


def all_partitions(client: KazooClient) -> list[TopicPartition]:
    """Every partition of every topic not marked for deletion."""
    deleting = set(client.get_children(znodes.DELETE_TOPICS))
    found: list[TopicPartition] = []
    for name in sorted(client.get_children(znodes.BROKER_TOPICS)):
        topic = None if name in deleting else read_topic_znode(client, name)
        if topic is not None:
            found.extend(TopicPartition(name, p) for p in sorted(topic.assignment))
    return found


def read_state(
    client: KazooClient, tp: TopicPartition
) -> tuple[PartitionRegistration, ReplicaAssignment] | None:
    """The partition's state (``zk_version`` -1 when not initialised) and replica lists, or
    None when the partition does not exist."""
    topic = read_topic_znode(client, tp.topic)
    assigned = topic.assignment.get(tp.partition) if topic else None
    if assigned is None:
        return None
    with contextlib.suppress(NoNodeError):
        data, stat = client.get(znodes.partition_state_path(tp.topic, tp.partition))
        return znodes.decode_partition_state(data, assigned.replicas, stat.version), assigned
    return PartitionRegistration(NO_LEADER, -1, (), assigned.replicas, -1), assigned
