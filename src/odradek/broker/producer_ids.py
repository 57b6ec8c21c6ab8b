"""Producer ids for InitProducerId, unique across the cluster.

Ids come from blocks reserved in ZooKeeper (``/latest_producer_id_block``, through the
cluster layer's allocator), so two brokers never hand out the same id. The next block is
fetched in the background when the current one runs low, so InitProducerId normally
answers without a ZooKeeper round trip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

__all__ = ["ProducerIdManager"]

_PREFETCH_WHEN_LEFT = 100


class ProducerIdManager:
    def __init__(self, allocate_block: Callable[[], Awaitable[range]]) -> None:
        self._allocate_block = allocate_block
        self._current: range = range(0)
        self._next_index = 0
        self._upcoming: asyncio.Task[range] | None = None
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next_index >= len(self._current):
                self._current = await self._take_upcoming()
                self._next_index = 0
            producer_id = self._current[self._next_index]
            self._next_index += 1
            if len(self._current) - self._next_index < _PREFETCH_WHEN_LEFT and not self._upcoming:
                self._upcoming = asyncio.ensure_future(self._allocate_block())
            return producer_id

    async def _take_upcoming(self) -> range:
        upcoming, self._upcoming = self._upcoming, None
        if upcoming is not None:
            try:
                return await upcoming
            except Exception:
                pass  # a failed prefetch is retried right away below
        return await self._allocate_block()

    def close(self) -> None:
        if self._upcoming is not None:
            self._upcoming.cancel()
