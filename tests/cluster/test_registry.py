"""Broker registration, cluster id and session handling against a real ZooKeeper."""

from __future__ import annotations

import asyncio

import pytest

from odradek.cluster import BrokerIdInUse, BrokerInfo, Endpoint, SessionEvent, ZooKeeperUnavailable
from odradek.cluster.registry import BrokerRegistry
from odradek.cluster.zk import ZkSession, split_connect
from odradek.cluster.znodes import PERSISTENT_PATHS
from tests.cluster.support import (
    broker_info,
    eventually,
    expire_session,
    group,
    run,
)
from tests.harness.zk import read_json, zk_client


def test_split_connect_separates_hosts_and_chroot() -> None:
    assert split_connect("h1:2181,h2:2181/a/b/") == ("h1:2181,h2:2181", "/a/b")
    assert split_connect("h:2181") == ("h:2181", "")
    assert split_connect("h:2181/") == ("h:2181", "")


def test_registration_writes_kafka_broker_json_in_created_chroot(zk_connect: str) -> None:
    chroot_connect = zk_connect + "/nested/deeper"

    async def body() -> None:
        async with group(chroot_connect) as g:
            session = await g.broker(7, rack="r1")
            with zk_client(chroot_connect) as zk:
                registration = read_json(zk, "/brokers/ids/7")
                _, stat = zk.get("/brokers/ids/7")
                assert stat.ephemeralOwner == session.session_id
        timestamp = registration.pop("timestamp")
        assert timestamp.isdigit()
        assert registration == {
            "features": {},
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "endpoints": ["PLAINTEXT://localhost:9097"],
            "jmx_port": -1,
            "port": 9097,
            "host": "localhost",
            "version": 5,
            "rack": "r1",
        }

    run(body())


def test_registration_omits_rack_and_lists_every_listener(zk_connect: str) -> None:
    info = BrokerInfo(
        3,
        "h",
        9092,
        endpoints=(Endpoint("PLAINTEXT", "h", 9092), Endpoint("INTERNAL", "10.0.0.1", 9093)),
    )

    async def body() -> None:
        session = ZkSession(zk_connect)
        await session.start()
        try:
            await BrokerRegistry(session, 3).register(info)
            with zk_client(zk_connect) as zk:
                registration = read_json(zk, "/brokers/ids/3")
        finally:
            await session.stop()
        assert "rack" not in registration
        assert registration["endpoints"] == ["PLAINTEXT://h:9092", "INTERNAL://10.0.0.1:9093"]
        assert registration["listener_security_protocol_map"] == {
            "PLAINTEXT": "PLAINTEXT",
            "INTERNAL": "PLAINTEXT",
        }

    run(body())


def test_second_broker_with_same_id_is_refused(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            await g.broker(1)
            with pytest.raises(BrokerIdInUse, match=r"broker\.id 1 is already registered"):
                await g.broker(1)

    run(body())


def test_registration_disappears_when_the_session_closes(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            session = await g.broker(4)
            await session.stop()
            with zk_client(zk_connect) as zk:
                assert zk.exists("/brokers/ids/4") is None

    run(body())


def test_broker_registers_again_after_session_expiry(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            session = await g.broker(5)
            old_session = session.session_id
            new_session = asyncio.Event()
            session.add_listener(
                lambda e: new_session.set() if e is SessionEvent.NEW_SESSION else None
            )
            await asyncio.to_thread(expire_session, zk_connect, session)
            await asyncio.wait_for(new_session.wait(), 20)
            assert session.session_id != old_session

            def registered_by_new_session() -> bool:
                with zk_client(zk_connect) as zk:
                    stat = zk.exists("/brokers/ids/5")
                    return stat is not None and stat.ephemeralOwner == session.session_id

            await eventually(registered_by_new_session, what="re-registration")

    run(body())


def test_all_brokers_share_one_cluster_id(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            b = await g.cluster(2)
            with zk_client(zk_connect) as zk:
                stored = read_json(zk, "/cluster/id")
                missing = [p for p in PERSISTENT_PATHS if zk.exists(p) is None]
        assert missing == [], "Kafka's top-level znodes were not created"
        assert stored == {"version": "1", "id": a.cluster_id}
        assert b.cluster_id == a.cluster_id
        assert len(a.cluster_id) == 22 and not a.cluster_id.startswith("-")
        assert a.view.cluster_id == a.cluster_id

    run(body())


def test_unreachable_zookeeper_is_a_clear_error() -> None:
    async def body() -> None:
        session = ZkSession("127.0.0.1:1", connection_timeout_ms=500)
        with pytest.raises(ZooKeeperUnavailable, match="could not connect"):
            await session.start()

    run(body())


def test_broker_info_defaults_to_one_plaintext_endpoint() -> None:
    assert broker_info(2).endpoints == (Endpoint("PLAINTEXT", "localhost", 9092),)


def test_restart_waits_for_the_ghost_registration_of_a_killed_broker(zk_connect: str) -> None:
    """A broker killed with SIGKILL leaves its registration until its session expires; the
    restarted broker waits for it instead of failing."""

    async def body() -> None:
        with zk_client(zk_connect) as ghost:
            ghost.create("/brokers/ids/5", b"{}", ephemeral=True, makepath=True)
            async with group(zk_connect) as g:
                registering = asyncio.ensure_future(g.broker(5))
                await asyncio.sleep(0.5)
                assert not registering.done(), "must wait while the old session lives"
                await asyncio.to_thread(ghost.stop)  # the old session ends
                session = await asyncio.wait_for(registering, 10)
                with zk_client(zk_connect) as zk:
                    _, stat = zk.get("/brokers/ids/5")
                assert stat.ephemeralOwner == session.session_id

    run(body())
