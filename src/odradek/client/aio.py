"""Small asyncio helpers.

:func:`wait_event` exists because ``asyncio.wait_for(event.wait(), t)`` on Python 3.11 can
swallow a ``cancel()`` that arrives while the event is being set (CPython gh-86296): a
background loop cancelled at that moment keeps running forever. This version never loses a
cancellation.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

__all__ = ["Wakeup", "result_within", "wait_event"]

T = TypeVar("T")


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait until ``event`` is set (True) or ``timeout`` seconds pass (False)."""
    if event.is_set():
        return True
    if timeout is not None and timeout <= 0:
        return False
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bool] = loop.create_future()
    waiter = loop.create_task(event.wait())

    def finish(result: bool) -> None:
        if not done.done():
            done.set_result(result)

    waiter.add_done_callback(lambda task: finish(not task.cancelled()))
    handle = loop.call_later(timeout, finish, False) if timeout is not None else None
    try:
        return await done
    finally:
        if handle is not None:
            handle.cancel()
        waiter.cancel()


class Wakeup:
    """A flag one task sleeps on (with a timeout) and anyone on the loop sets: what
    ``asyncio.Event`` plus :func:`wait_event` do, without a task per wait. A ``set`` resumes
    the sleeper in the next loop iteration (``wait_event`` takes three), which matters for
    the producer's sender: every iteration is a point where another thread holding the GIL
    can delay it by a whole switch interval.

    Cancellation is never lost: the sleeper awaits a plain future.
    """

    __slots__ = ("_flag", "_waiter")

    def __init__(self) -> None:
        self._flag = False
        self._waiter: asyncio.Future[bool] | None = None

    def set(self) -> None:
        self._flag = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    def clear(self) -> None:
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    async def wait(self, timeout: float | None) -> bool:
        """Until set (True) or ``timeout`` seconds pass (False). One sleeper at a time."""
        if self._flag:
            return True
        if timeout is not None and timeout <= 0:
            return False
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiter = waiter
        handle = (loop.call_later(timeout, _resolve, waiter, False)
                  if timeout is not None else None)
        try:
            return await waiter
        finally:
            if handle is not None:
                handle.cancel()
            if self._waiter is waiter:
                self._waiter = None


def _resolve(future: asyncio.Future[bool], result: bool) -> None:
    if not future.done():
        future.set_result(result)


async def result_within(future: asyncio.Future[T], timeout: float) -> T:
    """``await asyncio.wait_for(future, timeout)`` for a plain future, resumed in the
    iteration the result arrives (``wait_for`` adds one): the future itself fails with
    ``TimeoutError`` when ``timeout`` passes."""
    handle = asyncio.get_running_loop().call_later(timeout, _time_out, future)
    try:
        return await future
    finally:
        handle.cancel()


def _time_out(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())
