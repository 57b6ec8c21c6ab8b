"""Broker registration (``/brokers/ids/<id>``) and the shared cluster id (``/cluster/id``).

A broker is alive exactly while its ephemeral ``/brokers/ids/<id>`` exists: the controller
and every broker's :class:`~odradek.cluster.view.ClusterView` watch that directory. The
znode belongs to the ZooKeeper session that created it, which gives two rules:

* At startup, an existing node owned by *another* live session means a second broker was
  started with the same ``broker.id``: :class:`BrokerIdInUse`, a clear startup error (the
  same check as Kafka's ``checkedEphemeralCreate``). A node owned by our own session is
  ours (a retried create whose first reply was lost).
* When our session expires the server deletes the node; on the next session we create it
  again, otherwise the cluster would consider us dead while we keep serving.

The registration's ``czxid`` is Kafka's *broker epoch*: it grows on every registration, so
a request from a previous incarnation of a broker can be told apart later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from odradek.cluster import znodes
from odradek.cluster.model import BrokerInfo
from odradek.cluster.zk import SessionEvent, ZkSession

log = logging.getLogger(__name__)


class BrokerIdInUse(Exception):
    """Another live broker already registered this ``broker.id``."""


class BrokerRegistry:
    def __init__(self, session: ZkSession, broker_id: int, *, jmx_port: int = -1) -> None:
        self.session = session
        self.broker_id = broker_id
        self.jmx_port = jmx_port
        self.broker_epoch: int | None = None
        self._info: BrokerInfo | None = None
        self._reregister: asyncio.Task[None] | None = None
        session.add_listener(self._on_session_event)

    async def ensure_layout(self) -> None:
        """Create Kafka's persistent top-level znodes (idempotent, safe to race)."""
        client = self.session.client

        def create_all() -> None:
            for path in znodes.PERSISTENT_PATHS:
                client.ensure_path(path)

        await self.session.call(create_all)

    async def ensure_cluster_id(self) -> str:
        """Read ``/cluster/id``, creating it with a fresh id if this is a new cluster."""
        client = self.session.client

        def get_or_create() -> str:
            try:
                data, _ = client.get(znodes.CLUSTER_ID)
                return znodes.decode_cluster_id(data)
            except NoNodeError:
                pass
            cluster_id = znodes.uuid_to_base64(znodes.random_kafka_uuid())
            try:
                client.create(
                    znodes.CLUSTER_ID, znodes.encode_cluster_id(cluster_id), makepath=True
                )
                return cluster_id
            except NodeExistsError:  # another broker won the race; use its id
                data, _ = client.get(znodes.CLUSTER_ID)
                return znodes.decode_cluster_id(data)

        return await self.session.call(get_or_create)

    async def register(self, info: BrokerInfo) -> int:
        """Create our ephemeral registration; returns the broker epoch.

        A registration owned by another session is most often the ghost of this very
        broker, killed moments ago: its session lives on until ZooKeeper expires it. So we
        wait up to 1.5 session timeouts for it to vanish before failing with
        :class:`BrokerIdInUse` — a crashed broker restarted at once by its supervisor comes
        back, while two live brokers with one id still fail loudly.
        """
        if info.id != self.broker_id:
            raise ValueError(f"BrokerInfo.id {info.id} differs from broker.id {self.broker_id}")
        self._info = info
        loop = asyncio.get_running_loop()
        patience = 1.5 * self.session.session_timeout_ms / 1000
        deadline = loop.time() + patience
        warned = False
        while True:
            try:
                self.broker_epoch = await self.session.call(self._create_registration, info)
                break
            except BrokerIdInUse as exc:
                if loop.time() > deadline:
                    raise
                if not warned:
                    log.warning("%s; waiting up to %.0f s for that session to expire",
                                exc, patience)
                    warned = True
            await asyncio.sleep(0.2)
        log.info("registered broker %d (epoch %d)", self.broker_id, self.broker_epoch)
        return self.broker_epoch

    def _create_registration(self, info: BrokerInfo) -> int:
        client = self.session.client
        path = znodes.broker_path(self.broker_id)
        data = znodes.encode_broker(info, jmx_port=self.jmx_port)
        with contextlib.suppress(NodeExistsError):
            client.create(path, data, ephemeral=True, makepath=True)
        try:
            _, stat = client.get(path)
        except NoNodeError as exc:  # deleted between create and read: owner just died
            raise BrokerIdInUse(f"broker.id {self.broker_id}: registration vanished") from exc
        if stat.ephemeralOwner != self.session.session_id:
            raise BrokerIdInUse(
                f"broker.id {self.broker_id} is already registered by another live broker "
                f"(ZooKeeper session 0x{stat.ephemeralOwner:x}); give each broker a unique "
                f"broker.id"
            )
        return int(stat.czxid)

    def _on_session_event(self, event: SessionEvent) -> None:
        idle = self._reregister is None or self._reregister.done()
        if event is SessionEvent.NEW_SESSION and self._info is not None and idle:
            self._reregister = asyncio.create_task(self._register_again(self._info))

    async def _register_again(self, info: BrokerInfo) -> None:
        # The node of our expired session is already gone server-side; a node of another
        # session means a same-id broker started meanwhile (register waits for it to die).
        while self._info is info:
            try:
                await self.register(info)
                return
            except BrokerIdInUse:
                log.error("cannot re-register broker %d: id in use", self.broker_id)
                return
            except KazooException:
                log.warning("re-registration of broker %d failed; retrying", self.broker_id)
            await asyncio.sleep(0.2)
