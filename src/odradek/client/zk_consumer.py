"""The paper's consumer ("paper mode"): consumer groups coordinated through ZooKeeper alone.

Section 3.3 of the paper, as Kafka 0.8's ``ZookeeperConsumerConnector`` implemented it. No
broker takes part in coordination; consumers agree through three registries in ZooKeeper
(formats in :mod:`odradek.client.zk_registry`) and each one runs **Algorithm 1** whenever the
broker registry, the consumer registry of its group, or a subscribed topic's partitions
change (a ZooKeeper watch on each)::

    commit the offsets of what the application has processed
    release every partition we own (delete our ownership nodes), stop fetching
    read the broker and consumer registries (re-arming the watches)
    compute our partitions: the range assignment over sorted partitions and sorted
        consumer threads (assign_paper)
    wait until the brokers report a leader for each of them (a partition just added has
        none yet: there is no offset to start from until it has)
    claim each one in the ownership registry; if one is still owned by another consumer
        (it has not seen the change yet) release all and retry after a backoff — early when
        that owner node goes away — at most rebalance_max_retries times
    start each partition at its offset-registry entry (auto_offset_reset when there is
        none; that position is written to the registry at once)
    fetch them (the client's ordinary Fetcher, one pipelined Fetch per broker)

Delivery is at least once. Offsets are committed (auto-commit every
``auto_commit_interval_ms``, :meth:`commit`, on every rebalance before ownership is released,
on :meth:`close`) only for records the application has finished: those returned by the
previous ``poll`` (for ``for message in consumer:``, the previous batch, since the loop asks
for more only after processing what it got). A consumer that crashes leaves at most those
records past the last commit, and the next owner delivers them again.

Watch events and session changes arrive on the client's event loop; one task runs
rebalances, one commits on the interval; both hold one lock, so a commit never interleaves
with a rebalance.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.exceptions import KazooException, NodeExistsError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent

from odradek.clock import monotonic_s
from odradek.cluster.zk import SessionEvent, ZkSession, ZooKeeperUnavailable

from .aio import wait_event
from .batch_codec import ConsumerRecord
from .consumer import AsyncConsumer
from .errors import ClientClosed, KafkaClientError
from .metadata import TopicPartition
from .offsets import EARLIEST, LATEST
from .sync import run
from .zk_registry import (
    OwnershipConflict,
    assign_paper,
    claim_partitions,
    consumer_thread_ids,
    make_consumer_id,
    read_broker_bootstrap,
    read_group_view,
    read_offsets,
    register_consumer,
    release_partitions,
    unregister_consumer,
    write_offsets,
)

__all__ = ["AsyncZooKeeperConsumer", "RebalanceFailed", "ZooKeeperConsumer"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_RESETS = {"smallest": EARLIEST, "earliest": EARLIEST, "largest": LATEST, "latest": LATEST}
#: The longest a poll waits before looking at rebalance state again.
_POLL_SLICE_S = 0.2
_LEADER_POLL_S = 0.1  # how often a rebalance asks whether new partitions have leaders


class RebalanceFailed(KafkaClientError):
    """Algorithm 1 did not complete within ``rebalance_max_retries`` attempts (Kafka 0.8's
    ``ConsumerRebalanceFailedException``). The consumer stays registered, owning nothing, and
    tries again on the next change of the registries."""


@dataclass
class _Progress:
    """Where one owned partition stands, as offsets of the next record."""

    handed: int  # after the last record returned by poll
    processed: int  # after the last record the application finished with
    committed: int | None  # what the offset registry holds (as far as we know)


class AsyncZooKeeperConsumer:
    """One member of a paper-mode consumer group; see the module docstring.

    ``bootstrap_servers`` may be omitted: the brokers are then read from the broker registry
    (``/brokers/ids``), so ``zookeeper_connect`` (``host:port[,host:port][/chroot]``, the
    brokers' ``zookeeper.connect``) is all a consumer needs, as in the paper. Other keyword
    settings (``max_poll_records``, ``fetch_max_wait_ms``, ``value_deserializer``, ...) go to
    the underlying :class:`~odradek.client.consumer.AsyncConsumer` that fetches.
    """

    def __init__(self, zookeeper_connect: str, group_id: str, topics: str | Iterable[str], *,
                 bootstrap_servers: str | Iterable[str] | None = None,
                 consumer_id: str | None = None, auto_offset_reset: str = "largest",
                 auto_commit_enable: bool = True, auto_commit_interval_ms: int = 5_000,
                 zookeeper_session_timeout_ms: int = 6_000,
                 zookeeper_connection_timeout_ms: int | None = None,
                 rebalance_max_retries: int = 4, rebalance_backoff_ms: int = 2_000,
                 client_id: str = "odradek", **fetch_settings: Any) -> None:
        if auto_offset_reset not in _RESETS:
            raise ValueError(f"auto_offset_reset must be smallest or largest; got "
                             f"{auto_offset_reset!r}")
        if not group_id or "/" in group_id:
            raise ValueError(f"group id must be non-empty and without '/': {group_id!r}")
        self.topics = sorted({topics} if isinstance(topics, str) else set(topics))
        if not self.topics:
            raise ValueError("a paper-mode consumer needs at least one topic")
        if rebalance_max_retries < 1:
            raise ValueError("rebalance_max_retries must be at least 1")
        self.group_id = group_id
        self.consumer_id = make_consumer_id(group_id, consumer_id)
        self.thread_id = consumer_thread_ids(self.consumer_id, 1)[0]
        self.auto_offset_reset = auto_offset_reset
        self.auto_commit_interval = auto_commit_interval_ms / 1000 if auto_commit_enable \
            else None
        self.rebalance_max_retries = rebalance_max_retries
        self.rebalance_backoff = rebalance_backoff_ms / 1000
        self.session = ZkSession(zookeeper_connect,
                                 session_timeout_ms=zookeeper_session_timeout_ms,
                                 connection_timeout_ms=zookeeper_connection_timeout_ms)
        # kazoo keeps one entry per (path, watch function) until it fires: built once, the
        # watch functions do not pile up there however often a rebalance re-arms them.
        self._watch = self.session.watcher(self._on_watch)
        self._owner_watch = self.session.watcher(self._on_owner_watch)
        self._bootstrap = bootstrap_servers
        self._consumer_settings = {"client_id": client_id, **fetch_settings,
                                   "auto_offset_reset": auto_offset_reset}
        self._fetch: AsyncConsumer | None = None
        self._owned: dict[TopicPartition, str] = {}  # partition -> our thread id in the registry
        self._progress: dict[TopicPartition, _Progress] = {}
        self._unreleased: dict[TopicPartition, str] = {}  # ownership nodes still to delete
        self._lock = asyncio.Lock()
        self._changed = asyncio.Event()  # a registry changed: rebalance
        self._retry_now = asyncio.Event()  # a contested owner node or a registry changed
        self._assignment_changed = asyncio.Event()
        self._first_rebalance: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._registered = False
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._closed = False
        #: successful rebalances so far (tests and monitoring)
        self.rebalances = 0

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Connect, register, and return after the first rebalance (RebalanceFailed if it
        does not complete within its retries)."""
        if self._started:
            return
        self._started = True
        loop = asyncio.get_running_loop()
        self._first_rebalance = loop.create_future()
        self.session.add_listener(self._on_session_event)
        try:
            await self.session.start()
        except ZooKeeperUnavailable as exc:
            self._closed = True
            raise KafkaClientError(str(exc)) from exc
        try:
            bootstrap = self._bootstrap
            if bootstrap is None:
                bootstrap = await self.session.call(read_broker_bootstrap, self.session.client)
                if not bootstrap:
                    raise KafkaClientError(
                        f"no broker is registered under /brokers/ids in ZooKeeper "
                        f"({self.session.hosts}{self.session.chroot}); pass bootstrap_servers")
            self._fetch = AsyncConsumer(bootstrap_servers=bootstrap, group_id=None,
                                        enable_auto_commit=False,
                                        **self._consumer_settings)
            await self._fetch.start()
            self._tasks.append(loop.create_task(self._rebalance_loop(),
                                                name=f"zk-rebalance-{self.consumer_id}"))
            if self.auto_commit_interval is not None:
                self._tasks.append(loop.create_task(self._auto_commit_loop(),
                                                    name=f"zk-autocommit-{self.consumer_id}"))
            self._changed.set()
            await self._first_rebalance
        except BaseException:
            await self._shutdown(commit=False)
            raise

    async def close(self, commit: bool = True) -> None:
        """Commit what was consumed, give up ownership, leave the group, close everything.

        Closing treats every record already returned by ``poll`` as processed (like Kafka's
        ``close``), so call it after finishing them."""
        if self._closed:
            return
        await self._shutdown(commit)

    async def _shutdown(self, commit: bool) -> None:
        self._closed = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        try:
            async with self._lock:
                if commit and self.session.connected.is_set():
                    self._mark_processed()
                    try:
                        await self._commit_locked()
                    except (KazooException, KafkaClientError) as exc:
                        log.warning("final commit of group %s failed: %s", self.group_id, exc)
                if self.session.connected.is_set():
                    with contextlib.suppress(KazooException):
                        await self.session.call(self._leave, {**self._unreleased, **self._owned})
                self._owned.clear()
        finally:
            await self.session.stop()
            if self._fetch is not None:
                await self._fetch.close(commit=False)

    def leave_at_exit(self) -> None:
        """Blocking, from any thread, at interpreter exit: commit what was consumed, delete
        our nodes, end the session. The event loop may be gone by then; kazoo is not."""
        if self._closed or not self._started:
            return
        self._closed = True
        self._mark_processed()
        pending = {tp: p.processed for tp, p in self._progress.items()
                   if tp in self._owned and p.processed != p.committed}
        try:
            write_offsets(self.session.client, self.group_id, pending)
            self._leave({**self._unreleased, **self._owned})
        finally:
            self.session.client.stop()
            self.session.client.close()

    def _leave(self, owned: dict[TopicPartition, str]) -> None:
        # Ownership first: once our registration goes, the others rebalance and want them.
        release_partitions(self.session.client, self.group_id, owned)
        unregister_consumer(self.session.client, self.group_id, self.consumer_id)

    async def __aenter__(self) -> AsyncZooKeeperConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ watches and session

    def _on_watch(self, event: WatchedEvent) -> None:
        self._changed.set()
        self._retry_now.set()

    def _on_owner_watch(self, event: WatchedEvent) -> None:
        self._retry_now.set()

    def _on_session_event(self, event: SessionEvent) -> None:
        if event is SessionEvent.NEW_SESSION:
            # First session, or a new one after an expiry: our ephemeral nodes are gone.
            self._registered = False
            self._changed.set()
            self._retry_now.set()
        elif event is SessionEvent.RECONNECTED:
            # kazoo forgets its watches on a reconnect; a rebalance re-reads and re-arms them.
            self._changed.set()
        elif event is SessionEvent.EXPIRED and self._fetch is not None:
            # Our ownership nodes are gone and others may take the partitions: stop fetching
            # them (what was processed is still committed by the next rebalance).
            self._fetch.assign([])

    # ------------------------------------------------------------------ rebalancing

    async def _rebalance_loop(self) -> None:
        while True:
            await self._changed.wait()
            reasons: list[str] = []
            for attempt in range(self.rebalance_max_retries):
                await self.session.connected.wait()
                self._changed.clear()
                self._retry_now.clear()
                try:
                    reason = await self._rebalance_once()
                except Exception as exc:  # a bug must not leave start() waiting forever
                    log.exception("group %s: rebalance failed unexpectedly", self.group_id)
                    reason = f"{type(exc).__name__}: {exc}"
                if reason is None:
                    self.rebalances += 1
                    self._resolve_first(None)
                    break
                reasons.append(reason)
                log.info("group %s: rebalance attempt %d of %s failed: %s", self.group_id,
                         attempt + 1, self.consumer_id, reason)
                if attempt + 1 < self.rebalance_max_retries:
                    backoff = self.rebalance_backoff * random.uniform(0.5, 1.0)
                    await wait_event(self._retry_now, backoff)
            else:
                error = RebalanceFailed(
                    f"group {self.group_id}: {self.consumer_id} could not rebalance in "
                    f"{self.rebalance_max_retries} attempts; last: {reasons[-1]}")
                log.error("%s", error)
                self._error = error
                self._assignment_changed.set()
                self._resolve_first(error)

    def _resolve_first(self, error: BaseException | None) -> None:
        future = self._first_rebalance
        if future is None or future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)

    async def _rebalance_once(self) -> str | None:
        """One run of Algorithm 1. Returns None on success, else why it must be retried."""
        fetch = self._fetch
        assert fetch is not None
        async with self._lock:
            try:
                await self._commit_locked()
            except (KazooException, KafkaClientError) as exc:
                # Not fatal: the offsets stay pending and the next commit retries them.
                log.warning("group %s: commit before rebalance failed: %s", self.group_id, exc)
            fetch.assign([])
            # Kept until ZooKeeper confirms the release, so a failed attempt's next try
            # still deletes them.
            self._unreleased.update(self._owned)
            self._owned = {}
            self._assignment_changed.set()
            try:
                await self.session.call(self._release_and_register, dict(self._unreleased))
                self._unreleased.clear()
                view = await self.session.call(read_group_view, self.session.client,
                                               self.group_id, self.topics, watch=self._watch)
                assignment = assign_paper(view.consumers, view.partitions)
                mine = {tp: self.thread_id for tp in assignment.get(self.thread_id, [])}
                leaderless = await self._wait_for_leaders(sorted(mine))
                if leaderless:
                    return f"no leader yet for {leaderless}"
                await self.session.call(claim_partitions, self.session.client, self.group_id,
                                        mine, watch=self._owner_watch)
                self._owned = mine
                positions = await self._starting_positions(sorted(mine))
            except OwnershipConflict as exc:
                return str(exc)
            except NodeExistsError as exc:
                return f"a node exists: {exc.args or ''} (consumer id {self.consumer_id} " \
                       f"still registered by an old session?)"
            except (KazooException, KazooTimeoutError, KafkaClientError) as exc:
                return f"{type(exc).__name__}: {exc}"
            for tp in list(self._progress):
                if tp not in mine:
                    del self._progress[tp]
            fetch.assign(mine)
            for tp, offset in positions.items():
                fetch.seek(tp, offset)
            self._assignment_changed.set()
            log.info("group %s: %s owns %s (consumers %s, brokers %s)", self.group_id,
                     self.consumer_id, [f"{tp.topic}-{tp.partition}" for tp in sorted(mine)],
                     sorted(view.consumers), list(view.brokers))
            return None

    async def _wait_for_leaders(self, partitions: list[TopicPartition]) -> list[str]:
        """Those of ``partitions`` without a leader in the brokers' metadata after waiting up
        to the rebalance backoff: a partition just added is in ZooKeeper before it has a
        leader, and has no starting offset to read until it has one."""
        assert self._fetch is not None
        deadline = monotonic_s() + max(self.rebalance_backoff, 1.0)
        while True:
            metadata = await self._fetch.client.refresh_metadata({tp.topic for tp in partitions})
            missing = [f"{tp.topic}-{tp.partition}" for tp in partitions
                       if metadata.leader_for(tp) < 0]
            if not missing or monotonic_s() >= deadline or self._changed.is_set():
                return missing
            await asyncio.sleep(_LEADER_POLL_S)  # a bounded poll, not a synchronisation

    def _release_and_register(self, released: dict[TopicPartition, str]) -> None:
        client = self.session.client
        release_partitions(client, self.group_id, released)
        if not self._registered:
            register_consumer(client, self.group_id, self.consumer_id,
                              {topic: 1 for topic in self.topics})
            self._registered = True

    async def _starting_positions(self, partitions: list[TopicPartition]
                                  ) -> dict[TopicPartition, int]:
        """The offset to fetch each newly owned partition from: the offset registry's, or our
        own position when we owned it until this rebalance and got further (records we
        returned to the application must not come back to it); ``auto_offset_reset`` where
        neither exists, written to the registry at once so a crash before the first commit
        cannot make the next owner skip what was produced meanwhile."""
        assert self._fetch is not None
        registry = await self.session.call(read_offsets, self.session.client, self.group_id,
                                           partitions)
        positions: dict[TopicPartition, int] = {}
        for tp in partitions:
            stored, previous = registry[tp], self._progress.get(tp)
            if previous is not None and (stored is None or previous.handed > stored):
                positions[tp] = previous.handed
                previous.committed = stored
                continue
            if stored is not None:
                positions[tp] = stored
                self._progress[tp] = _Progress(stored, stored, stored)
        missing = [tp for tp in partitions if tp not in positions]
        if missing:
            if _RESETS[self.auto_offset_reset] == EARLIEST:
                found = await self._fetch.beginning_offsets(missing)
            else:
                found = await self._fetch.end_offsets(missing)
            await self.session.call(write_offsets, self.session.client, self.group_id, found)
            for tp, offset in found.items():
                positions[tp] = offset
                self._progress[tp] = _Progress(offset, offset, offset)
        return positions

    # ------------------------------------------------------------------ offsets

    def _mark_processed(self) -> None:
        for progress in self._progress.values():
            progress.processed = progress.handed

    async def _commit_locked(self) -> None:
        pending = {tp: p.processed for tp, p in self._progress.items()
                   if tp in self._owned and p.processed != p.committed}
        if not pending:
            return
        await self.session.call(write_offsets, self.session.client, self.group_id, pending)
        for tp, offset in pending.items():
            self._progress[tp].committed = offset

    async def commit(self) -> None:
        """Commit everything returned by ``poll`` so far to the offset registry."""
        self._check_open()
        async with self._lock:
            self._mark_processed()
            await self._commit_locked()

    async def _auto_commit_loop(self) -> None:
        assert self.auto_commit_interval is not None
        while True:
            await asyncio.sleep(self.auto_commit_interval)
            if not self.session.connected.is_set():
                continue
            async with self._lock:
                try:
                    await self._commit_locked()
                except (KazooException, KafkaClientError) as exc:
                    log.warning("group %s: auto-commit failed: %s", self.group_id, exc)

    async def committed(self, tp: TopicPartition | tuple[str, int]) -> int | None:
        """The group's entry in the offset registry for ``tp``."""
        tp = TopicPartition(*tp)
        found = await self.session.call(read_offsets, self.session.client, self.group_id, [tp])
        return found[tp]

    # ------------------------------------------------------------------ consuming

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer owns in the ownership registry right now."""
        return set(self._owned)

    async def poll(self, timeout_ms: float = 1000, max_records: int | None = None
                   ) -> list[ConsumerRecord]:
        """Records of the owned partitions, or [] after ``timeout_ms``. Calling ``poll``
        declares the records of the previous call processed (their offsets get committed)."""
        self._check_open()
        self._mark_processed()
        fetch = self._fetch
        assert fetch is not None
        deadline = monotonic_s() + timeout_ms / 1000
        while True:
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            remaining = deadline - monotonic_s()
            if remaining <= 0:
                return []
            slice_s = min(remaining, _POLL_SLICE_S)
            if not self._owned:
                self._assignment_changed.clear()
                await wait_event(self._assignment_changed, slice_s)
                continue
            records = await fetch.poll(slice_s * 1000, max_records)
            # No await since the fetcher drained these: ownership is what it was then.
            out = [r for r in records if TopicPartition(r.topic, r.partition) in self._owned]
            for record in out:
                self._progress[TopicPartition(record.topic, record.partition)].handed = \
                    record.offset + 1
            if out:
                return out

    async def stream(self) -> AsyncIterator[ConsumerRecord]:
        """The paper's never-ending stream (``async for message in consumer``)."""
        while True:
            for record in await self.poll(1000):
                yield record

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self.stream()

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed(f"paper-mode consumer {self.consumer_id} is closed")


