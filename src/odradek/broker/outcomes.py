"""What a handler returns: :data:`Outcome` — a response body, a frame it encoded itself,
one of the two markers, or a :class:`Deferred` response.

Kept apart from :mod:`.dispatch` (which imports every handler) so a handler can name them
without importing its own dispatcher.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final, Generic, TypeAlias, TypeVar

from kio.static.protocol import ResponsePayload

from odradek.protocol.fetch_response import EncodedResponse

__all__ = ["CLOSE_CONNECTION", "NO_RESPONSE", "Deferred", "Marker", "Outcome", "Response"]

T = TypeVar("T")


class Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_RESPONSE: Final = Marker("NO_RESPONSE")
"""The request gets no response at all (Produce with acks=0)."""

CLOSE_CONNECTION: Final = Marker("CLOSE_CONNECTION")
"""Close the connection instead of answering (Kafka's answer to a failed acks=0 produce)."""


class Deferred(Generic[T]):
    """A response that is ``respond(future.result())`` once ``future`` completes.

    For requests parked in a purgatory (an acks=-1 Produce, a long-poll Fetch): the
    connection's writer awaits the purgatory's future itself and builds the response when it
    resolves. A coroutine around the future would need a task of its own and one more loop
    turn between the high watermark moving and the response leaving, on every hop of
    acks=all replication (follower fetches, the produce answer, the consumer's fetch).
    """

    __slots__ = ("future", "respond")

    def __init__(self, future: asyncio.Future[T], respond: Callable[[T], Response]) -> None:
        self.future = future
        self.respond = respond


Response: TypeAlias = ResponsePayload | EncodedResponse
"""A response to write: a kio body (encoded by the connection) or a frame already encoded
(Produce, Fetch, OffsetCommit: :class:`~odradek.protocol.fetch_response.EncodedResponse`)."""

# A Deferred's result type is known only to the handler that pairs its future with
# ``respond``; the connection just passes one to the other, so the union erases it.
Outcome: TypeAlias = Response | Marker | Deferred[Any]
"""What a handler returns when it need not wait itself (see :mod:`.dispatch`)."""
