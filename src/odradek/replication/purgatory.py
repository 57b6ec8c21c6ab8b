"""Delayed operations ("purgatory"): requests that wait for the log to change.

A long-poll Fetch waits until ``min_bytes`` are available or ``max_wait_ms`` passes; an
acks=-1 Produce waits until the high watermark covers its records or its timeout passes.
Neither may block the event loop or poll in a loop. Instead each waiting request is a
:class:`DelayedOperation` *watching* partition keys; whoever changes a partition (an
append, a high-watermark move, a leadership change) calls :meth:`Purgatory.check` with that
key, and only the operations watching it re-test their condition. A timer armed with
``loop.call_later`` completes the operation at its deadline, whatever the log did.

The structure mirrors Kafka's DelayedOperationPurgatory: try once on arrival, watch,
re-try on notification, expire on timeout; an operation completes exactly once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

__all__ = ["DelayedOperation", "Purgatory"]

T = TypeVar("T")


class DelayedOperation(Generic[T]):
    """Subclasses implement :meth:`try_complete` (condition met? then :meth:`complete`) and
    :meth:`on_expire` (complete with whatever is available at the deadline)."""

    def __init__(self) -> None:
        self.future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._timer: asyncio.TimerHandle | None = None
        self._purgatory: Purgatory | None = None
        self.keys: tuple[Hashable, ...] = ()

    @property
    def done(self) -> bool:
        return self.future.done()

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_expire(self) -> None:
        raise NotImplementedError

    def complete(self, result: T) -> None:
        if self.future.done():
            return
        self._finish()
        self.future.set_result(result)

    def fail(self, exc: BaseException) -> None:
        if self.future.done():
            return
        self._finish()
        self.future.set_exception(exc)

    def _finish(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._purgatory is not None:
            self._purgatory._unwatch(self)  # synchronously: no stale watchers, ever

    def _expire(self) -> None:
        if self.future.done():  # e.g. cancelled because its connection closed
            self._finish()
            return
        purgatory = self._purgatory
        if purgatory is not None and purgatory.on_expired is not None:
            purgatory.on_expired(purgatory.name)
        try:
            self.on_expire()
        except Exception as exc:  # a bug must still answer the client, not hang it
            self.fail(exc)
        if not self.future.done():
            self.fail(RuntimeError(f"{type(self).__name__}.on_expire did not complete"))


class Purgatory:
    """Operations waiting on keys (usually ``(topic, partition)``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, set[DelayedOperation[Any]]] = {}
        # Told the purgatory's name when an operation completes by its deadline, not its
        # condition (the expirations metric).
        self.on_expired: Callable[[str], None] | None = None

    def __len__(self) -> int:
        return len({op for ops in self._watchers.values() for op in ops})

    def try_complete_else_watch(
        self, operation: DelayedOperation[T], keys: Iterable[Hashable], timeout_s: float
    ) -> asyncio.Future[T]:
        """Complete now if possible; otherwise watch ``keys`` and arm the deadline timer."""
        if operation.try_complete():
            return operation.future
        return self.watch(operation, keys, timeout_s)

    def watch(
        self, operation: DelayedOperation[T], keys: Iterable[Hashable], timeout_s: float
    ) -> asyncio.Future[T]:
        """Watch ``keys`` and arm the deadline timer, without testing first: for a caller
        that has just found the operation incomplete in this same loop turn (nothing can
        have changed since, on one event loop), such as a fetch that read nothing new."""
        operation.keys = tuple(keys)
        operation._purgatory = self
        for key in operation.keys:
            self._watchers.setdefault(key, set()).add(operation)
        loop = asyncio.get_running_loop()
        operation._timer = loop.call_later(max(timeout_s, 0.0), operation._expire)
        return operation.future

    def check(self, key: Hashable) -> int:
        """Re-test the operations watching ``key``; returns how many completed."""
        watchers = self._watchers.get(key)
        if not watchers:
            return 0
        completed = 0
        for operation in list(watchers):
            if operation.done:
                self._unwatch(operation)
                continue
            try:
                if operation.try_complete():
                    completed += 1
            except Exception as exc:
                operation.fail(exc)
        return completed

    def expire_all(self) -> None:
        """Complete every waiting operation now (broker shutdown)."""
        for operation in {op for ops in self._watchers.values() for op in ops}:
            operation._expire()

    def _unwatch(self, operation: DelayedOperation[Any]) -> None:
        for key in operation.keys:
            watchers = self._watchers.get(key)
            if watchers is not None:
                watchers.discard(operation)
                if not watchers:
                    del self._watchers[key]
