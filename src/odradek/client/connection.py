"""One asyncio connection to one broker: framing, correlation ids, version negotiation.

Kafka answers the requests of a connection in the order they were sent, so pending requests
sit in a FIFO and every response must match the head's correlation id (a mismatch means the
stream is corrupt and the connection is closed). ``acks=0`` produce requests get no response
at all; they are written and never queued.

On open the connection sends ApiVersions at the newest version we know (v3); a broker that
does not know it answers in the v0 layout with UNSUPPORTED_VERSION and its own range, and we
retry at that version. :meth:`Connection.version` then gives, per API, the highest version
both sides support.

Writes go straight to the transport; :meth:`Connection.send` awaits ``drain`` only when the
transport buffer is above its high-water mark, so many small requests cost no extra await.

A request may carry an ``on_response`` callback (:meth:`Connection.send_encoded_nowait`),
run by the read loop as soon as the answer is parsed, before its future resolves: the
replica fetcher applies a Fetch answer and sends the next Fetch there, in the turn the answer
arrived, instead of one event-loop hand-off later in its own task.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import build
from odradek.protocol.messages import decode_response, encode_request, request_type

from .errors import ConnectionFailed, UnsupportedByBroker, raise_for_code
from .security import PLAINTEXT, ClientSecurity, open_stream
from .versions import CLIENT_VERSIONS

__all__ = ["Connection", "NodeAddress"]

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_API_VERSIONS_MAX = CLIENT_VERSIONS[ApiKey.API_VERSIONS][1]
_RETIRE_FRACTION = 0.8  # of a SASL session's lifetime (Kafka's clients re-auth at 85-95 %)


ResponseCallback = Callable[[Any], None]
"""Told a request's parsed response (a kio dataclass) in the read loop."""

_Pending = tuple[int, int, int, asyncio.Future[Any], ResponseCallback | None]
"""(correlation id, api key, version, future, on_response) of a request awaiting its answer."""


@dataclass(frozen=True, slots=True)
class NodeAddress:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id {self.node_id})"


