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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from odradek.protocol.api_versions import ApiKey, is_advertised
from odradek.protocol.errors import KafkaProtocolViolation, UnsupportedApi
from odradek.protocol.framing import FrameReader
from odradek.protocol.messages import decode_request, peek_ids
from odradek.protocol.negotiation import unsupported_api_versions_frame

from .context import BrokerServices, RequestContext
from .dispatch import CLOSE_CONNECTION, NO_RESPONSE, Handler, is_awaitable, to_chunks
from .socket_channel import ByteChannel

__all__ = ["Connection"]

log = logging.getLogger(__name__)

_READ_SIZE = 256 * 1024
_MAX_PIPELINE = 64
_CLOSE = object()


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
    ) -> None:
        self._channel = channel
        self._services = services
        self._handlers = handlers
        self._listener = listener
        self.peer = peer
        self._frames = FrameReader(max_frame_bytes)
        self._pipeline: asyncio.Queue[Any] = asyncio.Queue(_MAX_PIPELINE)
        self._reader_stopped = asyncio.Event()
        self._receiving = False
        self._task: asyncio.Task[Any] | None = None

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
            self._frames.receive_data(view[:count])
            while (frame := self._frames.next_frame()) is not None:
                if self._reader_stopped.is_set():
                    return
                await self._pipeline.put(self._handle_frame(frame))

    def _handle_frame(self, frame: memoryview) -> Any:
        api_key, api_version, correlation_id = peek_ids(frame)
        if api_key == ApiKey.API_VERSIONS and not is_advertised(api_key, api_version):
            return [unsupported_api_versions_frame(correlation_id)]
        if not is_advertised(api_key, api_version):
            raise UnsupportedApi(
                f"api key {api_key} version {api_version} is not supported "
                f"(correlation id {correlation_id})"
            )
        request = decode_request(frame)
        handler = self._handlers[api_key]
        context = RequestContext(self._services, request.header, self._listener, self.peer)
        outcome = handler(context, request.body)
        if is_awaitable(outcome):
            return asyncio.ensure_future(self._finish(correlation_id, outcome))
        return to_chunks(correlation_id, outcome)

    @staticmethod
    async def _finish(correlation_id: int, pending: Awaitable[Any]) -> Any:
        return to_chunks(correlation_id, await pending)

    async def _write_loop(self) -> None:
        try:
            while True:
                item = await self._pipeline.get()
                if item is _CLOSE:
                    return
                if isinstance(item, asyncio.Future):
                    item = await item
                if item is NO_RESPONSE:
                    continue
                if item is CLOSE_CONNECTION:
                    log.info("closing connection from %s after a failed acks=0 produce", self.peer)
                    self.stop_reading()
                    return
                await self._channel.write_chunks(item)
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
            if isinstance(item, asyncio.Future):
                item.cancel()
