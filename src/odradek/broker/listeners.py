"""The broker's listeners: bound sockets, accept loops, TLS handshakes, and the connections
they accepted.

Each listener serves its security protocol (``listener.security.protocol.map``): PLAINTEXT
and SASL_PLAINTEXT connections start at once on a :class:`~.socket_channel.SocketChannel`;
SSL and SASL_SSL connections first complete a TLS handshake (in its own task, bounded in
time, so a slow or hostile peer never stalls accepting) on a
:class:`~.tls_channel.TlsChannel`. Every connection gets a
:class:`~.authenticator.ConnectionSession` — its principal and, on SASL listeners, the
login it must complete first.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING

from odradek.config_sections import BrokerSections
from odradek.config_security import uses_tls
from odradek.protocol.framing import DEFAULT_MAX_FRAME_BYTES
from odradek.security.tls import TlsSettings, principal_of_certificate, server_context

from .authenticator import ConnectionSession, CredentialLookup
from .connection import Connection
from .context import BrokerServices
from .socket_channel import SocketChannel
from .tls_channel import TlsChannel

if TYPE_CHECKING:
    from odradek.metrics import BrokerMetrics

    from .dispatch import Handler

__all__ = ["Listeners"]

log = logging.getLogger(__name__)

_LISTEN_BACKLOG = 1024
_TLS_HANDSHAKE_TIMEOUT_S = 10.0


class Listeners:
    """``bind()`` (ports known, nothing accepted yet), ``start()``, then ``stop_accepting()``
    and ``close_connections()`` at shutdown. ``sections`` is read at each accept, so a new
    configuration (SASL mechanisms, limits) applies to connections accepted afterwards;
    sockets, protocols and the TLS context are those of ``bind()``."""

    def __init__(self, sections: Callable[[], BrokerSections], metrics: BrokerMetrics,
                 user_config: CredentialLookup) -> None:
        self._sections = sections
        self._metrics = metrics
        self._user_config = user_config
        self._sockets: list[tuple[str, socket.socket]] = []
        self._accept_tasks: list[asyncio.Task[None]] = []
        self._handshakes: set[asyncio.Task[None]] = set()
        self._tls_contexts: dict[str, ssl.SSLContext] = {}  # per TLS listener
        self._stopping = False
        self.connections: dict[asyncio.Task[None], Connection] = {}
        self.bound_ports: dict[str, int] = {}
        # Fixed at bind time, like the sockets and the TLS context: a changed
        # listener.security.protocol.map applies at the next start.
        self._protocols: dict[str, str] = {}

    def bind(self) -> None:
        sections = self._sections()
        security, network = sections.security, sections.network
        for listener in network.listeners:
            own = sections.security_of(listener.name)  # listener.name.<l>.ssl.* where set
            if uses_tls(security.protocol_of(listener.name)):
                settings = TlsSettings(own.tls_properties())
                self._tls_contexts[listener.name] = server_context(settings)
            host = listener.host or "0.0.0.0"
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            send, receive = network.socket_send_buffer_bytes, network.socket_receive_buffer_bytes
            if send > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send)
            if receive > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive)
            sock.bind((host, listener.port))
            sock.listen(_LISTEN_BACKLOG)
            sock.setblocking(False)
            self._sockets.append((listener.name, sock))
            self.bound_ports[listener.name] = sock.getsockname()[1]
            self._protocols[listener.name] = security.protocol_of(listener.name)

    def start(self, services: BrokerServices, handlers: dict[int, Handler]) -> None:
        for name, sock in self._sockets:
            self._accept_tasks.append(asyncio.create_task(
                self._accept_loop(name, sock, services, handlers), name=f"accept {name}"))

    def stop_accepting(self) -> None:
        """No new connections; those already accepted stop reading (and answer what they
        already read)."""
        self._stopping = True
        for task in (*self._accept_tasks, *self._handshakes):
            task.cancel()
        for _name, sock in self._sockets:
            sock.close()
        for connection in self.connections.values():
            connection.stop_reading()

    async def close_connections(self, grace_s: float) -> None:
        """Wait up to ``grace_s`` for connections to finish; cancel the rest."""
        if self.connections:
            _done, pending = await asyncio.wait(list(self.connections), timeout=grace_s)
            for task in pending:
                task.cancel()

    async def _accept_loop(self, name: str, server: socket.socket, services: BrokerServices,
                           handlers: dict[int, Handler]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _address = await loop.sock_accept(server)
            except OSError as exc:
                if self._stopping:
                    return
                log.warning("accept on %s failed: %s", name, exc)
                await asyncio.sleep(0.1)  # e.g. EMFILE: back off instead of spinning
                continue
            protocol = self._protocols[name]
            if uses_tls(protocol):
                handshake = asyncio.create_task(
                    self._serve_tls(name, protocol, sock, services, handlers),
                    name=f"tls handshake {name}")
                self._handshakes.add(handshake)
                handshake.add_done_callback(self._handshakes.discard)
                continue
            self._serve(name, protocol, SocketChannel(sock), services, handlers, None)

    async def _serve_tls(self, name: str, protocol: str, sock: socket.socket,
                         services: BrokerServices, handlers: dict[int, Handler]) -> None:
        try:
            channel = await TlsChannel.accept(sock, self._tls_contexts[name],
                                              _TLS_HANDSHAKE_TIMEOUT_S)
        except TimeoutError:
            # Also what the controller's liveness probes look like (they connect and wait).
            log.debug("TLS handshake on %s timed out", name)
            return
        except (OSError, ssl.SSLError) as exc:
            log.info("TLS handshake on %s failed: %s", name, exc)
            return
        principal = principal_of_certificate(channel.peer_certificate())
        self._serve(name, protocol, channel, services, handlers, principal)

    def _serve(self, name: str, protocol: str, channel: SocketChannel | TlsChannel,
               services: BrokerServices,
               handlers: dict[int, Handler], principal: str | None) -> None:
        """Run one accepted (and, for TLS, handshaken) connection as a task."""
        sections = self._sections()
        max_frame = sections.network.socket_request_max_bytes or DEFAULT_MAX_FRAME_BYTES
        session = ConnectionSession.for_listener(protocol, sections.security_of(name),
                                                 self._user_config, principal)
        connection = Connection(channel, services, handlers, listener=name, peer=channel.peer,
                                max_frame_bytes=max_frame, session=session)
        task = asyncio.create_task(connection.run(), name=f"conn {channel.peer}")
        self.connections[task] = connection
        self._metrics.connections.opened(name)
        task.add_done_callback(self._connection_done)

    def _connection_done(self, task: asyncio.Task[None]) -> None:
        connection = self.connections.pop(task, None)
        if connection is not None:
            self._metrics.connections.closed(connection.listener)
        if not task.cancelled() and task.exception() is not None:
            log.error("connection task failed", exc_info=task.exception())
