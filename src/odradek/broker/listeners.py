"""The broker's listeners: bound sockets, accept loops, TLS handshakes, and the connections
they accepted.

Each listener serves its security protocol (``listener.security.protocol.map``): an
accepted socket becomes a transport of the running loop with a :class:`~.connection.Connection`
as its protocol — at once for PLAINTEXT and SASL_PLAINTEXT, after a TLS handshake (the loop's
SSL transport, in its own task, bounded in time, so a slow or hostile peer never stalls
accepting) for SSL and SASL_SSL. Every connection gets a
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
from odradek.security.tls import TlsSettings, server_context

from .authenticator import ConnectionSession, CredentialLookup
from .connection import Connection
from .context import BrokerServices

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
        self.connections: set[Connection] = set()
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
        for connection in list(self.connections):
            connection.stop_reading()

    async def close_connections(self, grace_s: float) -> None:
        """Wait up to ``grace_s`` for connections to finish; abort the rest."""
        if self.connections:
            await asyncio.wait([connection.closed for connection in self.connections],
                               timeout=grace_s)
            for connection in list(self.connections):
                connection.abort()
            await asyncio.sleep(0)  # their connection_lost, before the loop may stop

    def opened(self, connection: Connection) -> None:
        self.connections.add(connection)
        self._metrics.connections.opened(connection.listener)
        if self._stopping:  # its TLS handshake finished while the broker stopped accepting
            connection.stop_reading()

    def closed(self, connection: Connection) -> None:
        self.connections.discard(connection)
        self._metrics.connections.closed(connection.listener)

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
            if name in self._tls_contexts:
                handshake = asyncio.create_task(self._serve(name, sock, services, handlers),
                                                name=f"tls handshake {name}")
                self._handshakes.add(handshake)
                handshake.add_done_callback(self._handshakes.discard)
                continue
            await self._serve(name, sock, services, handlers)

    async def _serve(self, name: str, sock: socket.socket, services: BrokerServices,
                     handlers: dict[int, Handler]) -> None:
        """Make an accepted socket a transport with a connection as its protocol (for TLS,
        once the handshake completed; the connection registers itself when made). The
        transport owns the socket from here on, and closes it when this fails."""
        sections = self._sections()
        max_frame = sections.network.socket_request_max_bytes or DEFAULT_MAX_FRAME_BYTES
        session = ConnectionSession.for_listener(self._protocols[name], sections.security_of(name),
                                                 self._user_config)

        def connection() -> Connection:
            return Connection(services, handlers, listener=name, max_frame_bytes=max_frame,
                              tracker=self, session=session)

        context = self._tls_contexts.get(name)
        accepted = asyncio.get_running_loop().connect_accepted_socket(connection, sock,
                                                                      ssl=context)
        try:
            await asyncio.wait_for(accepted, _TLS_HANDSHAKE_TIMEOUT_S)
        except TimeoutError:
            # Also what the controller's liveness probes look like (they connect and wait).
            log.debug("TLS handshake on %s timed out", name)
        except (OSError, ssl.SSLError) as exc:
            log.info("%s on %s failed: %s", "TLS handshake" if context else "accept", name, exc)
