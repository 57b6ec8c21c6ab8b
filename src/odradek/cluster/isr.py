"""ISR updates written by a partition leader (Kafka's ZK mode, ``Partition.updateIsr``).

The leader alone decides when a follower joins or leaves the ISR, but the controller
decides leadership, and both write ``/brokers/topics/<t>/partitions/<p>/state``. They never
overwrite each other because every write is *conditional on the znode version* the writer
last saw:

* the leader writes ``{leader, leader_epoch, isr, controller_epoch}`` with its own leader
  epoch and the controller epoch it was given, at ``version = zk_version``;
* if the controller changed the state meanwhile (new leader, ISR shrunk for a dead broker,
  both bump the version) the write fails with BadVersion, and the leader must **not** apply
  the ISR change locally — it re-reads the state instead (:attr:`IsrWriteResult.current`)
  and waits for the cluster view to tell it its new role;
* a leader cut off from ZooKeeper cannot write at all (ConnectionLoss, SessionExpired),
  so it can never shrink the ISR to itself and acknowledge acks=all writes alone.

A successful change also creates a sequential ``/isr_change_notification/isr_change_``
znode in the same transaction, so tools that follow Kafka's layout (and a controller that
propagates ISR changes) see it. The transaction makes "state changed" and "notified" one
atomic step.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from kazoo.exceptions import BadVersionError, KazooException, NoNodeError

from odradek.cluster import znodes
from odradek.cluster.model import PartitionRegistration
from odradek.cluster.zk import ZkSession

__all__ = ["IsrWriteResult", "IsrWriter"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IsrWriteResult:
    """``ok``: the new ISR is in ZooKeeper at ``zk_version``. Otherwise ``current`` is the
    state found there (None when it could not be read: no session, or the znode is gone)."""

    ok: bool
    zk_version: int = -1
    current: PartitionRegistration | None = None


class IsrWriter:
    """Conditional ISR writes for the partitions this broker leads."""

    def __init__(self, session: ZkSession) -> None:
        self.session = session

    async def write_isr(
        self,
        topic: str,
        partition: int,
        *,
        leader: int,
        leader_epoch: int,
        isr: Sequence[int],
        controller_epoch: int,
        zk_version: int,
        replicas: Sequence[int],
    ) -> IsrWriteResult:
        """Replace the ISR if the state znode is still at ``zk_version``."""
        try:
            return await self.session.call(
                self._write_sync, topic, partition, leader, leader_epoch, tuple(isr),
                controller_epoch, zk_version, tuple(replicas),
            )
        except KazooException as exc:
            # No session, connection lost mid-write: the outcome is unknown, so nothing is
            # applied locally; the cluster view re-reads the state once connected again.
            log.warning("ISR update of %s-%d failed: %r", topic, partition, exc)
            return IsrWriteResult(False)

    def _write_sync(
        self,
        topic: str,
        partition: int,
        leader: int,
        leader_epoch: int,
        isr: tuple[int, ...],
        controller_epoch: int,
        zk_version: int,
        replicas: tuple[int, ...],
    ) -> IsrWriteResult:
        client = self.session.client
        path = znodes.partition_state_path(topic, partition)
        data = znodes.encode_partition_state(leader, leader_epoch, isr, controller_epoch)
        txn = client.transaction()
        txn.set_data(path, data, version=zk_version)
        txn.create(
            f"{znodes.ISR_CHANGE_NOTIFICATION}/{znodes.ISR_CHANGE_PREFIX}",
            znodes.encode_isr_change_notification([(topic, partition)]),
            sequence=True,
        )
        results = txn.commit()
        first = results[0]
        if not any(isinstance(result, Exception) for result in results):
            return IsrWriteResult(True, first.version)
        if not isinstance(first, (BadVersionError, NoNodeError)):
            log.warning("ISR update of %s-%d rolled back: %r", topic, partition, results)
        try:
            current, stat = client.get(path)
        except NoNodeError:
            return IsrWriteResult(False)
        return IsrWriteResult(
            False, stat.version, znodes.decode_partition_state(current, replicas, stat.version)
        )
