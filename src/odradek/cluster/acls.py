"""ACLs in ZooKeeper: writes with change notifications, and every broker's live cache.

Writes (:func:`alter_acls`) are read-modify-write of one resource znode, conditional on its
version, with the change notification created in the same transaction — as Kafka's
AclAuthorizer does, so Kafka's brokers and tools see odradek's ACLs and the reverse. An
empty resource znode is deleted. Notifications older than 15 minutes are deleted by the
writer (Kafka's ``acl.change.notification.expiration``).

:class:`AclCache` (one per broker) reads every ACL once, then watches both notification
directories; each new notification re-reads the resource it names, so a change made
through any broker applies on every broker within a ZooKeeper round trip. After a
reconnect it re-reads everything (watches may have been lost). Reads happen in kazoo's
worker threads; the cache's mapping is swapped whole on the loop, so the authorizer reads
it without locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.protocol.states import EventType, WatchedEvent

from odradek.clock import wall_ms
from odradek.cluster import acl_znodes as paths
from odradek.cluster.zk import SessionEvent, ZkSession
from odradek.protocol.errors import UnknownServerError
from odradek.security.acl import (
    STORED_RESOURCE_TYPES,
    AccessControlEntry,
    PatternType,
    ResourcePattern,
)

__all__ = ["AclCache", "AclTable", "alter_acls", "read_all_acls"]

log = logging.getLogger(__name__)

AclTable = Mapping[ResourcePattern, frozenset[AccessControlEntry]]
Update = Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]

_ATTEMPTS = 20
_NOTIFICATION_TTL_S = 15 * 60


def ensure_layout(client: KazooClient) -> None:
    for path in (paths.LITERAL_ROOT, paths.EXTENDED_ROOT, paths.LITERAL_CHANGES,
                 paths.EXTENDED_CHANGES):
        client.ensure_path(path)


def read_resource(client: KazooClient, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
    try:
        data, _ = client.get(paths.resource_path(pattern))
    except NoNodeError:
        return frozenset()
    try:
        return paths.decode_acls(data)
    except (ValueError, KeyError, TypeError, AttributeError):
        log.error("ignoring the unreadable ACLs of %s", paths.resource_path(pattern))
        return frozenset()


def read_all_acls(client: KazooClient) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
    table: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        root = paths.root_of(pattern_type)
        for kind in STORED_RESOURCE_TYPES:
            try:
                names = client.get_children(f"{root}/{kind.spelling}")
            except NoNodeError:
                continue
            for name in names:
                try:
                    pattern = ResourcePattern(kind, name, pattern_type)
                except ValueError:
                    continue
                entries = read_resource(client, pattern)
                if entries:
                    table[pattern] = entries
    return table


def alter_acls(client: KazooClient, pattern: ResourcePattern,
               update: Update) -> frozenset[AccessControlEntry]:
    """Store ``update(current)`` as the ACLs of ``pattern``; returns what is stored."""
    path = paths.resource_path(pattern)
    for _ in range(_ATTEMPTS):
        try:
            data, stat = client.get(path)
            current, version = paths.decode_acls(data), stat.version
        except NoNodeError:
            current, version = frozenset(), -1
        wanted = frozenset(update(current))
        if wanted == current:
            return wanted
        client.ensure_path(path.rsplit("/", 1)[0])
        client.ensure_path(paths.changes_dir(pattern))
        txn = client.transaction()
        if version < 0:
            txn.create(path, paths.encode_acls(wanted))
        elif wanted:
            txn.set_data(path, paths.encode_acls(wanted), version=version)
        else:
            txn.delete(path, version=version)
        txn.create(f"{paths.changes_dir(pattern)}/{paths.CHANGE_PREFIX}",
                   paths.encode_change(pattern), sequence=True)
        results = txn.commit()
        if not any(isinstance(result, Exception) for result in results):
            _purge_old_notifications(client, paths.changes_dir(pattern))
            return wanted
        if not isinstance(results[0], (BadVersionError, NodeExistsError, NoNodeError)):
            raise UnknownServerError(f"writing {path} failed: {results!r}")
    raise UnknownServerError(f"{path} kept changing; retry")


def _purge_old_notifications(client: KazooClient, directory: str) -> None:
    cutoff_ms = wall_ms() - _NOTIFICATION_TTL_S * 1000
    with contextlib.suppress(KazooException):
        for child in client.get_children(directory):
            try:
                _, stat = client.get(f"{directory}/{child}")
                if stat.ctime < cutoff_ms:
                    client.delete(f"{directory}/{child}")
            except NoNodeError:
                continue


class AclCache:
    """Every ACL of the cluster, kept current from the change notifications."""

    def __init__(self, session: ZkSession) -> None:
        self.session = session
        self.acls: AclTable = {}
        self._seen: dict[str, str] = {}  # change directory -> newest notification handled
        self._full = True
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listeners: list[Callable[[], None]] = []
        self._lock = asyncio.Lock()  # one read at a time: notifications are marked seen
        self._watch = session.watcher(self._on_watch)
        session.add_listener(self._on_session_event)

    def add_listener(self, callback: Callable[[], None]) -> None:
        """``callback()`` runs on the loop after every change of :attr:`acls`."""
        self._listeners.append(callback)

    async def start(self) -> None:
        await self.session.call(ensure_layout, self.session.client)
        await self._refresh()
        self._task = asyncio.create_task(self._run(), name="acl-cache")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _on_session_event(self, event: SessionEvent) -> None:
        if event in (SessionEvent.NEW_SESSION, SessionEvent.RECONNECTED):
            self._full = True
            self._wake.set()

    def _on_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._refresh()
            except KazooException:
                log.warning("reading ACL changes failed; retrying", exc_info=True)
                await asyncio.sleep(0.5)
                self._wake.set()

    async def refresh_now(self) -> None:
        """Read the notifications now (after this broker's own write: its answer shows it)."""
        await self._refresh()

    async def _refresh(self) -> None:
        async with self._lock:
            full, self._full = self._full, False
            try:
                table = await self.session.call(self._read, dict(self.acls), full)
            except KazooException:
                self._full = self._full or full
                raise
            self._swap(table)

    def _swap(self, table: dict[ResourcePattern, frozenset[AccessControlEntry]]) -> None:
        if table != self.acls:
            self.acls = table
            for callback in list(self._listeners):
                try:
                    callback()
                except Exception:
                    log.exception("ACL listener %r failed", callback)

    def _read(self, table: dict[ResourcePattern, frozenset[AccessControlEntry]],
              full: bool) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
        """In a worker thread: set the watches, then read what the new notifications name
        (everything when ``full``)."""
        client = self.session.client
        changed: set[ResourcePattern] = set()
        for directory, extended in ((paths.LITERAL_CHANGES, False),
                                    (paths.EXTENDED_CHANGES, True)):
            children = sorted(client.get_children(directory, watch=self._watch))
            last = self._seen.get(directory, "")
            for child in children:
                if child <= last or full:
                    continue
                try:
                    data, _ = client.get(f"{directory}/{child}")
                    changed.add(paths.decode_change(data, extended))
                except NoNodeError:
                    full = True  # purged before we read it: something may be missed
                except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                    log.warning("ignoring unreadable ACL change notification %s/%s",
                                directory, child)
            if children:
                self._seen[directory] = children[-1]
        if full:
            return read_all_acls(client)
        for pattern in changed:
            entries = read_resource(client, pattern)
            if entries:
                table[pattern] = entries
            else:
                table.pop(pattern, None)
        return table

