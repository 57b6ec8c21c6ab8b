"""Long-poll fetches waiting for data (Kafka's DelayedFetch).

A Fetch that found fewer than ``min_bytes`` (and no error) waits in the fetch purgatory
for up to ``max_wait_ms``, watching its partitions; an append or a high-watermark move
re-tests it (cheaply first: did any partition move at all?), and at the deadline it
answers with whatever is there.
"""

from __future__ import annotations

from collections.abc import Callable

from .purgatory import DelayedOperation
from .reads import FetchParams, FetchRead

__all__ = ["DelayedFetch"]


class DelayedFetch(DelayedOperation[FetchRead]):
    def __init__(
        self,
        params: FetchParams,
        read: Callable[[], FetchRead],
        has_new_data: Callable[[], bool],
    ) -> None:
        super().__init__()
        self._params = params
        self._read = read
        self._has_new_data = has_new_data

    def try_complete(self) -> bool:
        if not self._has_new_data():
            return False
        found = self._read()
        if found.satisfies(self._params):
            self.complete(found)
            return True
        return False

    def on_expire(self) -> None:
        self.complete(self._read())
