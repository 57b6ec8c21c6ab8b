"""The follower's half of replication: fetch from the leader, truncate where logs diverged.

One :class:`ReplicaFetcher` task per (leader broker, fetcher index), where a partition's
index is ``hash(topic, partition) % num.replica.fetchers``. Each keeps one connection to
its leader (odradek's client :class:`~odradek.client.connection.Connection`) and loops:

1. **Truncate** partitions that just became followers (or saw a new leader epoch) before
   fetching anything (KIP-101/279). Ask the leader, with OffsetForLeaderEpoch, where our
   latest epoch ends in *its* log: truncate to that offset when it is below our LEO. If
   the leader's answer names an older epoch than we asked, our later epochs never
   happened there: truncate to where our own copy of that epoch ends and ask again. With
   no epoch history, or when the leader does not know the epoch, truncate to our HW.
   After this step our log is a prefix of the leader's, so replicas never diverge.
2. **Fetch** (``replica_id`` = our broker id, the current leader epoch, long-poll
   ``replica.fetch.wait.max.ms``/``min.bytes``, ``replica.fetch.max.bytes`` per
   partition), in an incremental fetch session (:mod:`.fetch_session_handler`): after the
   first, full fetch a request names only partitions whose position moved, and the leader
   neither reads nor answers those with nothing new (a partition missing from an answer
   has nothing new). Batches are appended with ``append_as_follower`` (offsets and epochs
   kept); the follower HW becomes ``min(leader HW, our LEO)`` and never moves back. An
   answer is applied in the connection's read loop in the turn it arrives, and the next
   Fetch leaves in that same turn (the leader's HW waits for it).
3. **OFFSET_OUT_OF_RANGE**: if the leader's log start is above our LEO (it deleted what we
   miss) the log restarts empty at the leader's log start; otherwise our LEO is above the
   leader's (only after an unclean election): truncate to the leader's HW and go on.

**Throttles** (:mod:`.throttles`): while the follower quota is exceeded, a partition the
topic's ``follower.replication.throttled.replicas`` names for this broker is left out of
the fetches — unless it had caught up with the leader's high watermark at its last answer
(Kafka's ``shouldFollowerThrottle``) — and retried after ``replica.fetch.backoff.ms`` (an
empty Kafka fetch backs off that long); the bytes appended for such partitions are recorded.

Every append and truncation first re-checks that the partition still belongs to this
fetcher in the same term: a leadership change that arrives while a request is in flight
wins, and the late answer is dropped.

A fetcher never ends by itself. Network and Kafka errors are expected: it reconnects after
``replica.fetch.backoff.ms``. Any other exception is a bug, but a bug must not silently end
replication from a leader (the partitions would fall out of every ISR with no word in the
log): it is logged with its traceback, counted (``odradek_replica_fetcher_failures_total``)
and the fetcher resumes after a backoff that doubles with each failure in a row, up to
:data:`MAX_FAILURE_BACKOFF_S`, so a failure that repeats on every request cannot flood the
log or spin a core.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from odradek.client.connection import Connection, NodeAddress
from odradek.client.errors import KafkaClientError
from odradek.client.security import PLAINTEXT, ClientSecurity
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.errors import KafkaError
from odradek.protocol.fetch_request import FetchPosition, encode_fetch_request
from odradek.types import BrokerId, LeaderEpoch, TopicPartition

from .fetch_session_handler import FetchSessionHandler
from .partition import Partition

if TYPE_CHECKING:
    from odradek.config_sections import ReplicationConfig

    from .throttles import ReplicationQuota

__all__ = ["ReplicaFetcher", "ReplicaFetcherManager"]

log = logging.getLogger(__name__)

_OFFSET_FOR_LEADER_EPOCH_VERSION = 3  # first version carrying replica_id
_EARLIEST, _LATEST = -2, -1
_UNDEFINED = -1
MAX_FAILURE_BACKOFF_S = 30.0


def failure_backoff(base_s: float, failures_in_a_row: int) -> float:
    """Seconds to wait after the ``failures_in_a_row``-th unexpected error (1 = the first):
    ``base_s`` doubled per earlier failure, capped at :data:`MAX_FAILURE_BACKOFF_S`."""
    return min(base_s * 2.0 ** min(failures_in_a_row - 1, 16), MAX_FAILURE_BACKOFF_S)


@dataclass(eq=False)
class FollowerFetchState:
    """One partition inside a fetcher: which term it follows and where it is."""

    partition: Partition
    leader: int
    leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0
    leader_high_watermark: int | None = None  # as the last response carried it (metrics)

    @property
    def key(self) -> TopicPartition:
        return self.partition.key

    @property
    def caught_up(self) -> bool:
        """At the leader's high watermark as of its last answer (Kafka's
        ``PartitionFetchState.isReplicaInSync``: a lag of 0)."""
        leader_hw = self.leader_high_watermark
        return leader_hw is not None and self.partition.log.log_end_offset >= leader_hw

    def current(self) -> bool:
        """Still following this leader in this epoch (leadership may have moved)."""
        partition = self.partition
        return (
            not partition.is_leader
            and partition.leader == self.leader
            and partition.leader_epoch == self.leader_epoch
        )


@dataclass(eq=False)
class _FetchExchange:
    """One follower Fetch in flight, and what its answer led to (set in the read loop)."""

    offsets: dict[TopicPartition, tuple[FollowerFetchState, int]]  # as requested
    session: FetchSessionHandler
    session_id: int
    max_wait_ms: int
    response: asyncio.Future[Any] = field(init=False)
    out_of_range: list[FollowerFetchState] = field(default_factory=list)
    next: _FetchExchange | None = None  # the Fetch sent when this answer was applied


class ReplicaFetcherManager:
    """Assigns follower partitions to fetcher tasks, one set per leader broker.

    ``settings`` is read at each use, so a new ``replication`` section (replaced whole)
    applies to running fetchers from their next request; ``num.replica.fetchers`` applies
    to partitions assigned afterwards."""

    def __init__(
        self,
        broker_id: BrokerId,
        settings: ReplicationConfig,
        broker_address: Callable[[int], tuple[str, int] | None],
        security: ClientSecurity = PLAINTEXT,
        throttle: ReplicationQuota | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.settings = settings
        self.throttle = throttle  # the follower's replication quota
        self._broker_address = broker_address
        self.security = security  # TLS/SASL of the inter-broker listener
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._assigned: dict[TopicPartition, tuple[int, int]] = {}
        # Told the size of each appended response part (the broker's replication-bytes-in
        # metric); one call per partition per response, never per record.
        self.on_appended: Callable[[int], None] | None = None
        # Told of each unexpected error a fetcher survived (the failures metric).
        self.on_failure: Callable[[], None] | None = None

    def leader_end_offsets(self) -> dict[TopicPartition, int]:
        """The leaders' high watermarks as last seen, per followed partition (metrics:
        how far this broker's followers trail)."""
        ends = {}
        for fetcher in self._fetchers.values():
            for key, state in fetcher.states().items():
                if state.leader_high_watermark is not None:
                    ends[key] = state.leader_high_watermark
        return ends

    def add_partition(self, partition: Partition) -> None:
        """Follow ``partition.leader`` at ``partition.leader_epoch``, truncating first."""
        self.remove_partition(partition.key)
        count = max(self.settings.num_replica_fetchers, 1)
        fetcher_key = (partition.leader, hash(partition.key) % count)
        fetcher = self._fetchers.get(fetcher_key)
        if fetcher is None:
            fetcher = ReplicaFetcher(self, partition.leader, fetcher_key[1],
                                     self._broker_address)
            self._fetchers[fetcher_key] = fetcher
            fetcher.start()
        fetcher.add(FollowerFetchState(partition, partition.leader, partition.leader_epoch))
        self._assigned[partition.key] = fetcher_key
        log.info("following %s-%d: leader %d epoch %d, log end %d", partition.topic,
                 partition.index, partition.leader, partition.leader_epoch,
                 partition.log.log_end_offset)

    def remove_partition(self, key: TopicPartition) -> None:
        fetcher_key = self._assigned.pop(key, None)
        if fetcher_key is None:
            return
        fetcher = self._fetchers.get(fetcher_key)
        if fetcher is None:
            return
        fetcher.remove(key)
        if fetcher.idle:
            del self._fetchers[fetcher_key]
            fetcher.stop()

    async def shutdown(self) -> None:
        fetchers = list(self._fetchers.values())
        self._fetchers.clear()
        self._assigned.clear()
        for fetcher in fetchers:
            fetcher.stop()
        for fetcher in fetchers:
            await fetcher.wait_stopped()


