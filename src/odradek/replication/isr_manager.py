"""The leader's half of ISR management: expand on catch-up, shrink on lag (Kafka ZK mode).

* **Expand**: a follower not in the ISR whose fetch offset reached the high watermark and
  the current leader epoch's start offset joins (triggered from its Fetch).
* **Shrink**: every ``replica.lag.time.max.ms / 2`` each led partition drops the ISR
  followers that lack some of its log and have not caught up for
  ``replica.lag.time.max.ms``.

Both go through :class:`odradek.cluster.isr.IsrWriter`: a conditional write of the state
znode at the version we hold. At most one write per partition is in flight
(``Partition.pending_isr``), and its result is applied only if the partition is still in
the term that started it (same ``leader_generation`` and leader epoch) — otherwise the
cluster view already carries a newer truth. A failed write is never applied; if ZooKeeper
holds a newer state for our own term it is adopted, else we wait for the view. After a
failure the partition waits ``replica.fetch.backoff.ms`` (at most one second) before
trying again, so a leader cut off from ZooKeeper does not hammer it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from odradek.clock import monotonic_ms
from odradek.types import BrokerId

from .partition import Partition

if TYPE_CHECKING:
    from odradek.config_sections import ReplicationConfig

__all__ = ["IsrManager"]

log = logging.getLogger(__name__)

_MAX_RETRY_BACKOFF_MS = 1000


class IsrManager:
    """ISR changes of the partitions we lead. ``partitions`` lists them all (leaders are
    picked here); ``on_isr_change`` is told after a partition's ISR changed (or a write of
    it ended), so the HW and whoever waits on it are re-evaluated."""

    def __init__(
        self,
        writer: Any,
        settings: ReplicationConfig,
        partitions: Callable[[], Iterable[Partition]],
        on_isr_change: Callable[[Partition], None],
    ) -> None:
        self._writer = writer
        self._partitions = partitions
        self._on_isr_change = on_isr_change
        self.settings = settings
        self._tasks: set[asyncio.Task[None]] = set()
        self._checker: asyncio.Task[None] | None = None
        # Told (old ISR, new ISR) when our write of a new ISR landed (shrink/expand metrics).
        self.on_applied: Callable[[tuple[int, ...], tuple[int, ...]], None] | None = None

    def start(self) -> None:
        self._checker = asyncio.create_task(self._check_periodically(), name="isr-shrink")

    async def stop(self) -> None:
        tasks = list(self._tasks)
        if self._checker is not None:
            tasks.append(self._checker)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # Triggers ----------------------------------------------------------------------------
    def expand(self, partition: Partition, replica_id: BrokerId) -> None:
        if self._busy(partition):
            return
        new_isr = (*partition.isr, replica_id)
        log.info("expanding ISR of %s-%d from %s to %s", partition.topic, partition.index,
                 list(partition.isr), list(new_isr))
        self._submit(partition, new_isr)

    def shrink_lagging(self, now: int | None = None) -> int:
        """One pass of the periodic check; returns how many shrinks were started."""
        now = monotonic_ms() if now is None else now
        started = 0
        lag_time_max_ms = self.settings.replica_lag_time_max_ms
        for partition in list(self._partitions()):
            if not partition.is_leader or self._busy(partition, now):
                continue
            lagging = partition.out_of_sync_replicas(now, lag_time_max_ms)
            if not lagging:
                continue
            new_isr = tuple(r for r in partition.isr if r not in lagging)
            log.info("shrinking ISR of %s-%d from %s to %s (lagging: %s)", partition.topic,
                     partition.index, list(partition.isr), list(new_isr), list(lagging))
            self._submit(partition, new_isr)
            started += 1
        return started

    async def _check_periodically(self) -> None:
        while True:
            await asyncio.sleep(max(self.settings.replica_lag_time_max_ms / 2000, 0.05))
            try:
                self.shrink_lagging()
            except Exception:
                log.exception("ISR shrink check failed")

    # Writes ------------------------------------------------------------------------------
    def _busy(self, partition: Partition, now: int | None = None) -> bool:
        if partition.pending_isr is not None:
            return True
        now = monotonic_ms() if now is None else now
        return now < partition.isr_retry_after_ms

    def _submit(self, partition: Partition, new_isr: tuple[BrokerId, ...]) -> None:
        partition.pending_isr = new_isr
        task = asyncio.create_task(self._write(partition, new_isr),
                                   name=f"isr {partition.topic}-{partition.index}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, partition: Partition, new_isr: tuple[BrokerId, ...]) -> None:
        generation, epoch, version = (
            partition.leader_generation, partition.leader_epoch, partition.zk_version
        )
        try:
            result = await self._writer.write_isr(
                partition.topic, partition.index, leader=partition.broker_id,
                leader_epoch=epoch, isr=new_isr, controller_epoch=partition.controller_epoch,
                zk_version=version, replicas=partition.replicas,
            )
        except Exception:
            log.exception("ISR write for %s-%d failed", partition.topic, partition.index)
            result = None
        same_term = (
            partition.is_leader
            and partition.leader_generation == generation
            and partition.leader_epoch == epoch
        )
        if partition.pending_isr == new_isr:
            partition.pending_isr = None
        if not same_term:
            return
        if result is not None and result.ok:
            if partition.zk_version == version:  # the view has not moved us past it
                old_isr, partition.isr = partition.isr, new_isr
                partition.zk_version = result.zk_version
                if self.on_applied is not None:
                    self.on_applied(old_isr, new_isr)
        else:
            backoff_ms = min(self.settings.replica_fetch_backoff_ms, _MAX_RETRY_BACKOFF_MS)
            partition.isr_retry_after_ms = monotonic_ms() + backoff_ms
            current = result.current if result is not None else None
            if (
                current is not None
                and current.leader == partition.broker_id
                and current.leader_epoch == epoch
                and current.zk_version > partition.zk_version
            ):
                partition.isr = tuple(current.isr)
                partition.zk_version = current.zk_version
            log.warning("ISR update of %s-%d to %s not applied (zk version %d moved or "
                        "ZooKeeper unreachable)", partition.topic, partition.index,
                        list(new_isr), version)
        self._on_isr_change(partition)
