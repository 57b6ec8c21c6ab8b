"""Where the coordinator's records go: the ``__consumer_offsets`` partitions.

The coordinator does not know about replica managers or segments; the broker hands it an
:class:`OffsetsLog`. ``append`` must resolve only once the records are committed (acks=all:
in the log of every in-sync replica), because a SyncGroup or OffsetCommit answered before
that could be lost on failover. It raises a :class:`~odradek.protocol.errors.KafkaError`
(e.g. ``NotLeaderOrFollower``, ``NotEnoughReplicas``) when the append fails.
:class:`InMemoryOffsetsLog` is the reference implementation used by tests and embedders.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from odradek.protocol.records import Record

__all__ = ["InMemoryOffsetsLog", "OffsetsLog"]


@runtime_checkable
class OffsetsLog(Protocol):
    async def append(self, partition: int, records: list[Record]) -> None:
        """Append ``records`` as one batch; return once committed, raise if not."""
        ...

    def read_all(self, partition: int) -> Iterator[Record]:
        """Every committed record of ``partition`` in offset order (compacted or not)."""
        ...


class InMemoryOffsetsLog:
    """Keeps every appended record per partition; ``fail_next`` injects append failures."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[Record]] = defaultdict(list)
        self.fail_next: list[BaseException] = []

    async def append(self, partition: int, records: list[Record]) -> None:
        if self.fail_next:
            raise self.fail_next.pop(0)
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

    def read_all(self, partition: int) -> Iterator[Record]:
        return iter(list(self.partitions.get(partition, ())))
