"""Small asyncio helpers.

:func:`wait_event` exists because ``asyncio.wait_for(event.wait(), t)`` on Python 3.11 can
swallow a ``cancel()`` that arrives while the event is being set (CPython gh-86296): a
background loop cancelled at that moment keeps running forever. This version never loses a
cancellation.
"""

from __future__ import annotations

import asyncio

__all__ = ["wait_event"]


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
