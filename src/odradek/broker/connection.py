"""One client connection: read frames, dispatch, write responses in request order.

This is the thin adapter between the sans-IO protocol package and the socket (compare
hypercorn's TCP server). Two tasks per connection:

* the reader decodes frames and calls the handler for each, in arrival order, appending
  the outcome (a value or a future) to a bounded pipeline queue — a full queue stops the
  reader, which is the backpressure on clients that pipeline without reading;
* the writer takes outcomes from the queue in order, awaits each one if it is still
  pending (a long-poll Fetch, an acks=-1 Produce), and writes it through the channel.

A broken peer (bad frame size, undecodable request, unknown API) gets one log line and a
closed connection; nothing a client sends can take down the broker or other connections.

Each request is timed in Kafka's phases (docs/observability.md): *queue* from the read that
completed its frame to its handler call, *local* the handler's synchronous part, *remote*
until its awaitable completed, *send* until its bytes were written. One recorder call per
request; the error codes of the response are counted by :mod:`.response_errors`.

Client quotas (:mod:`.throttling`): after each handler the request is recorded against its
client's quotas; over quota, the response carries the throttle time and the reader stops
reading (the connection is *muted*) until it has passed — KIP-219, as Kafka does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import Any

from odradek.protocol.api_versions import ApiKey, is_advertised
from odradek.protocol.errors import KafkaProtocolViolation, UnsupportedApi
from odradek.protocol.fetch_response import Chunk
from odradek.protocol.framing import FrameReader
from odradek.protocol.messages import RequestHeader, decode_request, peek_ids
from odradek.protocol.negotiation import unsupported_api_versions_frame

from .authenticator import ConnectionSession
from .context import BrokerServices, RequestContext
from .dispatch import CLOSE_CONNECTION, NO_RESPONSE, Handler, is_awaitable, to_chunks
from .outcomes import Deferred, Marker, Response
from .response_errors import count_errors
from .socket_channel import ByteChannel
from .throttling import ChannelThrottle, after_request, with_throttle

__all__ = ["Connection"]

log = logging.getLogger(__name__)

_READ_SIZE = 256 * 1024
_MAX_PIPELINE = 64
_CLOSE = object()
_clock = time.perf_counter
_new = tuple.__new__  # a RequestContext per request, without the named tuple's __new__
_REAUTH = frozenset({int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)})
_RAW_TOKEN_HEADER = RequestHeader(int(ApiKey.SASL_AUTHENTICATE), 0, -1, None)


# What a request's place in the pipeline holds: the frame to write (or what is left of it
# after a partial send) or a marker, or what yields one later (the task finishing an async
# handler, a Deferred response); None until the request is handled.
_Slot = (Sequence[Chunk | memoryview] | Marker | asyncio.Future[Sequence[Chunk] | Marker]
         | Deferred[Any] | None)


class _Timed:
    """One request in the pipeline: its outcome and the moments of its phases."""

    __slots__ = ("api_key", "called", "correlation_id", "done", "outcome", "received",
                 "returned", "throttle_ms")

    def __init__(self, api_key: int, received: float, correlation_id: int = -1) -> None:
        self.api_key = api_key
        self.correlation_id = correlation_id
        self.received = received
        self.called = self.returned = self.done = received
        self.outcome: _Slot = None
        self.throttle_ms = 0


class Connection:
    def __init__(
        self,
        channel: ByteChannel,
        services: BrokerServices,
        handlers: dict[int, Handler],
        *,
        listener: str,
        peer: str,
        max_frame_bytes: int,
        session: ConnectionSession | None = None,
    ) -> None:
        self._channel = channel
        self._services = services
        self._handlers = handlers
        self.listener = listener
        self.peer = peer
        self.session = session if session is not None else ConnectionSession()
        self._throttle = ChannelThrottle()
        self._frames = FrameReader(max_frame_bytes)
        self._max_frame_bytes = max_frame_bytes
        self._pre_auth_limit = not self.session.authenticated
        if self._pre_auth_limit:  # Kafka's sasl.server.max.receive.size, until logged in
            self._frames.limit(min(max_frame_bytes, self.session.max_receive_size),
                               "sasl.server.max.receive.size")
        # _Timed entries and the _CLOSE sentinel, which the writer tells apart (and markers
        # from frames) by identity, a check mypy does not narrow by: left untyped until the
        # connection's rewrite (the round-trip issue) makes the writer's states explicit.
        self._pipeline: asyncio.Queue[Any] = asyncio.Queue(_MAX_PIPELINE)
        self._reader_stopped = asyncio.Event()
        self._receiving = False
        self._writer_idle = False  # True while the writer waits for the next outcome
        self._task: asyncio.Task[object] | None = None
        metrics = services.metrics
        self._requests = metrics.requests if metrics is not None else None

    async def run(self) -> None:
        writer = asyncio.create_task(self._write_loop(), name=f"conn-writer {self.peer}")
        try:
            await self._read_loop()
        except (ConnectionError, OSError) as exc:
            log.debug("connection %s read failed: %s", self.peer, exc)
        except KafkaProtocolViolation as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
        except Exception:
            log.exception("request handling failed on %s; closing the connection", self.peer)
        finally:
            self._reader_stopped.set()
            if not writer.done():
                await self._pipeline.put(_CLOSE)
            try:
                await writer
            except asyncio.CancelledError:
                writer.cancel()
                raise
            finally:
                self._channel.close()

    def stop_reading(self) -> None:
        """Graceful shutdown: stop taking requests; answer those already taken."""
        self._reader_stopped.set()
        if self._receiving and self._task is not None:
            self._task.cancel()  # only ever interrupts the idle recv, never a handler

    async def _read_loop(self) -> None:
        self._task = asyncio.current_task()
        buffer = bytearray(_READ_SIZE)
        view = memoryview(buffer)
        while not self._reader_stopped.is_set():
            if not await self._unmuted():
                return
            self._receiving = True
            try:
                count = await self._channel.recv_into(buffer)
            except asyncio.CancelledError:
                if self._reader_stopped.is_set():
                    return
                raise
            finally:
                self._receiving = False
            if count == 0:
                return
            received = _clock()
            if self._pre_auth_limit and self.session.authenticated:
                self._pre_auth_limit = False
                self._frames.limit(self._max_frame_bytes, "socket.request.max.bytes")
            self._frames.receive_data(view[:count])
            while (frame := self._frames.next_frame()) is not None:
                if self._reader_stopped.is_set():
                    return
                if self._throttle.muted_until > received:
                    if not await self._unmuted():
                        return
                    received = _clock()  # the mute is not queue time
                timed = self._handle_frame(frame, received)
                if self._writer_idle and self._pipeline.empty() and self._sent_at_once(timed):
                    continue
                await self._pipeline.put(timed)

    def _sent_at_once(self, timed: _Timed) -> bool:
        """Write a response that was ready when its request was read straight from the
        reader, when nothing is ahead of it (the writer idle, the pipeline empty): no queue
        hand-off and no writer wake-up for the common synchronous request. What the socket
        does not take at once is left in ``timed`` for the writer, still first in line."""
        chunks = timed.outcome
        if not isinstance(chunks, list) or self.session.close_reason is not None:
            return False
        if not all(type(chunk) is bytes for chunk in chunks):
            return False  # a file region (sendfile) is the writer's job
        try:
            rest = self._channel.send_now(chunks)
        except (ConnectionError, OSError):
            return False  # the writer meets the same error and closes the connection
        if rest:
            timed.outcome = rest
            return False
        self._observe(timed)
        return True

    async def _unmuted(self) -> bool:
        """Wait out a quota mute; False when the connection stopped reading meanwhile."""
        delay = self._throttle.remaining_s()
        if delay <= 0:
            return True
        self._receiving = True  # stop_reading may interrupt the wait
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            if self._reader_stopped.is_set():
                return False
            raise
        finally:
            self._receiving = False
        return True

    def _handle_frame(self, frame: memoryview, received: float) -> _Timed:
        session = self.session
        if session.close_reason is not None:
            raise KafkaProtocolViolation(f"request after {session.close_reason}")
        if session.expects_raw_token:
            return self._raw_sasl_token(frame, received)
        api_key, api_version, correlation_id = peek_ids(frame)
        if session.expires_at is not None and session.expired() and api_key not in _REAUTH:
            raise KafkaProtocolViolation(
                "SASL session expired (connections.max.reauth.ms) without re-authentication")
        if not session.allows(api_key):
            raise KafkaProtocolViolation(
                f"api key {api_key} before SASL authentication completed "
                f"(only ApiVersions, SaslHandshake and SaslAuthenticate are answered)")
        timed = _Timed(api_key, received, correlation_id)
        if api_key == ApiKey.API_VERSIONS and not is_advertised(api_key, api_version):
            timed.outcome = [unsupported_api_versions_frame(correlation_id)]
            return timed
        if not is_advertised(api_key, api_version):
            raise UnsupportedApi(
                f"api key {api_key} version {api_version} is not supported "
                f"(correlation id {correlation_id})"
            )
        request = decode_request(frame)
        handler = self._handlers[api_key]
        services = self._services
        context = _new(RequestContext, (services, request.header, self.listener, self.peer,
                                        session, self._throttle))
        timed.called = _clock()
        outcome = handler(context, request.body)
        timed.returned = timed.done = _clock()
        quotas = services.quotas
        if quotas is not None and quotas.active:
            timed.throttle_ms = after_request(
                quotas, self._throttle, session.principal, request.header, request.body, api_key,
                len(frame), timed.returned - timed.called)
        if isinstance(outcome, Deferred):
            timed.outcome = outcome  # the writer awaits its future: no task, no extra turn
        elif is_awaitable(outcome):
            timed.outcome = asyncio.ensure_future(self._finish(timed, correlation_id, outcome))
        else:
            timed.outcome = self._respond(timed, correlation_id, outcome)
        return timed

    def _raw_sasl_token(self, frame: memoryview, received: float) -> _Timed:
        """After a v0 SaslHandshake the frames are bare SASL tokens, not requests."""
        # no cycle: hoist when issue 23 reworks this module
        from .handlers.sasl import sasl_token_outcome

        timed = _Timed(ApiKey.SASL_AUTHENTICATE, received)
        context = RequestContext(self._services, _RAW_TOKEN_HEADER, self.listener, self.peer,
                                 self.session)
        pending = sasl_token_outcome(context, bytes(frame))
        timed.outcome = asyncio.ensure_future(self._finish(timed, -1, pending))
        return timed

    async def _finish(self, timed: _Timed, correlation_id: int,
                      pending: Awaitable[Response | Marker]) -> Sequence[Chunk] | Marker:
        outcome = await pending
        timed.done = _clock()
        return self._respond(timed, correlation_id, outcome)

    def _respond(self, timed: _Timed, correlation_id: int,
                 outcome: Response | Marker) -> Sequence[Chunk] | Marker:
        requests = self._requests
        if timed.throttle_ms:
            outcome = with_throttle(outcome, timed.throttle_ms)
        if requests is not None and not isinstance(outcome, Marker):
            api_key = timed.api_key
            if isinstance(outcome, list):  # pre-encoded: the encoder listed its error codes
                for code in getattr(outcome, "error_codes", ()):
                    requests.error(api_key, code)
            else:
                count_errors(outcome, lambda code: requests.error(api_key, code))
        return to_chunks(correlation_id, outcome)

    def _observe(self, timed: _Timed) -> None:
        requests = self._requests
        if requests is not None:
            called, returned, done = timed.called, timed.returned, timed.done
            requests.observe(timed.api_key, called - timed.received, returned - called,
                             done - returned, _clock() - done)

    async def _write_loop(self) -> None:
        try:
            while True:
                self._writer_idle = True
                timed = await self._pipeline.get()
                self._writer_idle = False
                if timed is _CLOSE:
                    return
                item = timed.outcome
                if isinstance(item, asyncio.Future):
                    item = await item
                elif isinstance(item, Deferred):
                    result = await item.future
                    timed.done = _clock()
                    item = self._respond(timed, timed.correlation_id, item.respond(result))
                if item is NO_RESPONSE:
                    self._observe(timed)
                    continue
                if item is CLOSE_CONNECTION:
                    reason = self.session.close_reason or "a failed acks=0 produce"
                    log.info("closing connection from %s after %s", self.peer, reason)
                    self.stop_reading()
                    return
                await self._channel.write_chunks(item)
                self._observe(timed)
                if self.session.close_reason is not None:
                    log.info("closing connection from %s after %s", self.peer,
                             self.session.close_reason)
                    self.stop_reading()
                    return
        except (ConnectionError, OSError) as exc:
            log.debug("connection %s write failed: %s", self.peer, exc)
        except Exception:
            log.exception("request handling failed on %s; closing the connection", self.peer)
        finally:
            self.stop_reading()
            self._drain_pipeline()

    def _drain_pipeline(self) -> None:
        """Cancel outcomes nobody will write (the connection is going away)."""
        while not self._pipeline.empty():
            item = self._pipeline.get_nowait()
            outcome = getattr(item, "outcome", None)
            if isinstance(outcome, Deferred):
                outcome = outcome.future
            if isinstance(outcome, asyncio.Future):
                outcome.cancel()
