"""Log offsets of partitions led elsewhere, for the consumer lag a coordinator exports.

A group's coordinator hosts the offsets of all its partitions but the logs of only some:
the lag of a partition whose log lives on other brokers needs that log's high watermark.
Kafka's lag exporters ask the leaders with ListOffsets (LATEST, and EARLIEST for the log
start); so does the coordinator, with these rules:

* **batched**: one ListOffsets LATEST and one EARLIEST per leader broker and round, for all
  the partitions that broker leads, sent together on one connection kept per leader;
* **paced**: a round starts only when a scrape asks for it (:meth:`refresh`), at most once
  per ``interval``; a scrape in between reads the cache;
* **off the request path**: a round is an asyncio task on the broker's loop doing
  non-blocking I/O; the scrape thread (never the loop) waits for it, at most ``timeout``;
* **bounded**: each leader's requests (connect included) time out after ``timeout``. A
  leader that does not answer (dead, partitioned, overloaded) keeps its partitions' last
  known values, which are served while younger than ``max_age`` and then omitted (the
  partition has no lag row until its leader answers again). The age of the oldest value
  served is exported, so a stale lag is visible as such.

The offsets are the consumer's (``replica_id`` -1, read-uncommitted): the high watermark,
what ``kafka-consumer-groups --describe`` shows as ``LOG-END-OFFSET``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.client.connection import Connection, NodeAddress
from odradek.client.security import PLAINTEXT, ClientSecurity
from odradek.metrics.lag import LogOffsets
from odradek.protocol.api_versions import ApiKey
from odradek.types import TopicPartition

__all__ = ["RemoteLogOffsets"]

log = logging.getLogger(__name__)

_EARLIEST, _LATEST = -2, -1
_CONSUMER = -1  # replica_id of a consumer: offsets up to the high watermark


class RemoteLogOffsets:
    """A cache of the log start and high watermark of partitions led by other brokers.

    ``leader_of`` gives a partition's leader from the cluster view (None if it has none);
    ``address_of`` a broker's host and port. Everything runs on the broker's event loop
    except :meth:`wait`, which the scrape thread calls.
    """

    def __init__(self, broker_id: int,
                 leader_of: Callable[[TopicPartition], int | None],
                 address_of: Callable[[int], tuple[str, int] | None], *,
                 timeout: float, interval: float, max_age: float,
                 clock: Callable[[], float] = time.monotonic,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self._broker_id = broker_id
        self._security = security  # the inter-broker listener's TLS/SASL
        self._leader_of = leader_of
        self._address_of = address_of
        self._timeout = timeout
        self._interval = interval
        self._max_age = max_age
        self._clock = clock
        self._cache: dict[TopicPartition, tuple[LogOffsets, float]] = {}
        self._connections: dict[int, Connection] = {}
        self._failing: set[int] = set()  # leaders whose last round failed (logged once)
        self._round: asyncio.Task[None] | None = None
        self._round_done: concurrent.futures.Future[None] | None = None
        self._last_round = float("-inf")
        self._closed = False

    # --- on the loop, at scrape time ------------------------------------------------------
    def refresh(self, partitions: Collection[TopicPartition]
                ) -> concurrent.futures.Future[None] | None:
        """Start a round for ``partitions`` unless one runs or the last started less than
        ``interval`` ago; returns a future that the round in flight completes (None when
        none is in flight). Values no longer asked for are forgotten."""
        wanted = set(partitions)
        for key in [key for key in self._cache if key not in wanted]:
            del self._cache[key]
        if self._round is not None:
            return self._round_done
        now = self._clock()
        if self._closed or not wanted or now - self._last_round < self._interval:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a test collecting without a loop: serve the cache only
            return None
        self._last_round = now
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._round_done = done
        self._round = loop.create_task(self._run_round(wanted), name="lag end offsets")
        self._round.add_done_callback(self._round_finished)
        return done

    def offsets(self, partitions: Collection[TopicPartition]
                ) -> tuple[dict[TopicPartition, LogOffsets], float]:
        """The known offsets no older than ``max_age``, and the age of the oldest served."""
        now, max_age = self._clock(), self._max_age
        cache = self._cache
        found: dict[TopicPartition, LogOffsets] = {}
        oldest = 0.0
        for key in partitions:
            entry = cache.get(key)
            if entry is None:
                continue
            age = now - entry[1]
            if age <= max_age:
                found[key] = entry[0]
                oldest = max(oldest, age)
        return found, oldest

    async def close(self) -> None:
        self._closed = True
        if self._round is not None:
            self._round.cancel()
            await asyncio.gather(self._round, return_exceptions=True)
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    # --- the round --------------------------------------------------------------------------
    def _round_finished(self, task: asyncio.Task[None]) -> None:
        self._round = None
        if not task.cancelled() and task.exception() is not None:
            log.error("lag end offsets: round failed", exc_info=task.exception())
        if self._round_done is not None:
            self._round_done.set_result(None)

    async def _run_round(self, partitions: Collection[TopicPartition]) -> None:
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        for key in partitions:
            leader = self._leader_of(key)
            if leader is not None and leader >= 0 and leader != self._broker_id:
                by_leader[leader].append(key)
        for leader in [b for b in self._connections if b not in by_leader]:
            self._connections.pop(leader).close()  # leads nothing we want any more
        await asyncio.gather(*(self._ask(leader, keys) for leader, keys in by_leader.items()))

    async def _ask(self, leader: int, keys: list[TopicPartition]) -> None:
        try:
            answers = await asyncio.wait_for(self._list_offsets(leader, keys), self._timeout)
        except Exception as exc:  # timeout, refused, closed: the cache keeps what it had
            connection = self._connections.pop(leader, None)
            if connection is not None:
                connection.close()
            if leader not in self._failing:
                self._failing.add(leader)
                log.warning("lag end offsets: broker %d did not answer ListOffsets (%s); "
                            "serving its partitions' last values for up to %.0fs", leader,
                            type(exc).__name__ if isinstance(exc, TimeoutError) else exc,
                            self._max_age)
            return
        if leader in self._failing:
            self._failing.discard(leader)
            log.info("lag end offsets: broker %d answers ListOffsets again", leader)
        now = self._clock()
        for key, offsets in answers.items():
            self._cache[key] = (offsets, now)

    async def _list_offsets(self, leader: int, keys: list[TopicPartition]
                            ) -> dict[TopicPartition, LogOffsets]:
        connection = await self._connect(leader)
        topics: dict[str, list[int]] = defaultdict(list)
        for topic, partition in keys:
            topics[topic].append(partition)

        def body(timestamp: int) -> dict[str, object]:
            return {"replica_id": _CONSUMER, "isolation_level": 0, "topics": [
                {"name": topic, "partitions": [
                    {"partition_index": p, "current_leader_epoch": -1, "timestamp": timestamp}
                    for p in indexes]}
                for topic, indexes in topics.items()]}

        latest = connection.send_nowait(ApiKey.LIST_OFFSETS, body(_LATEST))
        earliest = connection.send_nowait(ApiKey.LIST_OFFSETS, body(_EARLIEST))
        ends, starts = _offsets(await latest), _offsets(await earliest)
        return {key: LogOffsets(starts[key], end) for key, end in ends.items() if key in starts}

    async def _connect(self, leader: int) -> Connection:
        connection = self._connections.get(leader)
        if connection is not None and not connection.closed:
            return connection
        address = self._address_of(leader)
        if address is None:
            raise ConnectionError(f"broker {leader} is not registered")
        connection = await Connection.open(
            NodeAddress(leader, *address), f"odradek-broker-{self._broker_id}-lag",
            timeout=self._timeout, security=self._security)
        self._connections[leader] = connection
        return connection


def _offsets(response: Any) -> Mapping[TopicPartition, int]:  # ListOffsets, any version
    """The answered offsets; a partition with an error (NOT_LEADER_OR_FOLLOWER after a
    leadership change, ...) is skipped: its next round asks the new leader."""
    found: dict[TopicPartition, int] = {}
    for topic in response.topics:
        for part in topic.partitions:
            if int(part.error_code) == ErrorCode.none and int(part.offset) >= 0:
                found[TopicPartition(topic.name, int(part.partition_index))] = int(part.offset)
    return found
