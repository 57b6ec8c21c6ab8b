"""Connection probes (a refused reconnect is a dead process; a timeout is not) and what the
controller does with them, on real sockets and a real ZooKeeper."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Callable

from odradek.cluster import BrokerInfo, ZkSession
from odradek.cluster.liveness import ConnectionProbes, ProbeTarget
from odradek.cluster.registry import BrokerRegistry
from odradek.cluster.znodes import encode_entity_config, encode_topic_assignment
from odradek.config_sections import ControllerConfig
from tests.cluster.support import DEADLINE, SHORT_SESSION_MS, group, run
from tests.cluster.test_controller import state_of
from tests.harness.zk import read_json, zk_client


def _listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    return sock


class _Server:
    """A listening socket that accepts (like a running broker) until closed, then resets
    every connection it accepted (like the kernel of a killed process)."""

    def __init__(self) -> None:
        self.sock = _listener()
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.task = asyncio.create_task(self._accept())

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(self.sock)
            self.accepted.append(conn)

    def kill(self) -> None:
        self.task.cancel()
        self.sock.close()
        for conn in self.accepted:
            conn.close()


def _target(port: int, broker_id: int = 7, epoch: int = 1) -> ProbeTarget:
    return ProbeTarget(broker_id, epoch, "127.0.0.1", port)


async def _until(predicate: Callable[[], bool], timeout: float = DEADLINE) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


def test_a_killed_process_is_reported_once_within_milliseconds() -> None:
    async def body() -> None:
        dead: list[ProbeTarget] = []
        probes = ConnectionProbes(dead.append)
        server = _Server()
        try:
            probes.update([_target(server.port)])
            await probes.settled(5)
            await _until(lambda: len(server.accepted) == 1, 5)
            assert dead == []
            loop = asyncio.get_running_loop()
            killed = loop.time()
            server.kill()
            await _until(lambda: bool(dead), 5)
            assert loop.time() - killed < 1.0
            await asyncio.sleep(0.2)
            assert dead == [_target(server.port)], "reported exactly once"
        finally:
            server.kill()
            await probes.close()

    run(body())


def test_a_paused_or_unreachable_broker_is_never_reported() -> None:
    async def body() -> None:
        dead: list[ProbeTarget] = []
        probes = ConnectionProbes(dead.append, connect_timeout_s=0.2, retry_s=0.1)
        paused = _listener()  # listens but never accepts: the kernel still completes connects
        # A full accept queue drops new handshakes: connects time out, as across a partition.
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(0)
        fillers = _fill_accept_queue(silent)
        try:
            probes.update([_target(paused.getsockname()[1], 1),
                           _target(silent.getsockname()[1], 2)])
            await probes.settled(5)
            await asyncio.sleep(1.5)
            assert dead == [], "a timeout or a pause is not evidence of death"
        finally:
            for sock in (paused, silent, *fillers):
                sock.close()
            await probes.close()

    run(body())


def _fill_accept_queue(listener: socket.socket) -> list[socket.socket]:
    fillers: list[socket.socket] = []
    while len(fillers) < 8:
        try:
            fillers.append(socket.create_connection(listener.getsockname(), timeout=0.3))
        except TimeoutError:
            return fillers
    raise AssertionError("the accept queue never filled up")


def test_nothing_listening_is_dead_and_a_new_registration_is_probed_afresh() -> None:
    async def body() -> None:
        dead: list[ProbeTarget] = []
        probes = ConnectionProbes(dead.append)
        port = _listener_port_then_closed()
        try:
            probes.update([_target(port, epoch=1)])
            await _until(lambda: bool(dead), 5)
            server = _Server()
            probes.update([_target(server.port, epoch=2)])  # re-registered elsewhere
            await probes.settled(5)
            await asyncio.sleep(0.2)
            assert dead == [_target(port, epoch=1)]
            server.kill()
        finally:
            await probes.close()

    run(body())


def _listener_port_then_closed() -> int:
    sock = _listener()
    port = int(sock.getsockname()[1])
    sock.close()
    return port


async def _register(connect: str, broker_id: int, port: int) -> ZkSession:
    session = ZkSession(connect, session_timeout_ms=SHORT_SESSION_MS)
    await session.start()
    await BrokerRegistry(session, broker_id).register(BrokerInfo(broker_id, "127.0.0.1", port))
    return session


def test_controller_fails_a_refusing_broker_at_once_and_keeps_its_ghost_out(
    zk_connect: str,
) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1, controller=ControllerConfig(fast_failover_enable=True))
            await a.view.wait_for(lambda s: s.controller_id == 1, DEADLINE)
            server = _Server()
            ghost = await _register(zk_connect, 2, server.port)
            g.sessions.append(ghost)
            with zk_client(zk_connect) as zk:
                zk.create("/config/topics/moving", encode_entity_config({}))
                zk.create("/brokers/topics/moving",
                          encode_topic_assignment(uuid.uuid4(), {0: [2, 1]}))
            await state_of(a, "moving", 0, leader=2, isr=(2, 1))

            server.kill()  # broker 2's process "dies"; its session lives on
            await state_of(a, "moving", 0, leader=1, isr=(1,))
            with zk_client(zk_connect) as zk:
                assert zk.exists("/brokers/ids/2") is not None, "moved before session expiry"
                # The ghost registration is never elected: a new partition it should lead
                # waits, and reconcile passes (this topic triggers one) leave it out.
                zk.create("/config/topics/ghostly", encode_entity_config({}))
                zk.create("/brokers/topics/ghostly",
                          encode_topic_assignment(uuid.uuid4(), {0: [2]}))
            await asyncio.sleep(1.0)
            with zk_client(zk_connect) as zk:
                assert read_json(zk, "/brokers/topics/ghostly/partitions/0/state") is None

            # Once the old registration is gone, the broker registers anew: live again.
            await ghost.stop()
            g.sessions.remove(ghost)
            server = _Server()
            g.sessions.append(await _register(zk_connect, 2, server.port))
            await state_of(a, "ghostly", 0, leader=2)
            server.kill()

    run(body())
