"""Appends to ``__consumer_offsets`` for the group coordinator, bounded in time.

Every write of the coordinator (offsets, group metadata, consumer-group records) goes
through here: an append is started on the :class:`OffsetsLog` (which may commit it at once,
when the partition's leader is its whole ISR, and then returns no awaitable at all) and
awaited under ``offsets.commit.timeout.ms``. Whatever fails below — a Kafka error, a bug or
an I/O error — comes out as a :class:`~odradek.protocol.errors.KafkaError`, so a client
always gets an answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from odradek.protocol.errors import KafkaError
from odradek.protocol.records import Record

from .append_errors import AppendFailed, AppendTimedOut
from .offsets_log import OffsetsLog

__all__ = ["OffsetsAppender"]

log = logging.getLogger(__name__)


class OffsetsAppender:
    def __init__(self, offsets_log: OffsetsLog, commit_timeout_ms: int) -> None:
        self.offsets_log = offsets_log
        self._commit_timeout_ms = commit_timeout_ms

    async def append(self, partition: int, records: list[Record],
                     producer: tuple[int, int] | None = None) -> None:
        pending = self.start(partition, records, producer)
        if pending is not None:
            await self.bounded(pending)

    def begin(self, partition: int, records: list[Record]) -> Awaitable[None]:
        """Start an append now and return what waits for it (a failed start raises there).
        For writes whose wait is left to a task: started here, they reach the log in the
        order the groups changed, not in the order tasks happen to run (a classic group's
        metadata record must not land after the tombstone of its upgrade)."""
        try:
            pending = self.start(partition, records)
        except KafkaError as exc:
            return _raise(exc)
        return _done() if pending is None else self.bounded(pending)

    def start(self, partition: int, records: list[Record],
              producer: tuple[int, int] | None = None) -> Awaitable[None] | None:
        """Start an append; None if it is already committed."""
        try:
            return self.offsets_log.start_append(partition, records, producer)
        except KafkaError:
            raise
        except Exception as exc:  # a bug or I/O error below us: still answer the client
            log.exception("offsets append failed")
            raise AppendFailed(str(exc)) from exc

    async def bounded(self, pending: Awaitable[None]) -> None:
        """Wait for an append under ``offsets.commit.timeout.ms``."""
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for wraps the append in a Task of
            # its own, one more task and loop turn per commit.
            async with asyncio.timeout(self._commit_timeout_ms / 1000):
                await pending
        except TimeoutError as exc:
            raise AppendTimedOut("offsets append timed out") from exc
        except KafkaError:
            raise
        except Exception as exc:
            log.exception("offsets append failed")
            raise AppendFailed(str(exc)) from exc


async def _raise(error: KafkaError) -> None:
    raise error


async def _done() -> None:
    return None
