"""JoinGroup and SyncGroup requests parked until their group answers them.

The sans-IO shard answers a JoinGroup or SyncGroup when the rebalance gets there, often in
another member's request or in a timer, by emitting a :class:`~.results.Reply` with the
token the request was parked under. Group deadlines (initial delay, rebalance timeout,
pending-sync timeout) always produce that reply; the bound on each wait is only a safety
net, so a bug can never hold a client connection forever.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TypeVar

from .results import JoinResult, Reply, SyncResult

__all__ = ["ParkedRequests"]

log = logging.getLogger(__name__)

_R = TypeVar("_R", JoinResult, SyncResult)


class ParkedRequests:
    def __init__(self, slack_ms: int) -> None:
        """``slack_ms``: added to each wait's bound (the time a group's write may take)."""
        self._slack_ms = slack_ms
        self._waiters: dict[int, asyncio.Future[JoinResult | SyncResult]] = {}
        self._next_token = 0

    def park(self) -> tuple[int, asyncio.Future[JoinResult | SyncResult]]:
        """A new token, and the future its reply completes."""
        self._next_token += 1
        future: asyncio.Future[JoinResult | SyncResult] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiters[self._next_token] = future
        return self._next_token, future

    async def wait(self, token: int, future: asyncio.Future[JoinResult | SyncResult],
                   bound_ms: int, fallback: _R) -> _R:
        """The parked request's answer; ``fallback`` if none came within the bound."""
        try:
            result = await asyncio.wait_for(asyncio.shield(future),
                                            (bound_ms + self._slack_ms) / 1000)
            assert isinstance(result, type(fallback))
            return result
        except TimeoutError:
            log.error("parked request %d was never answered; replying %s", token, fallback)
            return fallback
        finally:
            self._waiters.pop(token, None)

    def answer(self, reply: Reply) -> None:
        """Complete the request parked under ``reply.token``, if it still waits."""
        future = self._waiters.get(reply.token)
        if future is not None and not future.done():
            future.set_result(reply.result)