class ReplicaFetcher:
    """One task fetching a set of partitions from one leader broker."""

    def __init__(
        self,
        manager: ReplicaFetcherManager,
        leader: int,
        index: int,
        broker_address: Callable[[int], tuple[str, int] | None],
    ) -> None:
        self._manager = manager
        self.broker_id = manager.broker_id
        self.leader = leader
        self.index = index
        self._broker_address = broker_address
        self._states: dict[TopicPartition, FollowerFetchState] = {}
        self._changed = asyncio.Event()
        self._connection: Connection | None = None
        self._session = FetchSessionHandler()
        self._task: asyncio.Task[None] | None = None
        # Checked by the loop: Python 3.11's asyncio.wait_for drops a cancellation that
        # lands in the same loop turn as the awaited response, and the loop would go on.
        self._stopped = False

    def _config(self) -> ReplicationConfig:
        return self._manager.settings

    @property
    def idle(self) -> bool:
        return not self._states

    def states(self) -> dict[TopicPartition, FollowerFetchState]:
        return self._states

    def add(self, state: FollowerFetchState) -> None:
        self._states[state.key] = state
        self._changed.set()

    def remove(self, key: TopicPartition) -> None:
        self._states.pop(key, None)
        self._changed.set()

    def start(self) -> None:
        self._task = asyncio.create_task(
            self._run(), name=f"replica-fetcher-{self.leader}-{self.index}"
        )

    def stop(self) -> None:
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
        self._close()

    async def wait_stopped(self) -> None:
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    # Loop --------------------------------------------------------------------------------
    async def _run(self) -> None:
        failures = 0  # unexpected errors in a row
        while not self._stopped:
            backoff = self._config().replica_fetch_backoff_ms / 1000
            ready = self._ready_states()
            if not ready:
                await self._wait_for_work()
                continue
            try:
                connection = await self._connect()
                truncating = [s for s in ready if s.truncating]
                if truncating:
                    await self._truncate(connection, truncating)
                else:
                    await self._fetch(connection, ready)
                failures = 0
            except (TimeoutError, KafkaClientError, OSError) as exc:
                log.info("fetcher for leader %d: %s; retrying in %.1fs", self.leader, exc,
                         backoff)
                self._close()
                await self._wait_for_work(backoff)
            except Exception:  # a bug: log it, count it, back off, and keep replicating
                failures += 1
                delay = failure_backoff(backoff, failures)
                log.exception("fetcher %d for leader %d failed unexpectedly (%d in a row); "
                              "resuming in %.1fs", self.index, self.leader, failures, delay)
                if self._manager.on_failure is not None:
                    self._manager.on_failure()
                self._close()
                await self._wait_for_work(delay)

    def _ready_states(self) -> list[FollowerFetchState]:
        now = asyncio.get_running_loop().time()
        ready = [s for s in self._states.values() if s.delayed_until <= now and s.current()]
        throttle = self._manager.throttle
        if throttle is None:
            return ready
        held = [s for s in ready if not s.truncating and not s.caught_up
                and throttle.is_throttled(s.partition.topic, s.partition.index, self.broker_id)]
        if not held or not throttle.is_quota_exceeded():
            return ready
        for state in held:
            self._delay(state)
        left_out = set(held)
        return [s for s in ready if s not in left_out]

    async def _wait_for_work(self, timeout: float | None = None) -> None:
        """Until partitions change, or ``timeout`` (default: the earliest delayed one)."""
        if timeout is None and self._states:
            now = asyncio.get_running_loop().time()
            timeout = max(min(s.delayed_until for s in self._states.values()) - now, 0.01)
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    def _delay(self, state: FollowerFetchState) -> None:
        backoff = self._config().replica_fetch_backoff_ms / 1000
        state.delayed_until = asyncio.get_running_loop().time() + backoff

    async def _connect(self) -> Connection:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        address = self._broker_address(self.leader)
        if address is None:
            raise OSError(f"leader {self.leader} is not registered")
        timeout = self._config().replica_socket_timeout_ms / 1000
        self._connection = await Connection.open(
            NodeAddress(self.leader, address[0], address[1]),
            client_id=f"broker-{self.broker_id}-fetcher-{self.index}", timeout=timeout,
            security=self._manager.security,
        )
        return self._connection

    def _close(self) -> None:
        self._session.reset()
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _send(self, connection: Connection, api_key: int, body: dict[str, Any],
                    version: int | None = None) -> Any:
        return await self._timed(connection.send(api_key, body, version=version))

    async def _timed(self, request: Awaitable[Any], extra_wait_s: float = 0.0) -> Any:
        timeout = self._config().replica_socket_timeout_ms / 1000 + extra_wait_s
        # asyncio.timeout, not wait_for: on 3.11 wait_for runs the send in a task of its own,
        # one more task and loop turn on every follower fetch, in acks=all's critical path.
        async with asyncio.timeout(timeout):
            return await request

    # Truncation --------------------------------------------------------------------------
    async def _truncate(self, connection: Connection, states: list[FollowerFetchState]) -> None:
        asking: list[tuple[FollowerFetchState, LeaderEpoch]] = []
        for state in states:
            epoch = state.partition.log.leader_epoch_cache.latest_epoch
            if epoch == _UNDEFINED:
                self._truncate_to(state, state.partition.log.high_watermark, done=True)
            else:
                asking.append((state, epoch))
        if not asking:
            return
        topics: dict[str, list[dict[str, Any]]] = {}
        for state, epoch in asking:
            topics.setdefault(state.partition.topic, []).append({
                "partition": state.partition.index,
                "current_leader_epoch": state.leader_epoch,
                "leader_epoch": epoch,
            })
        response = await self._send(connection, ApiKey.OFFSET_FOR_LEADER_EPOCH, {
            "replica_id": self.broker_id,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
        }, version=_OFFSET_FOR_LEADER_EPOCH_VERSION)
        answers = {
            (topic.topic, int(part.partition)): part
            for topic in response.topics for part in topic.partitions
        }
        for state, asked_epoch in asking:
            answer = answers.get(state.key)
            if answer is None or int(answer.error_code) != ErrorCode.none:
                code = int(answer.error_code) if answer is not None else -1
                log.info("OffsetForLeaderEpoch %s-%d from leader %d: error %d", *state.key,
                         self.leader, code)
                self._delay(state)
                continue
            self._truncate_to_leader_answer(
                state, asked_epoch, int(answer.leader_epoch), int(answer.end_offset)
            )

    def _truncate_to_leader_answer(
        self, state: FollowerFetchState, asked_epoch: int, leader_epoch: int, end_offset: int
    ) -> None:
        partition_log = state.partition.log
        leo = int(partition_log.log_end_offset)
        if end_offset == _UNDEFINED or leader_epoch == _UNDEFINED:
            self._truncate_to(state, partition_log.high_watermark, done=True)
            return
        if leader_epoch == asked_epoch:
            self._truncate_to(state, min(end_offset, leo), done=True)
            return
        own_epoch, own_end = partition_log.end_offset_for_leader_epoch(leader_epoch)
        if own_epoch == leader_epoch:
            self._truncate_to(state, min(end_offset, own_end, leo), done=True)
        elif own_epoch == _UNDEFINED:
            self._truncate_to(state, min(end_offset, leo), done=True)
        else:
            # Our history after ``own_epoch`` never happened on the leader: drop it and ask
            # again with the epoch we are left with.
            self._truncate_to(state, min(own_end, leo), done=False)

    def _truncate_to(self, state: FollowerFetchState, offset: int, *, done: bool) -> None:
        if not state.current():
            return
        partition_log = state.partition.log
        if offset < partition_log.log_end_offset:
            log.info("truncating %s-%d from %d to %d (leader %d, epoch %d)", *state.key,
                     partition_log.log_end_offset, offset, self.leader, state.leader_epoch)
            partition_log.truncate_to(offset)
        state.truncating = not done

    # Fetching ----------------------------------------------------------------------------
    async def _fetch(self, connection: Connection, states: list[FollowerFetchState]) -> None:
        """Fetch ``states``, and go on fetching for as long as the answers allow.

        Each answer is applied in the connection's read loop, in the turn it arrives
        (:meth:`_on_fetch_response`), which sends the next Fetch right there when the
        fetcher would simply fetch again: the leader's high watermark (and so acks=all and
        every consumer) waits for that next Fetch, and one event-loop hand-off to this task
        per round trip is a millisecond on a busy broker. This task only waits out each
        request's timeout, and returns for everything else :meth:`_run` decides (truncation,
        an out-of-range answer, no partition ready, a session to start over)."""
        exchange: _FetchExchange | None = self._send_fetch(connection, states)
        while exchange is not None:
            extra_wait_s = exchange.max_wait_ms / 1000
            await self._timed(exchange.response, extra_wait_s=extra_wait_s)
            if exchange.out_of_range:
                await self._handle_out_of_range(connection, exchange.out_of_range)
                return
            exchange = exchange.next

    def _send_fetch(self, connection: Connection,
                    states: list[FollowerFetchState]) -> _FetchExchange:
        config = self._config()
        positions: dict[TopicPartition, FetchPosition] = {}
        offsets: dict[TopicPartition, tuple[FollowerFetchState, int]] = {}
        for state in states:
            partition_log = state.partition.log
            offset = int(partition_log.log_end_offset)
            offsets[state.key] = (state, offset)
            positions[state.key] = FetchPosition(
                state.partition.index, state.leader_epoch, offset,
                int(partition_log.log_start_offset), config.replica_fetch_max_bytes)
        version = connection.version(ApiKey.FETCH)
        # A fetch session (v7+) names only the partitions whose position changed.
        session = self._session if version >= 7 else FetchSessionHandler()
        request = session.build(positions)

        def encode(correlation_id: int, client_id: str | None) -> bytes:
            return encode_fetch_request(
                version, correlation_id, client_id, replica_id=self.broker_id,
                max_wait_ms=config.replica_fetch_wait_max_ms,
                min_bytes=config.replica_fetch_min_bytes,
                max_bytes=config.replica_fetch_response_max_bytes, topics=request.topics,
                session_id=request.session_id, session_epoch=request.epoch,
                forgotten=request.forgotten)

        exchange = _FetchExchange(offsets, session, request.session_id,
                                  config.replica_fetch_wait_max_ms)
        exchange.response = connection.send_encoded_nowait(
            ApiKey.FETCH, version, encode,
            on_response=lambda response: self._on_fetch_response(connection, exchange,
                                                                 response))
        return exchange

    def _on_fetch_response(self, connection: Connection, exchange: _FetchExchange,
                           response: Any) -> None:
        """In the read loop: apply the answer, then send the next Fetch if nothing but a
        plain fetch is due (what this raises, :meth:`_fetch` raises)."""
        if not self._apply_fetch_response(exchange, response) or exchange.out_of_range:
            return
        if self._stopped or connection is not self._connection or connection.closed:
            return
        ready = self._ready_states()
        if ready and not any(state.truncating for state in ready):
            exchange.next = self._send_fetch(connection, ready)

    def _apply_fetch_response(self, exchange: _FetchExchange, response: Any) -> bool:
        """Append what the leader sent; False when the session must start over."""
        session = exchange.session
        code = int(getattr(response, "error_code", 0))
        if not session.handle_response(code, int(getattr(response, "session_id", 0))):
            log.info("fetch session %d with leader %d: error %d; starting over with a full "
                     "fetch", exchange.session_id, self.leader, code)
            return False
        if code:
            raise OSError(f"fetch from leader {self.leader}: error {code}")
        offsets = exchange.offsets
        for topic in response.responses:
            for part in topic.partitions:
                found = offsets.get(TopicPartition(topic.topic, int(part.partition_index)))
                if found is None:
                    continue
                state, offset = found
                if self._states.get(state.key) is not state or not state.current():
                    continue  # leadership moved while the request was in flight
                code = int(part.error_code)
                if code == ErrorCode.offset_out_of_range:
                    exchange.out_of_range.append(state)
                elif code != ErrorCode.none:
                    log.info("fetch %s-%d from leader %d: error %d", *state.key, self.leader,
                             code)
                    self._delay(state)
                else:
                    self._append(state, offset, part)
        return True

    def _append(self, state: FollowerFetchState, offset: int, part: Any) -> None:
        partition_log = state.partition.log
        if partition_log.log_end_offset != offset:
            return  # truncated meanwhile; the next fetch starts from the new end
        records = part.records
        try:
            if records:
                partition_log.append_as_follower(records)
                on_appended = self._manager.on_appended
                if on_appended is not None:
                    on_appended(len(records))
                throttle = self._manager.throttle
                if throttle is not None and throttle.is_throttled(*state.key, self.broker_id):
                    throttle.record(len(records))
        except KafkaError as exc:
            log.warning("follower append to %s-%d failed: %s; truncating again", *state.key,
                        exc)
            state.truncating = True
            return
        leader_hw = int(part.high_watermark)
        state.leader_high_watermark = leader_hw
        partition_log.maybe_increment_high_watermark(min(leader_hw, partition_log.log_end_offset))
        leader_start = int(getattr(part, "log_start_offset", -1))
        if partition_log.log_start_offset < leader_start <= partition_log.high_watermark:
            partition_log.delete_records_before(leader_start)

    async def _handle_out_of_range(
        self, connection: Connection, states: list[FollowerFetchState]
    ) -> None:
        earliest = await self._list_offsets(connection, states, _EARLIEST)
        latest = await self._list_offsets(connection, states, _LATEST)
        for state in states:
            if not state.current() or state.key not in earliest or state.key not in latest:
                self._delay(state)
                continue
            partition_log = state.partition.log
            leo = int(partition_log.log_end_offset)
            leader_start, leader_hw = earliest[state.key], latest[state.key]
            if leader_start > leo:
                log.info("%s-%d: leader %d starts at %d, after our end %d; restarting there",
                         *state.key, self.leader, leader_start, leo)
                partition_log.truncate_fully_and_start_at(leader_start)
            elif leo > leader_hw:
                self._truncate_to(state, leader_hw, done=True)
            else:
                self._delay(state)

    async def _list_offsets(
        self, connection: Connection, states: list[FollowerFetchState], timestamp: int
    ) -> dict[TopicPartition, int]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for state in states:
            topics.setdefault(state.partition.topic, []).append({
                "partition_index": state.partition.index,
                "current_leader_epoch": state.leader_epoch,
                "timestamp": timestamp,
            })
        response = await self._send(connection, ApiKey.LIST_OFFSETS, {
            "replica_id": self.broker_id, "isolation_level": 0,
            "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
        })
        found: dict[TopicPartition, int] = {}
        for topic in response.topics:
            for part in topic.partitions:
                if int(part.error_code) == ErrorCode.none and int(part.offset) >= 0:
                    found[TopicPartition(topic.name, int(part.partition_index))] = int(part.offset)
        return found
