"""What the controller does when asked: ElectLeaders, AlterPartitionReassignments,
ListPartitionReassignments and ControlledShutdown (Kafka routes them all to the controller;
any other broker answers NOT_CONTROLLER and the client retries there), plus the periodic
preferred-leader rebalance.

Each request runs in a worker thread under the controller's lock, so it never interleaves
with a reconcile pass; every write is fenced by the controller epoch and conditional on the
znode version it read (a conflict re-reads and retries a few times).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any, TypeVar

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import NoNodeError

from odradek.cluster import znodes
from odradek.cluster.controller_errors import (
    ControllerMoved,
    ElectionNotNeeded,
    EligibleLeadersNotAvailable,
    NoReassignmentInProgress,
    NotController,
    PreferredLeaderNotAvailable,
    StaleBrokerEpoch,
)
from odradek.cluster.election import (
    LeaderAndIsr,
    preferred_leader_and_isr,
    unclean_leader_and_isr,
)
from odradek.cluster.model import NO_LEADER, PartitionState, TopicPartition
from odradek.cluster.preferred import partitions_to_rebalance
from odradek.cluster.reassignment import ReplicaAssignment, validate_target
from odradek.cluster.topic_znode import TopicZnode, read_topic_znode
from odradek.protocol.errors import (
    BrokerNotAvailable,
    InvalidReplicaAssignment,
    KafkaError,
    UnknownServerError,
    UnknownTopicOrPartition,
)

if TYPE_CHECKING:
    from odradek.cluster.zk import ZkSession

__all__ = ["ControllerRequests", "PartitionResults"]

log = logging.getLogger(__name__)

T = TypeVar("T")
PartitionResults = dict[TopicPartition, KafkaError | None]
_ATTEMPTS = 5  # re-reads after a conflicting write before giving up on one partition


class ControllerRequests:
    """Mixin of :class:`~odradek.cluster.controller.Controller`: the request side."""

    if TYPE_CHECKING:
        session: ZkSession
        broker_id: int
        epoch: int | None
        leader_imbalance_percentage: int
        _lock: asyncio.Lock
        _shutting_down: dict[int, int]
        _need_election: bool
        _wake: asyncio.Event

        @property
        def is_active(self) -> bool: ...
        def _fenced(self, build: Callable[[TransactionRequest], None]) -> list[object]: ...
        def _set_fenced(self, path: str, data: bytes, version: int) -> bool: ...
        def _write_topic_and_states(
            self,
            topic: TopicZnode,
            assignment: Mapping[int, ReplicaAssignment],
            states: Mapping[int, tuple[LeaderAndIsr, int]],
        ) -> bool: ...
        def _encode_state(self, decided: LeaderAndIsr) -> bytes: ...
        def _log_change(self, topic: str, partition: int, decided: LeaderAndIsr) -> None: ...
        def _live_brokers(self, client: KazooClient, watch: bool = True) -> set[int]: ...
        def _current_shutting_down(self, client: KazooClient, live: Set[int]) -> frozenset[int]: ...
        def _reconcile_sync(self) -> bool: ...

    async def _as_controller(self, fn: Callable[..., T], *args: Any) -> T:
        if not self.is_active:
            raise NotController(f"broker {self.broker_id} is not the controller")
        async with self._lock:
            if not self.is_active:
                raise NotController(f"broker {self.broker_id} is not the controller")
            try:
                return await self.session.call(fn, *args)
            except ControllerMoved:
                self._need_election = True
                self._wake.set()
                raise NotController(f"broker {self.broker_id} lost the controller role") from None

    # -- public requests (on the loop) ---------------------------------------------------------

    async def elect_leaders(
        self, partitions: Collection[TopicPartition] | None, *, unclean: bool = False
    ) -> PartitionResults:
        """ElectLeaders: preferred (default) or unclean; ``None`` means every partition."""
        wanted = None if partitions is None else list(partitions)
        return await self._as_controller(self._elect_partitions_sync, wanted, unclean)

    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> PartitionResults:
        """Start (target list) or cancel (``None``) reassignments."""
        return await self._as_controller(self._alter_reassignments_sync, dict(targets))

    async def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """Ongoing reassignments (of ``partitions``, or all)."""
        wanted = None if partitions is None else set(partitions)
        return await self._as_controller(self._list_reassignments_sync, wanted)

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        """Move ``broker_id``'s leaderships away and drop it from ISRs; returns the partitions
        it still leads (their only in-sync replica is the broker itself)."""
        return await self._as_controller(self._controlled_shutdown_sync, broker_id, broker_epoch)

    # -- leader elections ----------------------------------------------------------------------

    def _all_partitions(self, client: KazooClient) -> list[TopicPartition]:
        deleting = set(client.get_children(znodes.DELETE_TOPICS))
        found: list[TopicPartition] = []
        for name in sorted(client.get_children(znodes.BROKER_TOPICS)):
            topic = None if name in deleting else read_topic_znode(client, name)
            if topic is not None:
                found.extend(TopicPartition(name, p) for p in sorted(topic.assignment))
        return found

    def _elect_partitions_sync(
        self, partitions: list[TopicPartition] | None, unclean: bool
    ) -> PartitionResults:
        client = self.session.client
        live = self._live_brokers(client, watch=False)
        shutting_down = self._current_shutting_down(client, live)
        if partitions is None:
            partitions = self._all_partitions(client)
        results: PartitionResults = {}
        for tp in partitions:
            results[tp] = self._elect_one(client, tp, live, shutting_down, unclean)
        return results

    def _elect_one(
        self,
        client: KazooClient,
        tp: TopicPartition,
        live: Set[int],
        shutting_down: Set[int],
        unclean: bool,
    ) -> KafkaError | None:
        for _ in range(_ATTEMPTS):
            read = _read_state(client, tp)
            if read is None:
                return UnknownTopicOrPartition(f"The partition {tp} does not exist.")
            current, _topic = read
            if current.zk_version < 0:
                return EligibleLeadersNotAvailable(f"{tp} has no leader state yet")
            decided: LeaderAndIsr | None
            if unclean:
                if current.leader in live:
                    return ElectionNotNeeded(f"Leader election not needed for topic partition {tp}")
                decided = unclean_leader_and_isr(current, live, shutting_down)
                if decided is None or decided.leader == NO_LEADER:
                    return EligibleLeadersNotAvailable(f"No live replica can lead {tp}")
            else:
                if current.replicas and current.leader == current.replicas[0]:
                    return ElectionNotNeeded(f"Leader election not needed for topic partition {tp}")
                decided = preferred_leader_and_isr(current, live, shutting_down)
                if decided is None:
                    return PreferredLeaderNotAvailable(
                        f"Failed to elect leader for partition {tp} under strategy "
                        "PreferredReplicaPartitionLeaderElectionStrategy"
                    )
            path = znodes.partition_state_path(tp.topic, tp.partition)
            if self._set_fenced(path, self._encode_state(decided), current.zk_version):
                self._log_change(tp.topic, tp.partition, decided)
                return None
        return UnknownServerError(f"{tp} kept changing during the election; retry")

    def _auto_rebalance_sync(self) -> None:
        client = self.session.client
        if client.exists(znodes.REASSIGN_PARTITIONS) is not None:
            return
        live = self._live_brokers(client, watch=False)
        shutting_down = self._current_shutting_down(client, live)
        states: dict[TopicPartition, PartitionState] = {}
        for tp in self._all_partitions(client):
            read = _read_state(client, tp)
            if read is None:
                continue
            state, assigned = read
            if assigned.is_reassigning:
                return  # the reassignment decides leadership; check again next period
            if state.zk_version >= 0:
                states[tp] = state
        chosen = partitions_to_rebalance(
            states, live, self.leader_imbalance_percentage, shutting_down
        )
        if chosen:
            log.info(
                "controller %d: preferred leader rebalance of %s",
                self.broker_id,
                [str(tp) for tp in chosen],
            )
            self._elect_partitions_sync(chosen, unclean=False)

    # -- reassignments -------------------------------------------------------------------------

    def _start_reassignments(
        self,
        client: KazooClient,
        topic: TopicZnode,
        targets: Mapping[int, Sequence[int] | None],
        live: Set[int],
    ) -> tuple[dict[int, KafkaError | None], bool]:
        """Begin (or cancel) reassignments of ``topic``'s partitions in one transaction.

        Returns per-partition errors and whether the write went through (False: the topic
        or a state changed since it was read; re-read and call again).
        """
        errors: dict[int, KafkaError | None] = {}
        assignment = dict(topic.assignment)
        states: dict[int, tuple[LeaderAndIsr, int]] = {}
        for partition, target in sorted(targets.items()):
            current = topic.assignment.get(partition)
            if current is None:
                errors[partition] = UnknownTopicOrPartition(
                    f"Unable to find partition {topic.name}-{partition}"
                )
                continue
            try:
                if target is None:
                    if not current.is_reassigning:
                        raise NoReassignmentInProgress(
                            f"No ongoing reassignment for {topic.name}-{partition}"
                        )
                    successor = current.cancelled()
                else:
                    successor = current.reassign_to(validate_target(target, live))
                errors[partition] = None
                if successor == current:
                    continue
                state = self._state_for_start(
                    client, topic.name, partition, current, successor, live
                )
            except KafkaError as exc:
                errors[partition] = exc
                continue
            if state is not None:
                states[partition] = state
            assignment[partition] = successor
        if assignment == dict(topic.assignment):
            return errors, True
        if not self._write_topic_and_states(topic, assignment, states):
            return errors, False
        for partition in sorted(p for p in targets if assignment[p] != topic.assignment.get(p)):
            moved = assignment[partition]
            log.info(
                "controller %d: reassigning %s-%d replicas=%s adding=%s removing=%s",
                self.broker_id,
                topic.name,
                partition,
                list(moved.replicas),
                list(moved.adding),
                list(moved.removing),
            )
        return errors, True

    def _state_for_start(
        self,
        client: KazooClient,
        topic: str,
        partition: int,
        current: ReplicaAssignment,
        successor: ReplicaAssignment,
        live: Set[int],
    ) -> tuple[LeaderAndIsr, int] | None:
        """The bumped state a starting reassignment writes: every replica re-reads the
        partition, and replicas of a superseded request leave the ISR (and leadership)."""
        try:
            data, stat = client.get(znodes.partition_state_path(topic, partition))
        except NoNodeError:
            return None  # not initialised yet: the reconcile pass creates it from RS
        state = znodes.decode_partition_state(data, current.replicas, stat.version)
        unneeded = current.unneeded_by(successor)
        isr = tuple(r for r in state.isr if r not in unneeded)
        leader = state.leader
        if leader in unneeded:
            order = (*successor.target, *successor.replicas)
            candidate = next((r for r in order if r in live and r in isr), None)
            if candidate is None:
                raise InvalidReplicaAssignment(
                    f"no replica of {topic}-{partition} left in sync to take over leadership"
                )
            leader = candidate
        return LeaderAndIsr(leader, state.leader_epoch + 1, isr), stat.version

    def _alter_reassignments_sync(
        self, targets: dict[TopicPartition, Sequence[int] | None]
    ) -> PartitionResults:
        client = self.session.client
        live = self._live_brokers(client, watch=False)
        by_topic: dict[str, dict[int, Sequence[int] | None]] = {}
        for tp, target in targets.items():
            by_topic.setdefault(tp.topic, {})[tp.partition] = target
        results: PartitionResults = {}
        for name, wanted in sorted(by_topic.items()):
            for _ in range(_ATTEMPTS):
                topic = read_topic_znode(client, name)
                if topic is None or client.exists(znodes.delete_topic_path(name)):
                    errors: dict[int, KafkaError | None] = {
                        p: UnknownTopicOrPartition(f"Unable to find partition {name}-{p}")
                        for p in wanted
                    }
                    break
                errors, written = self._start_reassignments(client, topic, wanted, live)
                if written:
                    break
            else:
                errors = {p: UnknownServerError("topic kept changing; retry") for p in wanted}
            results.update({TopicPartition(name, p): e for p, e in errors.items()})
        # An API request supersedes what the ZooKeeper request path asked for (as in Kafka).
        self._forget_reassign_requests(client, {tp for tp, e in results.items() if e is None})
        return results

    def _forget_reassign_requests(self, client: KazooClient, done: Set[TopicPartition]) -> None:
        path = znodes.REASSIGN_PARTITIONS
        for _ in range(_ATTEMPTS):
            try:
                data, stat = client.get(path)
            except NoNodeError:
                return
            requested = znodes.decode_reassignment(data)
            keep = {k: v for k, v in requested.items() if TopicPartition(*k) not in done}
            if keep == requested:
                return
            if keep:
                if self._set_fenced(path, znodes.encode_reassignment(keep), stat.version):
                    return
            else:
                version = stat.version

                def delete(txn: TransactionRequest, version: int = version) -> None:
                    txn.delete(path, version=version)

                if not isinstance(self._fenced(delete)[0], Exception):
                    return

    def _list_reassignments_sync(
        self, wanted: set[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        client = self.session.client
        names = (
            sorted({tp.topic for tp in wanted})
            if wanted is not None
            else sorted(client.get_children(znodes.BROKER_TOPICS))
        )
        found: dict[TopicPartition, ReplicaAssignment] = {}
        for name in names:
            topic = read_topic_znode(client, name)
            for partition, assigned in sorted((topic.assignment if topic else {}).items()):
                tp = TopicPartition(name, partition)
                if assigned.is_reassigning and (wanted is None or tp in wanted):
                    found[tp] = assigned
        return found

    # -- controlled shutdown -------------------------------------------------------------------

    def _controlled_shutdown_sync(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        client = self.session.client
        stat = client.exists(znodes.broker_path(broker_id))
        if stat is None:
            raise BrokerNotAvailable(f"broker {broker_id} is not registered")
        if broker_epoch >= 0 and stat.czxid != broker_epoch:
            raise StaleBrokerEpoch(
                f"broker {broker_id} epoch {broker_epoch} is stale (registered: {stat.czxid})"
            )
        if broker_id not in self._shutting_down:
            log.info("controller %d: controlled shutdown of broker %d", self.broker_id, broker_id)
        self._shutting_down[broker_id] = stat.czxid
        for _ in range(_ATTEMPTS * 2):
            if not self._reconcile_sync():
                break
        remaining: list[TopicPartition] = []
        for tp in self._all_partitions(client):
            read = _read_state(client, tp)
            if read is not None and read[0].leader == broker_id and len(read[0].replicas) > 1:
                remaining.append(tp)
        return remaining


def _read_state(
    client: KazooClient, tp: TopicPartition
) -> tuple[PartitionState, ReplicaAssignment] | None:
    """The partition's state (``zk_version`` -1 when not initialised) and replica lists, or
    None when the partition does not exist."""
    topic = read_topic_znode(client, tp.topic)
    assigned = topic.assignment.get(tp.partition) if topic else None
    if assigned is None:
        return None
    with contextlib.suppress(NoNodeError):
        data, stat = client.get(znodes.partition_state_path(tp.topic, tp.partition))
        return znodes.decode_partition_state(data, assigned.replicas, stat.version), assigned
    return PartitionState(NO_LEADER, -1, (), assigned.replicas, -1), assigned
