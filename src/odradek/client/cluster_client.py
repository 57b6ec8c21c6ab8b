"""The shared core of producer, consumer and admin: connections per broker + metadata cache.

One :class:`ClusterClient` owns one connection per broker (opened lazily, reopened after a
failure with backoff) and the current :class:`ClusterMetadata`. Metadata is refreshed on demand
(``await refresh_metadata()``), when a caller reports a stale leader
(:meth:`invalidate` after NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION / a broken
connection), and every ``metadata.max.age.ms``. Concurrent refreshes are coalesced into one
request.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey

from .connection import Connection, NodeAddress
from .errors import AuthenticationError, BrokerResponseError, ConnectionFailed, KafkaClientError
from .metadata import ClusterMetadata
from .security import PLAINTEXT, ClientSecurity

__all__ = ["ClusterClient", "parse_bootstrap"]

log = logging.getLogger(__name__)

#: Error codes after which the cached leader for a partition must not be trusted.
STALE_METADATA_CODES = frozenset({
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.leader_not_available,
    ErrorCode.not_leader_or_follower,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_leader_epoch,
})


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` (or a list) → [(host, port)]; raises ValueError on bad input."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bad bootstrap server {item!r}: expected HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap servers given")
    return out


class ClusterClient:
    def __init__(self, bootstrap_servers: str | Iterable[str], *, client_id: str = "odradek",
                 request_timeout_ms: int = 30_000, metadata_max_age_ms: int = 300_000,
                 retry_backoff_ms: int = 100, connect_timeout_ms: int = 10_000,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.security = security
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.connect_timeout = connect_timeout_ms / 1000
        self.metadata = ClusterMetadata()
        self._connections: dict[int, Connection] = {}
        self._connecting: dict[int, asyncio.Task[Connection]] = {}
        self._bootstrap_conn: Connection | None = None
        self._topics: set[str] = set()
        self._all_topics = False
        self._refresh_task: asyncio.Task[ClusterMetadata] | None = None
        self._last_refresh = 0.0
        self._stale = True
        self._closed = False
        self._failures: dict[int, float] = {}
        self.metadata_updated = asyncio.Event()
        self._extra_addresses: dict[int, NodeAddress] = {}
        self._bootstrap_lock = asyncio.Lock()

    # ------------------------------------------------------------------ connections

    def connected(self, node_id: int) -> Connection | None:
        """The open connection to ``node_id`` if there is one (no waiting, no opening)."""
        conn = self._connections.get(node_id)
        return conn if conn is not None and not conn.closed else None

    async def connection(self, node_id: int, address: NodeAddress | None = None
                         ) -> Connection:
        """The live connection to ``node_id`` (opening it if needed, at ``address`` if
        given, else where the metadata says)."""
        conn = self._connections.get(node_id)
        if conn is not None and not conn.closed:
            return conn
        if self._closed:
            raise ConnectionFailed("client is closed")
        task = self._connecting.get(node_id)
        if task is not None and task.done() and not task.cancelled() \
                and task.exception() is None and task.result().closed:
            task = None  # a finished open whose connection has since died
        if task is None:
            address = (address or self.metadata.brokers.get(node_id)
                       or self._extra_addresses.get(node_id))
            if address is None:
                await self.refresh_metadata()
                address = self.metadata.brokers.get(node_id)
                if address is None:
                    raise ConnectionFailed(f"broker {node_id} is not in the cluster metadata")
            task = asyncio.get_running_loop().create_task(self._open(address))
            self._connecting[node_id] = task
        try:
            return await asyncio.shield(task)
        finally:
            if task.done():
                self._connecting.pop(node_id, None)

    async def _open(self, address: NodeAddress) -> Connection:
        # Back off after a failure so a dead broker is not hammered by every caller.
        failed_at = self._failures.get(address.node_id)
        if failed_at is not None:
            delay = self.retry_backoff - (monotonic_s() - failed_at)
            if delay > 0:
                await asyncio.sleep(delay)
        try:
            conn = await Connection.open(address, self.client_id, self.connect_timeout,
                                         self.security)
        except KafkaClientError:
            self._failures[address.node_id] = monotonic_s()
            self._stale = True
            raise
        self._failures.pop(address.node_id, None)
        if self._closed:  # close() ran while we connected (its cancel may have been lost)
            conn.close()
            raise ConnectionFailed("client is closed")
        self._connections[address.node_id] = conn
        return conn

    def drop_connection(self, node_id: int) -> None:
        conn = self._connections.pop(node_id, None)
        if conn is not None:
            conn.close()
        self._stale = True

    async def any_connection(self) -> Connection:
        """A connection to some broker: a known one if possible, else a bootstrap server."""
        for conn in list(self._connections.values()):
            if not conn.closed:
                return conn
        if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
            return self._bootstrap_conn
        async with self._bootstrap_lock:
            return await self._any_connection()

    async def _any_connection(self) -> Connection:
        for conn in list(self._connections.values()):
            if not conn.closed:
                return conn
        if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
            return self._bootstrap_conn
        brokers = list(self.metadata.brokers.values())
        random.shuffle(brokers)
        for address in brokers:
            try:
                # With the address: connection() must not refresh metadata here, since a
                # refresh needs _bootstrap_lock, which our caller holds (a deadlock).
                return await self.connection(address.node_id, address)
            except KafkaClientError:
                continue
        errors = []
        for host, port in self.bootstrap:
            try:
                conn = await Connection.open(NodeAddress(-1, host, port), self.client_id,
                                             self.connect_timeout, self.security)
            except AuthenticationError:
                raise  # the next bootstrap server would refuse the same credentials
            except KafkaClientError as exc:
                errors.append(str(exc))
                continue
            self._bootstrap_conn = conn
            return conn
        raise ConnectionFailed("no broker reachable: " + "; ".join(errors))

    async def send(self, node_id: int | None, api_key: int, body: Mapping[str, Any], *,
                   version: int | None = None) -> Any:
        """One request to ``node_id`` (None: any broker), bounded by ``request.timeout.ms``.
        A connection failure or timeout closes that connection."""
        conn = await (self.any_connection() if node_id is None else self.connection(node_id))
        try:
            return await asyncio.wait_for(conn.send(api_key, body, version=version),
                                          self.request_timeout)
        except TimeoutError:
            conn.close(ConnectionFailed(f"request to {conn.address} timed out"))
            raise ConnectionFailed(
                f"{ApiKey(api_key).name} to {conn.address} timed out after "
                f"{self.request_timeout:.0f}s") from None
        except ConnectionFailed:
            self._stale = True
            raise

    # ------------------------------------------------------------------ metadata

    def add_topics(self, topics: Iterable[str]) -> bool:
        """Track ``topics`` in future refreshes; True if any was new."""
        new = set(topics) - self._topics
        self._topics |= new
        if new:
            self._stale = True
        return bool(new)

    def track_all_topics(self) -> None:
        self._all_topics = True
        self._stale = True

    def invalidate(self) -> None:
        """Mark the metadata stale (a leader moved, a topic appeared, a broker died)."""
        self._stale = True

    @property
    def needs_refresh(self) -> bool:
        return self._stale or monotonic_s() - self._last_refresh > self.metadata_max_age

    async def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Fetch metadata for the tracked topics (plus ``topics``); coalesced when concurrent."""
        if topics is not None:
            self.add_topics(topics)
        task = self._refresh_task
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._refresh())
            self._refresh_task = task
        return await asyncio.shield(task)

    async def maybe_refresh(self) -> ClusterMetadata:
        if self.needs_refresh:
            return await self.refresh_metadata()
        return self.metadata

    async def _refresh(self) -> ClusterMetadata:
        self._stale = False
        names = None if self._all_topics else sorted(self._topics)
        body = {
            "topics": None if names is None else [{"name": n, "topic_id": None} for n in names],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }
        last: Exception | None = None
        for attempt in range(3):
            try:
                response = await self.send(None, ApiKey.METADATA, body)
                break
            except KafkaClientError as exc:
                last = exc
                if self._bootstrap_conn is not None:
                    self._bootstrap_conn.close()
                    self._bootstrap_conn = None
                for node_id in list(self._connections):
                    if self._connections[node_id].closed:
                        self._connections.pop(node_id)
                await asyncio.sleep(self.retry_backoff * (attempt + 1))
        else:
            self._stale = True
            raise ConnectionFailed(f"metadata refresh failed: {last}") from last
        self.metadata = ClusterMetadata.from_response(response, self.metadata,
                                                      full=names is None)
        self._last_refresh = monotonic_s()
        # Connections to brokers that left the cluster are closed.
        for node_id in list(self._connections):
            if node_id not in self.metadata.brokers:
                self.drop_connection(node_id)
        self.metadata_updated.set()
        self.metadata_updated = asyncio.Event()
        return self.metadata

    async def wait_for_topics(self, topics: Iterable[str], timeout: float) -> ClusterMetadata:
        """Refresh until every topic has metadata with leaders (or ``timeout`` passes)."""
        wanted = set(topics)
        deadline = monotonic_s() + timeout
        while True:
            metadata = await self.refresh_metadata(wanted)
            if all(metadata.available_partitions(t) for t in wanted):
                return metadata
            if monotonic_s() >= deadline:
                return metadata
            await asyncio.sleep(self.retry_backoff)

    async def controller_id(self) -> int:
        metadata = await self.maybe_refresh()
        if metadata.controller_id < 0:
            metadata = await self.refresh_metadata()
        return metadata.controller_id

    async def find_coordinator(self, group_id: str, attempts: int = 10, *,
                               key_type: int = 0) -> int:
        """Node id of ``group_id``'s group coordinator (FindCoordinator, key type 0; key
        type 1 finds a ``transactional.id``'s transaction coordinator), retrying while the
        coordinator is loading or not yet available."""
        last: BaseException | None = None
        for attempt in range(attempts):
            try:
                response = await self.send(None, ApiKey.FIND_COORDINATOR,
                                           {"key": group_id, "key_type": key_type})
            except KafkaClientError as exc:
                last = exc
            else:
                code = response.error_code
                if code == ErrorCode.none:
                    node = int(response.node_id)
                    self._extra_addresses[node] = NodeAddress(node, response.host,
                                                              int(response.port))
                    return node
                last = BrokerResponseError(code, f"FindCoordinator {group_id!r}",
                                           getattr(response, "error_message", None))
                if not last.retriable:
                    raise last
            await asyncio.sleep(self.retry_backoff * min(attempt + 1, 5))
        raise last or ConnectionFailed("FindCoordinator failed")

    async def close(self, timeout: float = 5.0) -> None:
        """Close every connection; waits at most ``timeout`` seconds for their read loops."""
        self._closed = True
        for task in self._connecting.values():
            task.cancel()
        if self._refresh_task is not None:
            self._refresh_task.cancel()
        conns = list(self._connections.values())
        if self._bootstrap_conn is not None:
            conns.append(self._bootstrap_conn)
        for conn in conns:
            conn.close()
        deadline = monotonic_s() + timeout
        for conn in conns:
            await conn.wait_closed(max(deadline - monotonic_s(), 0))
        self._connections.clear()
