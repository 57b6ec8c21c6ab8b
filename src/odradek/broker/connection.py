"""One client connection: frames in, requests dispatched, responses out in request order.

The thin adapter between the sans-IO protocol package and the loop (compare hypercorn's TCP
server), built on the transport's callbacks (an :class:`asyncio.BufferedProtocol`, which
uvloop implements natively): one loop turn per request. Each read is parsed into whole
frames and every request is dispatched in that callback. A response ready when its handler
returns is written before the callback returns; all the responses one read made ready leave
in one write (:class:`.response_stream.ResponseStream`). A pending answer (a :class:`Deferred`
of a long-poll Fetch or an acks=-1 Produce, or the task of a handler that awaits) is written
from the callback that completes it — no task per request — and the responses behind it wait
for it: responses always leave in request order.

Backpressure on a client that pipelines without reading: reading pauses while
``_MAX_PIPELINE`` responses are unwritten or the transport holds more than
``_WRITE_HIGH_WATER`` bytes, and resumes when answers complete or the transport drains
(``resume_writing``). A broken peer (bad frame size, undecodable request, unknown API) gets
one log line and a closed connection; nothing a client sends can take down the broker or
other connections. A connection lost with answers pending cancels them.

Each request is timed in Kafka's phases and its response's error codes are counted
(:mod:`.request_phases`).

Client quotas (:mod:`.throttling`): after each handler the request is recorded against its
client's quotas; over quota, the response carries the throttle time and the connection is
*muted* (reading paused, the frames already read left unhandled) until it has passed —
KIP-219, as Kafka does.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from functools import partial
from typing import Any, Protocol, cast

from odradek.protocol.api_versions import ApiKey, is_advertised
from odradek.protocol.errors import KafkaProtocolViolation, UnsupportedApi
from odradek.protocol.fetch_response import Chunk
from odradek.protocol.framing import FrameReader
from odradek.protocol.messages import RequestHeader, decode_request, peek_ids
from odradek.protocol.negotiation import unsupported_api_versions_frame
from odradek.security.tls import principal_of_certificate

from .authenticator import ConnectionSession
from .context import BrokerServices, RequestContext
from .dispatch import CLOSE_CONNECTION, NO_RESPONSE, Handler, is_awaitable
from .outcomes import Deferred, Marker
from .request_phases import TimedRequest, clock, encode_answer, observe
from .response_stream import ResponseStream
from .throttling import ChannelThrottle, after_request

__all__ = ["Connection", "ConnectionTracker"]

log = logging.getLogger(__name__)

_READ_SIZE = 256 * 1024
_MAX_PIPELINE = 64
_WRITE_HIGH_WATER = 1 << 20
_new = tuple.__new__  # a RequestContext per request, without the named tuple's __new__
_REAUTH = frozenset({int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)})
_RAW_TOKEN_HEADER = RequestHeader(int(ApiKey.SASL_AUTHENTICATE), 0, -1, None)


class ConnectionTracker(Protocol):
    """Who keeps the broker's list of open connections (:class:`.listeners.Listeners`)."""

    def opened(self, connection: Connection) -> None: ...

    def closed(self, connection: Connection) -> None: ...


