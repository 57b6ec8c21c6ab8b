"""The ZooKeeper session: kazoo client setup and the bridge from kazoo's threads to asyncio.

kazoo runs its own connection thread and a callback thread; nothing in odradek may block
the event loop on them. The rules this module gives everyone else:

* Blocking kazoo calls run in a worker thread: ``await session.call(client.get, path)``.
* kazoo callbacks (watches, connection states) are re-posted to the loop with
  ``loop.call_soon_threadsafe``; :meth:`ZkSession.watcher` builds such a callback.
* Session lifecycle is reported as :class:`SessionEvent`: ``NEW_SESSION`` each time a
  session is established (the first time and after an expiry — ephemeral nodes and watches
  are gone, so owners re-create them), ``RECONNECTED`` when the same session resumes after
  a connection drop (kazoo drops its watcher tables then, so watch owners re-read),
  ``SUSPENDED`` and ``EXPIRED``.

``zookeeper.connect`` may carry a chroot (``host:2181,host2:2181/odradek``). ZooKeeper
requires the chroot to exist, so a short-lived client without chroot creates it first, as
Kafka does.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


class ZooKeeperUnavailable(Exception):
    """No ZooKeeper server answered within the connection timeout."""


class SessionEvent(enum.Enum):
    NEW_SESSION = "new_session"
    RECONNECTED = "reconnected"
    SUSPENDED = "suspended"
    EXPIRED = "expired"


def split_connect(connect: str) -> tuple[str, str]:
    """``"h1:2181,h2:2181/a/b"`` -> ``("h1:2181,h2:2181", "/a/b")``; chroot ``""`` if none."""
    hosts, slash, chroot = connect.strip().partition("/")
    if not hosts:
        raise ValueError(f"zookeeper.connect has no host: {connect!r}")
    chroot = ("/" + chroot.strip("/")) if slash and chroot.strip("/") else ""
    return hosts, chroot


class ZkSession:
    """One kazoo client bound to an asyncio loop."""

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
    ) -> None:
        self.hosts, self.chroot = split_connect(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_s = (connection_timeout_ms or session_timeout_ms) / 1000
        self.client = KazooClient(
            hosts=self.hosts + self.chroot,
            timeout=session_timeout_ms / 1000,
            connection_retry={"max_tries": -1, "max_delay": 1.0},
        )
        self.connected = asyncio.Event()
        self._listeners: list[Callable[[SessionEvent], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_lost = True  # so the first connection reports NEW_SESSION
        self._closing = False
        # Told (operation, seconds) after each call (the ZooKeeper latency metric); called
        # on the loop. The operation is the called function's name: a fixed, small set.
        self.on_request: Callable[[str, float], None] | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("ZkSession not started")
        return self._loop

    @property
    def session_id(self) -> int | None:
        client_id = self.client.client_id
        return client_id[0] if client_id else None

    def add_listener(self, callback: Callable[[SessionEvent], None]) -> None:
        """``callback(event)`` runs on the loop for every session lifecycle event."""
        self._listeners.append(callback)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.chroot:
            await asyncio.to_thread(self._ensure_chroot)
        self.client.add_listener(self._on_kazoo_state)
        try:
            await asyncio.to_thread(self.client.start, self.connection_timeout_s)
        except KazooTimeoutError as exc:
            await asyncio.to_thread(self._close_quietly, self.client)
            raise ZooKeeperUnavailable(
                f"could not connect to ZooKeeper at {self.hosts} within "
                f"{self.connection_timeout_s:g}s"
            ) from exc

    def _ensure_chroot(self) -> None:
        bootstrap = KazooClient(hosts=self.hosts, timeout=self.session_timeout_ms / 1000)
        try:
            bootstrap.start(self.connection_timeout_s)
        except KazooTimeoutError as exc:
            self._close_quietly(bootstrap)
            raise ZooKeeperUnavailable(
                f"could not connect to ZooKeeper at {self.hosts} within "
                f"{self.connection_timeout_s:g}s"
            ) from exc
        try:
            bootstrap.ensure_path(self.chroot)
        finally:
            self._close_quietly(bootstrap)

    @staticmethod
    def _close_quietly(client: KazooClient) -> None:
        try:
            client.stop()
            client.close()
        except Exception:  # closing is best effort; the session times out anyway
            log.debug("error closing ZooKeeper client", exc_info=True)

    async def stop(self) -> None:
        """Close the session: the server deletes our ephemeral nodes at once."""
        self._closing = True
        await asyncio.to_thread(self._close_quietly, self.client)
        self.connected.clear()

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a blocking kazoo call (or a function making several) in a worker thread."""
        on_request = self.on_request
        if on_request is None:
            return await asyncio.to_thread(fn, *args, **kwargs)
        started = time.perf_counter()
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        finally:
            on_request(getattr(fn, "__name__", "call"), time.perf_counter() - started)

    def post(self, callback: Callable[..., Any], *args: Any) -> None:
        """Schedule ``callback(*args)`` on the loop from any thread (dropped after close)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # loop closed between check and call
            loop.call_soon_threadsafe(callback, *args)

    def watcher(self, callback: Callable[[WatchedEvent], None]) -> Callable[[WatchedEvent], None]:
        """A kazoo watch function that delivers the event to ``callback`` on the loop."""

        def on_watch(event: WatchedEvent) -> None:
            self.post(callback, event)

        return on_watch

    # kazoo's connection thread calls this: it must not block and must not touch asyncio
    # objects directly.
    def _on_kazoo_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:
            event = SessionEvent.NEW_SESSION if self._session_lost else SessionEvent.RECONNECTED
            self._session_lost = False
        elif state == KazooState.SUSPENDED:
            event = SessionEvent.SUSPENDED
        else:
            self._session_lost = True
            if self._closing:
                return
            event = SessionEvent.EXPIRED
        self.post(self._dispatch, event)

    def _dispatch(self, event: SessionEvent) -> None:
        if event in (SessionEvent.NEW_SESSION, SessionEvent.RECONNECTED):
            self.connected.set()
        else:
            self.connected.clear()
        log.info("ZooKeeper session %s", event.value)
        for callback in list(self._listeners):
            try:
                callback(event)
            except Exception:
                log.exception("session listener %r failed", callback)
