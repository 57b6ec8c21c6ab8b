"""ClusterView: the cluster metadata every broker serves, kept current by ZooKeeper watches.

What is watched, and why:

* ``/brokers/ids`` children and each ``/brokers/ids/<id>`` — live brokers and endpoints;
* ``/controller`` — who the controller is (Metadata responses carry it);
* ``/brokers/topics`` children and each ``/brokers/topics/<t>`` — topics, ids, assignments;
* every ``/brokers/topics/<t>/partitions/<p>/state`` — leader, epoch, ISR (an *exists*
  watch while the controller has not created it yet);
* each ``/config/topics/<t>`` and the ``/config/changes`` notifications Kafka's tools write;
* ``/config/brokers`` children and each ``/config/brokers/<id|<default>>`` — dynamic broker
  configs (every broker computes its effective config from them);
* client quotas under ``/config/users`` and ``/config/clients``: read whole at start and
  after a reconnect, then one entity per ``/config/changes`` notification naming it (as
  Kafka's brokers follow them: no watch on every entity).

Watches are one-shot and arrive on kazoo's thread: each only marks a *key* dirty on the
loop. A single task re-reads the dirty keys in a worker thread (re-arming their watches),
builds a new immutable :class:`ClusterSnapshot` from the previous one and swaps it in, then
tells listeners what changed. Readers on the loop always see one whole snapshot — take
``view.snapshot`` once when several fields must agree. After a connection drop (kazoo
forgets its watchers) or a new session, everything is re-read.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, KazooException, NoNodeError, SessionExpiredError
from kazoo.protocol.states import EventType, WatchedEvent, ZnodeStat

from odradek.cluster import znodes
from odradek.cluster.client_quotas import read_all_client_quotas, read_client_quotas
from odradek.cluster.model import (
    NO_LEADER,
    BrokerInfo,
    PartitionRegistration,
    TopicMetadata,
    TopicPartition,
    frozen_mapping,
)
from odradek.cluster.zk import SessionEvent, ZkSession
from odradek.quota.entities import QuotaEntity

log = logging.getLogger(__name__)

Key = tuple[Any, ...]
ALL: Key = ("all",)
BROKERS: Key = ("brokers",)
CONTROLLER: Key = ("controller",)
TOPICS: Key = ("topics",)
CHANGES: Key = ("changes",)
BROKER_CONFIGS: Key = ("broker_configs",)
CLIENT_QUOTAS: Key = ("client_quotas",)


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    cluster_id: str = ""
    controller_id: int | None = None
    brokers: Mapping[int, BrokerInfo] = field(default_factory=frozen_mapping)
    topics: Mapping[str, TopicMetadata] = field(default_factory=frozen_mapping)
    # broker id -> broker epoch (the registration's czxid): which incarnation is live
    broker_epochs: Mapping[int, int] = field(default_factory=frozen_mapping)
    # ZooKeeper entity ("0", "<default>") -> its dynamic broker configs
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=frozen_mapping)
    # quota entity -> its stored config (odradek.cluster.client_quotas)
    client_quotas: Mapping[QuotaEntity, Mapping[str, str]] = field(
        default_factory=frozen_mapping)


@dataclass(frozen=True, slots=True)
class ClusterChange:
    """What one snapshot swap changed (ids of added, removed or modified things)."""

    brokers: frozenset[int] = frozenset()
    topics: frozenset[str] = frozenset()
    partitions: frozenset[TopicPartition] = frozenset()
    configs: frozenset[str] = frozenset()
    controller: bool = False
    broker_configs: frozenset[str] = frozenset()  # entities whose dynamic configs changed
    client_quotas: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.brokers or self.topics or self.partitions or self.configs or self.controller
            or self.broker_configs or self.client_quotas
        )


def _diff(old: ClusterSnapshot, new: ClusterSnapshot) -> ClusterChange:
    brokers = {
        b
        for b in old.brokers.keys() | new.brokers.keys()
        if old.brokers.get(b) != new.brokers.get(b)
        or old.broker_epochs.get(b) != new.broker_epochs.get(b)
    }
    topics = set(old.topics.keys() ^ new.topics.keys())
    partitions: set[TopicPartition] = set()
    configs: set[str] = set()
    for name in old.topics.keys() | new.topics.keys():
        before, after = old.topics.get(name), new.topics.get(name)
        before_parts = before.partitions if before else {}
        after_parts = after.partitions if after else {}
        for p in before_parts.keys() | after_parts.keys():
            if before_parts.get(p) != after_parts.get(p):
                partitions.add(TopicPartition(name, p))
        if before and after:
            if before.topic_id != after.topic_id:
                topics.add(name)
            if before.config != after.config:
                configs.add(name)
    entities = {
        e
        for e in old.broker_configs.keys() | new.broker_configs.keys()
        if old.broker_configs.get(e) != new.broker_configs.get(e)
    }
    return ClusterChange(
        brokers=frozenset(brokers),
        topics=frozenset(topics),
        partitions=frozenset(partitions),
        configs=frozenset(configs),
        controller=old.controller_id != new.controller_id,
        broker_configs=frozenset(entities),
        client_quotas=old.client_quotas != new.client_quotas,
    )


class ClusterView:
    def __init__(self, session: ZkSession) -> None:
        self.session = session
        self._snapshot = ClusterSnapshot()
        self._listeners: list[Callable[[ClusterChange], None]] = []
        self._dirty: set[Key] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # The newest /config/changes notification handled; None until the first read (which
        # reads everything anyway), "" when there were none then.
        self._last_change_seen: str | None = None
        self._watch = session.watcher(self._on_watch)
        session.add_listener(self._on_session_event)

    # -- reading -------------------------------------------------------------------------------

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    @property
    def brokers(self) -> Mapping[int, BrokerInfo]:
        return self._snapshot.brokers

    @property
    def topics(self) -> Mapping[str, TopicMetadata]:
        return self._snapshot.topics

    @property
    def controller_id(self) -> int | None:
        return self._snapshot.controller_id

    @property
    def cluster_id(self) -> str:
        return self._snapshot.cluster_id

    def add_listener(self, callback: Callable[[ClusterChange], None]) -> None:
        """``callback(change)`` runs on the loop after each snapshot swap."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[ClusterChange], None]) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(callback)

    async def wait_for(
        self, predicate: Callable[[ClusterSnapshot], bool], timeout: float
    ) -> ClusterSnapshot:
        """The first snapshot satisfying ``predicate``; TimeoutError after ``timeout`` s."""
        if predicate(self._snapshot):
            return self._snapshot
        ready: asyncio.Future[ClusterSnapshot] = asyncio.get_running_loop().create_future()

        def check(_: ClusterChange) -> None:
            if not ready.done() and predicate(self._snapshot):
                ready.set_result(self._snapshot)

        self.add_listener(check)
        try:
            return await asyncio.wait_for(ready, timeout)
        finally:
            self.remove_listener(check)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Read everything once (so the view is complete on return), then follow changes."""
        await self._refresh({ALL})
        self._task = asyncio.create_task(self._run(), name="cluster-view")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _mark(self, key: Key) -> None:
        self._dirty.add(key)
        self._wake.set()

    def _on_session_event(self, event: SessionEvent) -> None:
        if event in (SessionEvent.NEW_SESSION, SessionEvent.RECONNECTED):
            self._mark(ALL)

    def _on_watch(self, event: WatchedEvent) -> None:
        if event.type == EventType.NONE or not event.path:
            return  # connection-state notification; the session listener re-reads all
        parts = event.path.strip("/").split("/")
        if parts[:2] == ["brokers", "ids"]:
            self._mark(BROKERS)
        elif event.path == znodes.BROKER_TOPICS:
            self._mark(TOPICS)
        elif parts[:2] == ["brokers", "topics"] and len(parts) == 3:
            self._mark(("topic", parts[2]))
        elif parts[:2] == ["brokers", "topics"] and len(parts) == 6 and parts[5] == "state":
            self._mark(("state", parts[2], int(parts[4])))
        elif parts[:2] == ["config", "topics"] and len(parts) == 3:
            self._mark(("config", parts[2]))
        elif parts[:2] == ["config", "brokers"]:
            self._mark(("broker_config", parts[2]) if len(parts) == 3 else BROKER_CONFIGS)
        elif event.path == znodes.CONFIG_CHANGES:
            self._mark(CHANGES)
        elif event.path == znodes.CONTROLLER:
            self._mark(CONTROLLER)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            dirty, self._dirty = self._dirty, set()
            if not dirty:
                continue
            try:
                await self._refresh(dirty)
            except (ConnectionLoss, SessionExpiredError):
                self._dirty |= dirty
                await self.session.connected.wait()
                self._wake.set()
            except KazooException:
                log.exception("cluster view refresh failed; retrying")
                self._dirty |= dirty
                await asyncio.sleep(0.2)
                self._wake.set()

    async def _refresh(self, dirty: set[Key]) -> None:
        old = self._snapshot
        new = await self.session.call(_Reader(self, old).read, dirty)
        self._snapshot = new
        change = _diff(old, new)
        if change:
            for callback in list(self._listeners):
                try:
                    callback(change)
                except Exception:
                    log.exception("cluster view listener %r failed", callback)


class _Reader:
    """Reads dirty keys from ZooKeeper (in a worker thread) into a new snapshot."""

    def __init__(self, view: ClusterView, base: ClusterSnapshot) -> None:
        self.view = view
        self.client: KazooClient = view.session.client
        self.watch = view._watch
        self.cluster_id = base.cluster_id
        self.controller_id = base.controller_id
        self.brokers = dict(base.brokers)
        self.broker_epochs = dict(base.broker_epochs)
        self.broker_configs = dict(base.broker_configs)
        self.client_quotas = dict(base.client_quotas)
        self.topics = dict(base.topics)

    def read(self, dirty: set[Key]) -> ClusterSnapshot:
        if ALL in dirty:
            dirty = {BROKERS, CONTROLLER, TOPICS, CHANGES, BROKER_CONFIGS, CLIENT_QUOTAS,
                     ("cluster_id",)}
            self.topics = {}
        for key in sorted(dirty, key=lambda k: _ORDER.get(k[0], 9)):
            kind = key[0]
            if kind == "cluster_id":
                got = self._get(znodes.CLUSTER_ID, watch=False)
                self.cluster_id = znodes.decode_cluster_id(got[0]) if got else ""
            elif kind == "brokers":
                self._read_brokers()
            elif kind == "controller":
                got = self._get(znodes.CONTROLLER)
                self.controller_id = znodes.decode_controller(got[0]) if got else None
            elif kind == "topics":
                self._read_topics()
            elif kind == "changes":
                self._read_changes()
            elif kind == "topic" and key[1] in self.topics:
                self._read_topic(key[1])
            elif kind == "state" and key[1] in self.topics:
                self._read_state(key[1], key[2])
            elif kind == "config" and key[1] in self.topics:
                self._read_config(key[1])
            elif kind == "broker_configs":
                self._read_broker_configs()
            elif kind == "broker_config":
                self._read_broker_config(key[1])
            elif kind == "client_quotas":
                self.client_quotas = {entity: frozen_mapping(config) for entity, config
                                      in read_all_client_quotas(self.client).items()}
        return ClusterSnapshot(
            self.cluster_id,
            self.controller_id,
            frozen_mapping(dict(sorted(self.brokers.items()))),
            frozen_mapping(dict(sorted(self.topics.items()))),
            frozen_mapping(dict(sorted(self.broker_epochs.items()))),
            frozen_mapping(dict(sorted(self.broker_configs.items()))),
            frozen_mapping(self.client_quotas),
        )

    def _get(self, path: str, *, watch: bool = True) -> tuple[bytes, ZnodeStat] | None:
        """``get`` that, for a missing node, leaves an exists-watch to see its creation."""
        watcher = self.watch if watch else None
        while True:
            try:
                return self.client.get(path, watch=watcher)
            except NoNodeError:
                if self.client.exists(path, watch=watcher) is None:
                    return None

    def _read_brokers(self) -> None:
        brokers: dict[int, BrokerInfo] = {}
        epochs: dict[int, int] = {}
        for child in self.client.get_children(znodes.BROKER_IDS, watch=self.watch):
            try:
                data, stat = self.client.get(znodes.broker_path(int(child)), watch=self.watch)
            except NoNodeError:
                continue
            brokers[int(child)] = znodes.decode_broker(int(child), data)
            epochs[int(child)] = int(stat.czxid)
        self.brokers = brokers
        self.broker_epochs = epochs

    def _read_topics(self) -> None:
        names = set(self.client.get_children(znodes.BROKER_TOPICS, watch=self.watch))
        for gone in self.topics.keys() - names:
            del self.topics[gone]
        for name in sorted(names - self.topics.keys()):
            self._read_topic(name)

    def _read_topic(self, name: str) -> None:
        try:
            data, _ = self.client.get(znodes.topic_path(name), watch=self.watch)
        except NoNodeError:
            self.topics.pop(name, None)
            return
        topic_id, assignment = znodes.decode_topic_assignment(data)
        previous = self.topics.get(name)
        if previous is not None and topic_id != previous.topic_id:
            previous = None  # deleted and re-created under the same name
        partitions: dict[int, PartitionRegistration] = {}
        for p, replicas in sorted(assignment.items()):
            known = previous.partitions.get(p) if previous else None
            if known is not None and known.replicas == replicas:
                partitions[p] = known
            else:
                partitions[p] = self._partition_state(name, p, replicas)
        config = previous.config if previous else frozen_mapping(self._config(name))
        self.topics[name] = TopicMetadata(
            name, topic_id or uuid.UUID(int=0), frozen_mapping(partitions), config
        )

    def _partition_state(self, topic: str, p: int,
                         replicas: Sequence[int]) -> PartitionRegistration:
        got = self._get(znodes.partition_state_path(topic, p))
        if got is None:
            return PartitionRegistration(NO_LEADER, -1, (), tuple(replicas), -1)
        return znodes.decode_partition_state(got[0], replicas, got[1].version)

    def _read_state(self, topic: str, p: int) -> None:
        meta = self.topics[topic]
        known = meta.partitions.get(p)
        if known is None:
            return
        partitions = dict(meta.partitions)
        partitions[p] = self._partition_state(topic, p, known.replicas)
        self.topics[topic] = dataclasses.replace(meta, partitions=frozen_mapping(partitions))

    def _config(self, topic: str) -> dict[str, str]:
        got = self._get(znodes.topic_config_path(topic))
        return znodes.decode_entity_config(got[0]) if got else {}

    def _read_config(self, topic: str) -> None:
        meta = self.topics[topic]
        self.topics[topic] = dataclasses.replace(meta, config=frozen_mapping(self._config(topic)))

    def _read_changes(self) -> None:
        children = sorted(self.client.get_children(znodes.CONFIG_CHANGES, watch=self.watch))
        last = self.view._last_change_seen
        if last is not None:
            for child in children:
                if child <= last:
                    continue
                got = self._get(f"{znodes.CONFIG_CHANGES}/{child}", watch=False)
                entity = znodes.decode_config_change(got[0]) if got else ""
                kind, _, name = entity.partition("/")
                if kind == "topics" and name in self.topics:
                    self._read_config(name)
                elif kind == "brokers" and name:
                    self._read_broker_config(name)
                elif (quota_entity := QuotaEntity.from_zk_path(entity)) is not None:
                    self._read_client_quota(quota_entity)
        self.view._last_change_seen = children[-1] if children else (last or "")


    def _read_client_quota(self, entity: QuotaEntity) -> None:
        config = read_client_quotas(self.client, entity)
        if config:
            self.client_quotas[entity] = frozen_mapping(config)
        else:
            self.client_quotas.pop(entity, None)

    def _read_broker_configs(self) -> None:
        entities = self.client.get_children(znodes.CONFIG_BROKERS, watch=self.watch)
        for gone in self.broker_configs.keys() - set(entities):
            del self.broker_configs[gone]
        for entity in entities:
            self._read_broker_config(entity)

    def _read_broker_config(self, entity: str) -> None:
        got = self._get(znodes.broker_config_path(entity))
        if got is None:
            self.broker_configs.pop(entity, None)
            return
        try:
            config = znodes.decode_entity_config(got[0])
        except (ValueError, TypeError, AttributeError):
            log.error("ignoring unparseable dynamic config of broker entity %s", entity)
            config = {}
        self.broker_configs[entity] = frozen_mapping(config)


# Brokers and the topic list before per-topic keys, so a topic's keys see it present.
_ORDER = {"cluster_id": 0, "brokers": 1, "controller": 2, "topics": 3, "topic": 4, "changes": 5}