class Connection(asyncio.BufferedProtocol):
    def __init__(self, services: BrokerServices, handlers: dict[int, Handler], *,
                 listener: str, max_frame_bytes: int, tracker: ConnectionTracker,
                 session: ConnectionSession | None = None) -> None:
        self._services = services
        self._handlers = handlers
        self._tracker = tracker
        self.listener = listener
        self.peer = "?"
        self.session = session if session is not None else ConnectionSession()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._throttle = ChannelThrottle()
        self._frames = FrameReader(max_frame_bytes)
        self._max_frame_bytes = max_frame_bytes
        self._pre_auth_limit = not self.session.authenticated
        if self._pre_auth_limit:  # Kafka's sasl.server.max.receive.size, until logged in
            self._frames.limit(min(max_frame_bytes, self.session.max_receive_size),
                               "sasl.server.max.receive.size")
        self._buffer = memoryview(bytearray(_READ_SIZE))
        self._transport: asyncio.Transport | None = None
        self._tls = False
        self._stream: ResponseStream[TimedRequest] | None = None
        self._pending: deque[TimedRequest] = deque()  # answered or not, in request order
        self._received = 0.0  # when the frames not yet handled were read
        self._stopping = False  # no more requests: close once the pending are answered
        self._reading = True
        self._pumping = False
        self._unmute: asyncio.TimerHandle | None = None
        metrics = services.metrics
        self._requests = metrics.requests if metrics is not None else None

    @property
    def reading(self) -> bool:
        """Whether the connection reads from its peer now (not paused, muted or closed)."""
        return self._reading and self._transport is not None

    @property
    def unwritten(self) -> int:
        """Requests taken whose responses have not been written entirely."""
        stream = self._stream
        return len(self._pending) + (stream.queued if stream is not None else 0)

    # --- the transport's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # a stream's: TCP, perhaps under TLS
        self._transport = transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.peer = f"{peer[0]}:{peer[1]}"
        sendfile_fd = None
        self._tls = transport.get_extra_info("ssl_object") is not None
        if not self._tls:
            sendfile_fd = transport.get_extra_info("socket").fileno()
        else:  # an SSL listener: a client certificate names the peer
            principal = principal_of_certificate(transport.get_extra_info("peercert"))
            if principal is not None:
                self.session.principal = principal
        self._stream = ResponseStream(transport, sendfile_fd,
                                      partial(observe, requests=self._requests))
        self._tracker.opened(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        self._received = clock()
        if self._pre_auth_limit and self.session.authenticated:
            self._pre_auth_limit = False
            self._frames.limit(self._max_frame_bytes, "socket.request.max.bytes")
        self._frames.receive_data(self._buffer[:nbytes])
        self._pump()

    def eof_received(self) -> bool:
        """The peer sent all it will: answer what it asked, then close (TLS has no half
        close: its transport closes at once)."""
        self.stop_reading()
        return not self._tls

    def pause_writing(self) -> None:
        if self._stream is not None:
            self._stream.pause()

    def resume_writing(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.resume()
        except OSError as exc:
            self._broken(exc)
            return
        self._pump()

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.debug("connection %s lost: %s", self.peer, exc)
        self._transport = None
        if self._unmute is not None:
            self._unmute.cancel()
        self._discard_pending()
        if self._stream is not None:
            self._stream.close()
        if not self.closed.done():
            self.closed.set_result(None)
            self._tracker.closed(self)

    # --- controlled shutdown

    def stop_reading(self) -> None:
        """Graceful shutdown: stop taking requests; answer those already taken, then close."""
        self._stopping = True
        self._update_reading()
        self._close_when_answered()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # --- requests in, responses out

    def _may_take_requests(self) -> bool:
        transport = self._transport
        return (transport is not None and not self._stopping and self._unmute is None
                and self.unwritten < _MAX_PIPELINE
                and transport.get_write_buffer_size() <= _WRITE_HIGH_WATER)

    def _pump(self) -> None:
        """Handle the frames read so far while requests may be taken, write every response
        that is ready (in one write), then pause or resume reading to match."""
        if self._pumping:  # re-entered from a callback of our own write
            return
        self._pumping = True
        try:
            self._take_requests()
        except KafkaProtocolViolation as exc:  # the requests before it are still answered
            log.warning("closing connection from %s: %s", self.peer, exc)
            self._stopping = True
        except Exception:
            log.exception("request handling failed on %s; closing the connection", self.peer)
            self._stopping = True
        try:
            self._write_ready()
        finally:
            self._pumping = False
        self._update_reading()
        self._close_when_answered()

    def _take_requests(self) -> None:
        frames, throttle = self._frames, self._throttle
        while self._may_take_requests() or self._make_room():
            if throttle.muted_until > self._received:
                delay = throttle.remaining_s()
                if delay > 0:
                    self._unmute = asyncio.get_running_loop().call_later(delay, self._unmuted)
                    return
                self._received = clock()  # the mute is not queue time
            frame = frames.next_frame()
            if frame is None:
                return
            self._pending.append(self._handle_frame(frame, self._received))

    def _make_room(self) -> bool:
        """A full pipeline whose first responses are ready: write them now (then one read
        of many small requests takes one write per ``_MAX_PIPELINE`` responses)."""
        if self._pending and self._pending[0].outcome is not None:
            self._write_ready()
            return self._may_take_requests()
        return False

    def _unmuted(self) -> None:
        self._unmute = None
        self._received = clock()
        self._pump()

    def _handle_frame(self, frame: memoryview, received: float) -> TimedRequest:
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
        timed = TimedRequest(api_key, received, correlation_id)
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
        timed.called = clock()
        outcome = handler(context, request.body)
        timed.returned = timed.done = clock()
        quotas = services.quotas
        if quotas is not None and quotas.active:
            timed.throttle_ms = after_request(
                quotas, self._throttle, session.principal, request.header, request.body, api_key,
                len(frame), timed.returned - timed.called)
        if isinstance(outcome, Deferred):
            timed.deferred = outcome
            self._wait_for(timed, outcome.future)
        elif is_awaitable(outcome):
            self._wait_for(timed, asyncio.ensure_future(outcome))
        else:
            timed.outcome = encode_answer(timed, outcome, self._requests)
        return timed

    def _raw_sasl_token(self, frame: memoryview, received: float) -> TimedRequest:
        """After a v0 SaslHandshake the frames are bare SASL tokens, not requests."""
        # no cycle: hoist when issue 23 reworks this module
        from .handlers.sasl import sasl_token_outcome

        timed = TimedRequest(ApiKey.SASL_AUTHENTICATE, received)
        context = RequestContext(self._services, _RAW_TOKEN_HEADER, self.listener, self.peer,
                                 self.session)
        self._wait_for(timed, asyncio.ensure_future(sasl_token_outcome(context, bytes(frame))))
        return timed

    def _wait_for(self, timed: TimedRequest, future: asyncio.Future[Any]) -> None:
        timed.waiting = future
        future.add_done_callback(partial(self._answered, timed))

    def _answered(self, timed: TimedRequest, future: asyncio.Future[Any]) -> None:
        """A pending answer completed: write it, and whatever ready ones queued behind it."""
        if timed.waiting is not future or self._transport is None:
            return  # discarded: the connection closed meanwhile
        timed.waiting = None
        timed.done = clock()
        try:
            result = future.result()
            deferred = timed.deferred
            answer = deferred.respond(result) if deferred is not None else result
            timed.outcome = encode_answer(timed, answer, self._requests)
        except asyncio.CancelledError:
            log.debug("connection %s: a pending answer was cancelled; closing", self.peer)
            self.abort()
            return
        except Exception:
            log.exception("request handling failed on %s; closing the connection", self.peer)
            self.abort()
            return
        if self._pending and self._pending[0] is timed:
            self._pump()

    def _write_ready(self) -> None:
        """Write the answered requests at the head of the pipeline, in one write."""
        pending, stream = self._pending, self._stream
        ready: list[tuple[Sequence[Chunk], TimedRequest]] = []
        try:
            while pending and (outcome := pending[0].outcome) is not None:
                timed = pending.popleft()
                if outcome is NO_RESPONSE:
                    observe(timed, self._requests)
                    continue
                if outcome is CLOSE_CONNECTION:
                    reason = self.session.close_reason or "a failed acks=0 produce"
                    log.info("closing connection from %s after %s", self.peer, reason)
                    self._stop_after_answered()
                    return
                assert not isinstance(outcome, Marker)
                ready.append((outcome, timed))
                if self.session.close_reason is not None:
                    log.info("closing connection from %s after %s", self.peer,
                             self.session.close_reason)
                    self._stop_after_answered()
                    return
        finally:
            if ready and stream is not None and self._transport is not None:
                try:
                    stream.send(ready)
                except OSError as exc:  # a broken socket, or a record file cut short
                    self._broken(exc)

    # --- pausing and closing

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        wanted = self._may_take_requests()
        if wanted != self._reading:
            self._reading = wanted
            if wanted:
                transport.resume_reading()
            else:
                transport.pause_reading()

    def _stop_after_answered(self) -> None:
        """Take no more requests and drop those not yet answered; close once written."""
        self._stopping = True
        self._discard_pending()

    def _close_when_answered(self) -> None:
        transport, stream = self._transport, self._stream
        if (self._stopping and not self._pending and transport is not None
                and stream is not None and stream.idle):
            transport.close()  # after what the transport still buffers

    def _discard_pending(self) -> None:
        """Cancel answers nobody will write (the connection is going away)."""
        while self._pending:
            timed = self._pending.popleft()
            future, timed.waiting = timed.waiting, None  # its callback then knows to do nothing
            if future is not None:
                future.cancel()

    def _broken(self, exc: OSError) -> None:
        log.debug("connection %s write failed: %s", self.peer, exc)
        self._stopping = True
        self.abort()
