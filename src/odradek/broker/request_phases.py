"""One request from the read that completed its frame to the write of its response: its
answer, the moments of Kafka's request phases, and the recorder calls they end in.

The phases (docs/observability.md): *queue* from the read to the handler call, *local* the
handler's synchronous part, *remote* until its answer completed (a long poll, acks=-1, a
ZooKeeper write), *send* until its bytes were handed to the socket. One ``observe`` per
request; the error codes of its response are counted once, when it is encoded
(:func:`encode_answer`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from odradek.protocol.fetch_response import Chunk

from .dispatch import to_chunks
from .outcomes import Deferred, Marker, Response
from .response_errors import count_errors
from .throttling import with_throttle

if TYPE_CHECKING:
    from odradek.metrics.recorders import RequestMetrics

__all__ = ["TimedRequest", "encode_answer", "observe"]

clock = time.perf_counter


class TimedRequest:
    """A request taken from a connection and not yet written."""

    __slots__ = ("api_key", "called", "correlation_id", "deferred", "done", "outcome",
                 "received", "returned", "throttle_ms", "waiting")

    def __init__(self, api_key: int, received: float, correlation_id: int = -1) -> None:
        self.api_key = api_key
        self.correlation_id = correlation_id
        self.received = received
        self.called = self.returned = self.done = received
        self.outcome: Sequence[Chunk] | Marker | None = None  # None: not answered yet
        self.waiting: asyncio.Future[Any] | None = None  # what answers it, while pending
        self.deferred: Deferred[Any] | None = None  # builds the response from that answer
        self.throttle_ms = 0  # a client quota's throttle time, written into the response


def encode_answer(timed: TimedRequest, outcome: Response | Marker,
                  requests: RequestMetrics | None) -> Sequence[Chunk] | Marker:
    """The frame to write for ``outcome`` (or its marker), its error codes counted."""
    if timed.throttle_ms:
        outcome = with_throttle(outcome, timed.throttle_ms)
    if requests is not None and not isinstance(outcome, Marker):
        api_key = timed.api_key
        if isinstance(outcome, list):  # pre-encoded: the encoder listed its error codes
            for code in getattr(outcome, "error_codes", ()):
                requests.error(api_key, code)
        else:
            count_errors(outcome, lambda code: requests.error(api_key, code))
    return to_chunks(timed.correlation_id, outcome)


def observe(timed: TimedRequest, requests: RequestMetrics | None) -> None:
    """The request's response has gone (or it gets none): record its four phases."""
    if requests is not None:
        called, returned, done = timed.called, timed.returned, timed.done
        requests.observe(timed.api_key, called - timed.received, returned - called,
                         done - returned, clock() - done)
