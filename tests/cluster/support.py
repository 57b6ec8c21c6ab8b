"""Helpers for the cluster tests: ZkCluster groups torn down on exit, raw ZooKeeper access,
bounded waits (no sleeps), session expiry."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient

from odradek.cluster import BrokerInfo, ZkCluster, ZkSession
from odradek.cluster.registry import BrokerRegistry

T = TypeVar("T")
DEADLINE = 20.0
SHORT_SESSION_MS = 4000


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await asyncio.wait_for(coro, 60)

    return asyncio.run(main())


def broker_info(broker_id: int, rack: str | None = None) -> BrokerInfo:
    return BrokerInfo(broker_id, "localhost", 9090 + broker_id, rack)






class Group:
    """Starts ZkClusters and bare broker registrations; stops all of them on exit."""

    def __init__(self, connect: str) -> None:
        self.connect = connect
        self.clusters: list[ZkCluster] = []
        self.sessions: list[ZkSession] = []

    async def cluster(self, broker_id: int, *, register: bool = True, **kwargs: Any) -> ZkCluster:
        kwargs.setdefault("session_timeout_ms", SHORT_SESSION_MS)
        cluster = ZkCluster(self.connect, broker_id, **kwargs)
        self.clusters.append(cluster)
        await cluster.start()
        if register:
            await cluster.register_broker(broker_info(broker_id))
        return cluster

    async def broker(self, broker_id: int, rack: str | None = None) -> ZkSession:
        """A broker that is only a registration (its session closes when it 'dies')."""
        session = ZkSession(self.connect, session_timeout_ms=SHORT_SESSION_MS)
        self.sessions.append(session)
        await session.start()
        await BrokerRegistry(session, broker_id).register(broker_info(broker_id, rack))
        return session

    async def close(self) -> None:
        for cluster in self.clusters:
            await cluster.stop()
        for session in self.sessions:
            await session.stop()


@contextlib.asynccontextmanager
async def group(connect: str) -> AsyncIterator[Group]:
    g = Group(connect)
    try:
        yield g
    finally:
        await g.close()


async def eventually(check: Callable[[], T], timeout: float = DEADLINE, what: str = "") -> T:
    """Poll ``check`` (run in a thread; may block on ZooKeeper) until it returns a truthy
    value or raises nothing; fail with the last result after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while True:
        try:
            last = await asyncio.to_thread(check)
            if last:
                return last
        except (AssertionError, LookupError) as exc:
            last = exc
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}: last={last!r}")
        await asyncio.sleep(0.02)


def expire_session(connect: str, session: ZkSession) -> None:
    """Expire ``session`` server-side: attach a second client to the same session id and
    password and close it (the server then ends the session; the owner sees it expired)."""
    session_id, password = session.client.client_id
    intruder = KazooClient(hosts=connect, client_id=(session_id, password), timeout=10)
    intruder.start(15)
    intruder.stop()
    intruder.close()