class ZooKeeperConsumer:
    """Blocking paper-mode consumer (see :class:`AsyncZooKeeperConsumer`)::

        consumer = ZooKeeperConsumer("zk:2181/odradek", "group1", ["topic1"])
        for message in consumer:   # never ends; blocks for new messages
            process(message.value)

    Runs on the client's shared event-loop thread (:mod:`odradek.client.sync`); the
    constructor returns once the consumer is registered and owns its partitions.
    """

    def __init__(self, zookeeper_connect: str, group_id: str, topics: str | Iterable[str], *,
                 bootstrap_servers: str | Iterable[str] | None = None,
                 consumer_id: str | None = None, auto_offset_reset: str = "largest",
                 auto_commit_interval_ms: int = 5_000,
                 zookeeper_session_timeout_ms: int = 6_000, **settings: Any) -> None:
        settings.update(bootstrap_servers=bootstrap_servers, consumer_id=consumer_id,
                        auto_offset_reset=auto_offset_reset,
                        auto_commit_interval_ms=auto_commit_interval_ms,
                        zookeeper_session_timeout_ms=zookeeper_session_timeout_ms)
        self._async = run(self._create(zookeeper_connect, group_id, topics, settings))
        atexit.register(self._atexit)

    @staticmethod
    async def _create(connect: str, group: str, topics: str | Iterable[str],
                      settings: dict[str, Any]) -> AsyncZooKeeperConsumer:
        consumer = AsyncZooKeeperConsumer(connect, group, topics, **settings)
        await consumer.start()
        return consumer

    @property
    def consumer_id(self) -> str:
        return self._async.consumer_id

    @property
    def async_consumer(self) -> AsyncZooKeeperConsumer:
        return self._async

    def poll(self, timeout_ms: float = 1000, max_records: int | None = None
             ) -> list[ConsumerRecord]:
        return run(self._async.poll(timeout_ms, max_records))

    def __iter__(self) -> Iterator[ConsumerRecord]:
        while True:
            yield from self.poll(1000)

    def commit(self) -> None:
        run(self._async.commit())

    def committed(self, tp: TopicPartition | tuple[str, int]) -> int | None:
        return run(self._async.committed(tp))

    def assignment(self) -> set[TopicPartition]:
        return run(self._on_loop(self._async.assignment))

    def close(self, commit: bool = True) -> None:
        run(self._async.close(commit))
        atexit.unregister(self._atexit)

    def _atexit(self) -> None:
        # Leave the group now rather than a session timeout later, with offsets committed.
        # By now the loop's thread-pool executor refuses work, so no close() through it.
        with contextlib.suppress(Exception):
            self._async.leave_at_exit()

    def __enter__(self) -> ZooKeeperConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    async def _on_loop(fn: Callable[[], T]) -> T:
        return fn()
