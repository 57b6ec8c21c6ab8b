"""Where the coordinator's records go: the ``__consumer_offsets`` partitions.

The coordinator does not know about replica managers or segments; the broker hands it an
:class:`OffsetsLog`. ``append`` must resolve only once the records are committed (acks=all:
in the log of every in-sync replica), because a SyncGroup or OffsetCommit answered before
that could be lost on failover. It raises a :class:`~odradek.protocol.errors.KafkaError`
(e.g. ``NotLeaderOrFollower``, ``NotEnoughReplicas``) when the append fails.

Transactional offset commits (TxnOffsetCommit) are appended with the producer's id and
epoch as a transactional batch; a replay must yield them only once their COMMIT marker is
in the log, drop them on ABORT, and hand back the ones still open at the end
(:meth:`OffsetsLog.open_transactions`), which become pending again.

:meth:`OffsetsLog.start_append` is the same append without a coroutine: it returns ``None``
when the records are committed at once (a leader that is its own ISR, as an offsets topic
with replication factor 1 is), so the hottest request, OffsetCommit, is answered with no
task and no loop turn; otherwise an awaitable that resolves (or raises) like ``append``.
:class:`InMemoryOffsetsLog` is the reference implementation used by tests and embedders.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Iterator
from typing import Protocol, runtime_checkable

from odradek.protocol.records import Record

__all__ = ["InMemoryOffsetsLog", "OffsetsLog"]


@runtime_checkable
class OffsetsLog(Protocol):
    async def append(self, partition: int, records: list[Record],
                     producer: tuple[int, int] | None = None) -> None:
        """Append ``records`` as one batch (transactional for ``producer`` = (id, epoch));
        return once committed, raise if not."""
        ...

    def start_append(self, partition: int, records: list[Record],
                     producer: tuple[int, int] | None = None) -> Awaitable[None] | None:
        """Start :meth:`append`: ``None`` if already committed, else what to await for it
        (raises at once for an append refused up front)."""
        ...

    def read_all(self, partition: int) -> Iterator[Record]:
        """Every committed record of ``partition`` in offset order (compacted or not),
        transactional ones only once committed."""
        ...

    def open_transactions(self, partition: int) -> dict[int, list[Record]]:
        """After :meth:`read_all`: records of transactions with no marker yet, by producer."""
        ...


class InMemoryOffsetsLog:
    """Keeps every appended record per partition; ``fail_next`` injects append failures.
    Transactional appends are kept apart, by producer, as still open (no markers here)."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[Record]] = defaultdict(list)
        self.transactional: dict[int, dict[int, list[Record]]] = defaultdict(dict)
        self.fail_next: list[BaseException] = []

    async def append(self, partition: int, records: list[Record],
                     producer: tuple[int, int] | None = None) -> None:
        self.start_append(partition, records, producer)

    def start_append(self, partition: int, records: list[Record],
                     producer: tuple[int, int] | None = None) -> Awaitable[None] | None:
        if self.fail_next:
            raise self.fail_next.pop(0)
        if producer is not None:
            self.transactional[partition].setdefault(producer[0], []).extend(records)
            return None
        log = self.partitions[partition]
        for record in records:
            log.append(
                Record(
                    timestamp=record.timestamp,
                    key=record.key,
                    value=record.value,
                    headers=list(record.headers),
                    offset=len(log),
                )
            )
        return None

    def read_all(self, partition: int) -> Iterator[Record]:
        return iter(list(self.partitions.get(partition, ())))

    def open_transactions(self, partition: int) -> dict[int, list[Record]]:
        return {pid: list(records) for pid, records in self.transactional[partition].items()}