class Connection:
    """A connected, negotiated broker connection. Create with :meth:`open`."""

    def __init__(self, address: NodeAddress, client_id: str,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.address = address
        self.client_id = client_id
        self._reader = reader
        self._writer = writer
        self._next_id = 0
        self._pending: collections.deque[_Pending] = collections.deque()
        self._versions: dict[int, int] = {}
        self._closed: BaseException | None = None
        self._read_task: asyncio.Task[None] | None = None
        self._retire_at: float | None = None

    @classmethod
    async def open(cls, address: NodeAddress, client_id: str = "odradek",
                   timeout: float = 10.0, security: ClientSecurity = PLAINTEXT) -> Connection:
        """Connect, with TLS and SASL when ``security`` says so, and negotiate versions."""
        try:
            stream = await asyncio.wait_for(
                open_stream(address.host, address.port, security, client_id), timeout)
        except (TimeoutError, OSError) as exc:
            raise ConnectionFailed(f"cannot connect to {address}: {exc}") from exc
        conn = cls(address, client_id, stream.reader, stream.writer)
        if stream.session_lifetime_ms > 0:
            lifetime_s = stream.session_lifetime_ms / 1000
            conn._retire_at = monotonic_s() + _RETIRE_FRACTION * lifetime_s
        conn._read_task = asyncio.get_running_loop().create_task(conn._read_loop())
        try:
            await asyncio.wait_for(conn._negotiate(), timeout)
        except BaseException as exc:
            conn.close(exc)
            if isinstance(exc, asyncio.TimeoutError):
                raise ConnectionFailed(f"{address}: ApiVersions timed out") from exc
            raise
        return conn

    # ------------------------------------------------------------------ negotiation

    async def _negotiate(self) -> None:
        version = _API_VERSIONS_MAX
        while True:
            body = {"client_software_name": "odradek", "client_software_version": "0"}
            frame = self._frame(ApiKey.API_VERSIONS, version, body)
            future = self._enqueue(ApiKey.API_VERSIONS, version, frame)
            try:
                response = await future
            except _ApiVersionsDowngrade as downgrade:
                version = downgrade.version
                continue
            raise_for_code(response.error_code, "ApiVersions")
            ours = CLIENT_VERSIONS
            for entry in response.api_keys:
                mine = ours.get(int(entry.api_key))
                if mine is None:
                    continue
                low = max(mine[0], int(entry.min_version))
                high = min(mine[1], int(entry.max_version))
                if low <= high:
                    self._versions[int(entry.api_key)] = high
            return

    def supports(self, api_key: int) -> bool:
        return api_key in self._versions

    def version(self, api_key: int) -> int:
        """Highest version both sides support; :class:`UnsupportedByBroker` if none."""
        try:
            return self._versions[api_key]
        except KeyError:
            name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else api_key
            raise UnsupportedByBroker(
                f"{self.address} supports no version of {name} this client speaks") from None

    # ------------------------------------------------------------------ requests

    @property
    def closed(self) -> bool:
        """Closed — or retired: a SASL session near the end of its lifetime is closed once
        idle, so callers open a new (newly authenticated) connection instead of being
        disconnected by the broker (odradek does not re-authenticate in place)."""
        if self._retire_at is not None and self._closed is None and not self._pending \
                and monotonic_s() >= self._retire_at:
            self.close(ConnectionFailed(f"{self.address}: SASL session lifetime is over"))
        return self._closed is not None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def _frame(self, api_key: int, version: int, body: Mapping[str, Any] | Any) -> bytes:
        entity = request_type(api_key, version)
        request = build(entity, body) if isinstance(body, Mapping) else body
        return encode_request(request, self._take_correlation_id(), self.client_id)

    def _take_correlation_id(self) -> int:
        correlation_id = self._next_id
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        return correlation_id

    def _enqueue(self, api_key: int, version: int, frame: bytes,
                 expect_response: bool = True,
                 on_response: ResponseCallback | None = None) -> asyncio.Future[Any]:
        if self._closed is not None:
            raise ConnectionFailed(f"connection to {self.address} is closed: {self._closed}")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._writer.write(frame)
        if expect_response:
            correlation_id = _SIZE.unpack_from(frame, 8)[0]
            self._pending.append((correlation_id, api_key, version, future, on_response))
        else:
            future.set_result(None)
        return future

    async def send(self, api_key: int, body: Mapping[str, Any], *,
                   version: int | None = None, expect_response: bool = True) -> Any:
        """Send one request and return its parsed response (a kio dataclass).

        ``body`` is a dict for :func:`~odradek.protocol.builder.build`; ``version`` defaults to the
        negotiated one. With ``expect_response=False`` (acks=0) returns None once written.
        """
        future = self.send_nowait(api_key, body, version=version,
                                  expect_response=expect_response)
        return await self._drained(future)

    def send_encoded_nowait(self, api_key: int, version: int,
                            encode: Callable[[int, str | None], bytes], *,
                            on_response: ResponseCallback | None = None) -> asyncio.Future[Any]:
        """Write a request the caller lays out itself (the replica fetcher's Fetch):
        ``encode(correlation_id, client_id)`` returns the whole frame. The future resolves
        to the response; ``on_response(response)``, if given, runs first, in the read loop
        (what it raises becomes the future's exception). No backpressure: for small
        requests whose answers are awaited before many more are sent."""
        frame = encode(self._take_correlation_id(), self.client_id)
        return self._enqueue(api_key, version, frame, on_response=on_response)

    async def _drained(self, future: asyncio.Future[Any]) -> Any:
        transport = self._writer.transport
        if transport.get_write_buffer_size() > 1 << 20:
            try:
                await self._writer.drain()
            except (OSError, RuntimeError) as exc:
                self.close(exc)
        return await future

    def send_nowait(self, api_key: int, body: Mapping[str, Any], *,
                    version: int | None = None, expect_response: bool = True
                    ) -> asyncio.Future[Any]:
        """Write the request now; the future resolves to the response (no backpressure)."""
        if version is None:
            version = self.version(api_key)
        frame = self._frame(api_key, version, body)
        return self._enqueue(api_key, version, frame, expect_response)

    # ------------------------------------------------------------------ reading

    async def _read_loop(self) -> None:
        reader = self._reader
        try:
            while True:
                size = _SIZE.unpack(await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                if not self._pending:
                    raise ConnectionFailed(f"{self.address} sent a response nobody asked for")
                correlation_id, api_key, version, future, on_response = self._pending.popleft()
                got = _SIZE.unpack_from(frame, 0)[0]
                if got != correlation_id:
                    raise ConnectionFailed(
                        f"{self.address}: correlation id {got}, expected {correlation_id}")
                if future.done():
                    continue
                try:
                    if api_key == ApiKey.API_VERSIONS:
                        response = _parse_api_versions(frame, version)
                    else:
                        response = decode_response(frame, api_key, version)[1]
                except _ApiVersionsDowngrade as exc:
                    future.set_exception(exc)
                    continue
                except Exception as exc:  # a decode failure is this request's failure only
                    future.set_exception(ConnectionFailed(
                        f"cannot parse {ApiKey(api_key).name} v{version} response: {exc}"))
                    continue
                if on_response is not None:
                    try:
                        on_response(response)
                    except Exception as exc:  # the requester's failure, not the connection's
                        future.set_exception(exc)
                        continue
                future.set_result(response)
        except (asyncio.IncompleteReadError, OSError) as exc:
            self.close(ConnectionFailed(f"connection to {self.address} lost: {exc!r}"))
        except ConnectionFailed as exc:
            self.close(exc)
        except Exception as exc:
            # Anything else (a corrupt frame size, a bug) must still fail the pending
            # requests: a read loop that dies silently leaves their futures unresolved.
            log.error("read loop for %s failed", self.address, exc_info=True)
            self.close(ConnectionFailed(f"connection to {self.address} broke: {exc!r}"))
        except asyncio.CancelledError:
            self.close(ConnectionFailed(f"connection to {self.address} closed"))
            raise

    def close(self, reason: BaseException | None = None) -> None:
        """Close the socket and fail every pending request with :class:`ConnectionFailed`."""
        if self._closed is not None:
            return
        if not isinstance(reason, ConnectionFailed):
            reason = ConnectionFailed(f"connection to {self.address} closed"
                                      + (f": {reason}" if reason else ""))
        self._closed = reason
        while self._pending:
            future = self._pending.popleft()[3]
            if not future.done():
                future.set_exception(reason)
        self._writer.close()
        if self._read_task is not None and self._read_task is not asyncio.current_task():
            self._read_task.cancel()

    async def wait_closed(self, timeout: float | None = None) -> None:
        """Wait for the read loop to end (at most ``timeout`` seconds)."""
        if self._read_task is not None and not self._read_task.done():
            await asyncio.wait([self._read_task], timeout=timeout)


class _ApiVersionsDowngrade(Exception):
    def __init__(self, version: int) -> None:
        super().__init__(f"retry ApiVersions at v{version}")
        self.version = version


def _parse_api_versions(frame: bytes, version: int) -> Any:  # kio response type
    # Error 35 comes in the v0 layout whatever version we asked: int16 error, then the array.
    error = struct.unpack_from(">h", frame, 4)[0]
    if error == 35 and version > 0:
        response: Any = decode_response(frame, ApiKey.API_VERSIONS, 0)[1]
        for entry in response.api_keys:
            if int(entry.api_key) == ApiKey.API_VERSIONS:
                raise _ApiVersionsDowngrade(min(int(entry.max_version), version - 1))
        raise _ApiVersionsDowngrade(0)
    return decode_response(frame, ApiKey.API_VERSIONS, version)[1]
