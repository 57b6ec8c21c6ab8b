"""Raw reads of offset ranges: record batches exactly as the broker sent them, for bulk decoders.

The consumer turns every record into a :class:`ConsumerRecord`, which is what an application
iterating messages wants. A columnar reader (Spark's source, which builds Arrow arrays from
whole batches) wants the opposite: the bytes, untouched, and nothing per record. A
:class:`RangeReader` reads ``[start, end)`` of one partition from its leader and yields
:class:`FetchedChunk` objects holding the Fetch response's record bytes. It decodes only the
61-byte batch headers, to know where the next fetch starts, and keeps that next fetch in flight
while the caller decodes the current chunk (the network and the decoder overlap).

The range is fixed when the reader starts (the planner read the offsets with ListOffsets), so
there is no group, no position reset and no commit. Two things can still go wrong, and both
are the caller's to judge: the start is below the log start offset (deleted by retention:
``on_data_loss`` says whether to fail or skip ahead), or the end is above the high watermark
(a leader was replaced and the log truncated: after ``poll_timeout`` the read fails).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.records import CorruptBatch, iter_batch_headers

from .cluster_client import STALE_METADATA_CODES, ClusterClient
from .errors import BrokerResponseError, ConnectionFailed, KafkaClientError
from .metadata import TopicPartition
from .offsets import EARLIEST, list_offsets
from .read_committed import aborted_batch_offsets, without_batches
from .security import ClientSecurity
from .sync import run

__all__ = ["AsyncRangeReader", "FetchedChunk", "RangeReader", "next_fetch_offset"]

OFFSET_OUT_OF_RANGE = 1

#: ``on_data_loss(tp, missing_from, missing_until)``: raise to fail the read, return to skip.
DataLossHandler = Callable[[TopicPartition, int, int], None]


class FetchedChunk(NamedTuple):
    """One partition's part of a Fetch response."""

    records: bytes           # whole RecordBatch v2 batches (a partial one may end it)
    fetch_offset: int        # the offset asked for: the first batch may start before it
    next_offset: int         # where the next fetch starts (after the last complete batch)
    high_watermark: int
    log_start_offset: int


def next_fetch_offset(records: bytes | memoryview, fetch_offset: int) -> int:
    """The offset after the last complete batch in ``records`` (``fetch_offset`` if none).

    Only batch headers are read. A truncated batch at the end (the broker cut the response at
    ``max_bytes``) is left for the next fetch.
    """
    next_offset = fetch_offset
    try:
        for _pos, header in iter_batch_headers(records):
            next_offset = max(next_offset, header.base_offset + header.last_offset_delta + 1)
    except CorruptBatch as exc:
        if "torn batch" not in str(exc):
            raise
    return next_offset


def _default_data_loss(tp: TopicPartition, start: int, until: int) -> None:
    raise BrokerResponseError(OFFSET_OUT_OF_RANGE,
                              f"{tp.topic}-{tp.partition}: offsets [{start}, {until}) are no "
                              f"longer in the log")


class AsyncRangeReader:
    """Fetches raw record bytes per partition from its leader (asyncio API)."""

    def __init__(self, bootstrap_servers: str | Iterable[str], *,
                 client_id: str = "odradek-range-reader", request_timeout_ms: int = 30_000,
                 retry_backoff_ms: int = 100, metadata_max_age_ms: int = 300_000,
                 max_partition_fetch_bytes: int = 8 * 1024 * 1024,
                 fetch_max_wait_ms: int = 500, isolation_level: str = "read_uncommitted",
                 **security: Any) -> None:
        """``security``: kafka-python's names (``security_protocol``, ``ssl_cafile``,
        ``sasl_mechanism``, ...; :class:`~odradek.client.security.ClientSecurity`)."""
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError("isolation_level must be read_uncommitted or read_committed")
        self.client = ClusterClient(bootstrap_servers, client_id=client_id,
                                    request_timeout_ms=request_timeout_ms,
                                    retry_backoff_ms=retry_backoff_ms,
                                    metadata_max_age_ms=metadata_max_age_ms,
                                    security=ClientSecurity.create(**security))
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.isolation_level = 1 if isolation_level == "read_committed" else 0
        self._ahead: dict[tuple[TopicPartition, int], asyncio.Task[FetchedChunk]] = {}

    async def fetch(self, tp: TopicPartition, offset: int, *, attempts: int = 8
                    ) -> FetchedChunk:
        """One Fetch of ``tp`` at ``offset`` from its leader (the prefetched one if
        :meth:`prefetch` asked for it). Stale leaders and broken connections are retried
        with a metadata refresh; other broker errors raise :class:`BrokerResponseError`."""
        task = self._ahead.pop((tp, offset), None)
        if task is not None:
            return await task
        return await self._fetch_retrying(tp, offset, attempts)

    async def _fetch_retrying(self, tp: TopicPartition, offset: int, attempts: int = 8
                              ) -> FetchedChunk:
        last: KafkaClientError | None = None
        for attempt in range(attempts):
            try:
                return await self._fetch_once(tp, offset)
            except BrokerResponseError as exc:
                if exc.code not in STALE_METADATA_CODES and not exc.retriable:
                    raise
                last = exc
            except ConnectionFailed as exc:
                last = exc
            self.client.invalidate()
            await asyncio.sleep(self.client.retry_backoff * (attempt + 1))
        assert last is not None
        raise last

    async def prefetch(self, tp: TopicPartition, offset: int) -> None:
        """Start fetching ``tp`` at ``offset`` now; a later :meth:`fetch` of the same offset
        gets the result."""
        for key in [k for k in self._ahead if k[0] == tp and k[1] != offset]:
            self._ahead.pop(key).cancel()
        if (tp, offset) not in self._ahead:
            self._ahead[(tp, offset)] = asyncio.get_running_loop().create_task(
                self._fetch_retrying(tp, offset))

    async def log_start_offset(self, tp: TopicPartition) -> int:
        found = await list_offsets(self.client, {tp: EARLIEST})
        value = found.get(tp)
        return value.offset if value is not None else 0

    async def _fetch_once(self, tp: TopicPartition, offset: int) -> FetchedChunk:
        metadata = self.client.metadata
        if self.client.needs_refresh or not metadata.knows([tp.topic]):
            metadata = await self.client.refresh_metadata([tp.topic])
        if tp.topic in metadata.topics and metadata.partition(tp) is None:
            raise BrokerResponseError(3, f"{tp.topic}-{tp.partition}")
        leader = metadata.leader_for(tp)
        if leader < 0:
            raise BrokerResponseError(5, f"no leader for {tp.topic}-{tp.partition}")
        body: dict[str, Any] = {
            "cluster_id": None, "replica_id": -1, "max_wait": self.fetch_max_wait_ms,
            "min_bytes": 1, "max_bytes": self.max_partition_fetch_bytes,
            "isolation_level": self.isolation_level, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": tp.topic, "partitions": [{
                "partition": tp.partition, "current_leader_epoch": -1, "fetch_offset": offset,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": self.max_partition_fetch_bytes}]}],
            "forgotten_topics_data": [], "rack_id": "",
        }
        conn = await self.client.connection(leader)
        try:
            response = await asyncio.wait_for(
                conn.send(ApiKey.FETCH, body),
                self.client.request_timeout + self.fetch_max_wait_ms / 1000)
        except TimeoutError:
            self.client.drop_connection(leader)
            raise ConnectionFailed(f"Fetch {tp.topic}-{tp.partition} from {conn.address} "
                                   f"timed out") from None
        except ConnectionFailed:
            self.client.drop_connection(leader)
            raise
        code = int(getattr(response, "error_code", 0))
        if code:
            raise BrokerResponseError(code, f"Fetch {tp.topic}-{tp.partition}")
        for topic in response.responses:
            for part in topic.partitions:
                if topic.topic != tp.topic or int(part.partition_index) != tp.partition:
                    continue
                code = int(part.error_code)
                if code:
                    raise BrokerResponseError(code, f"Fetch {tp.topic}-{tp.partition} "
                                                    f"at offset {offset}")
                records = part.records
                records = b"" if records is None else bytes(records)
                following = next_fetch_offset(records, offset)  # past aborted batches too
                aborted = [(int(t.producer_id), int(t.first_offset))
                           for t in getattr(part, "aborted_transactions", None) or ()]
                if aborted:
                    records = without_batches(records, aborted_batch_offsets(records, aborted))
                return FetchedChunk(records, offset, following,
                                    int(part.high_watermark),
                                    int(getattr(part, "log_start_offset", -1)))
        raise BrokerResponseError(3, f"Fetch response without {tp.topic}-{tp.partition}")

    async def close(self) -> None:
        for task in self._ahead.values():
            task.cancel()
        self._ahead.clear()
        await self.client.close()


class RangeReader:
    """Blocking facade: ``for chunk in reader.chunks(tp, start, end): decode(chunk)``.

    Runs on the client's shared event-loop thread, so the prefetch proceeds while the calling
    thread decodes.
    """

    def __init__(self, bootstrap_servers: str | Iterable[str], **settings: Any) -> None:
        self._async = run(self._create(bootstrap_servers, settings))

    @staticmethod
    async def _create(bootstrap: str | Iterable[str], settings: dict[str, Any]
                      ) -> AsyncRangeReader:
        return AsyncRangeReader(bootstrap, **settings)

    def chunks(self, tp: TopicPartition | tuple[str, int], start: int, end: int, *,
               poll_timeout: float = 120.0, on_data_loss: DataLossHandler | None = None
               ) -> Iterator[FetchedChunk]:
        """Raw chunks covering ``[start, end)`` of ``tp`` in order (the first may begin before
        ``start``, the last may run past ``end``: whole batches). Ends early only when
        ``on_data_loss`` lets missing data be skipped."""
        tp = TopicPartition(*tp)
        handler = on_data_loss or _default_data_loss
        reader = self._async
        position = start
        stalled_since: float | None = None
        while position < end:
            try:
                chunk = run(reader.fetch(tp, position))
            except BrokerResponseError as exc:
                if exc.code != OFFSET_OUT_OF_RANGE:
                    raise
                log_start = run(reader.log_start_offset(tp))
                if log_start <= position:
                    raise  # above the log end: the log was truncated under us
                handler(tp, position, min(log_start, end))
                position = log_start
                continue
            if chunk.next_offset > position:
                stalled_since = None
                position = chunk.next_offset
                if position < end:
                    run(reader.prefetch(tp, position))
                yield chunk
                continue
            if chunk.records:
                raise KafkaClientError(
                    f"{tp.topic}-{tp.partition}: the batch at offset {position} is larger than "
                    f"max.partition.fetch.bytes ({reader.max_partition_fetch_bytes})")
            if chunk.log_start_offset >= 0 and position < chunk.log_start_offset:
                handler(tp, position, min(chunk.log_start_offset, end))
                position = chunk.log_start_offset
                continue
            # Nothing at ``position`` yet: the high watermark is below the planned end.
            now = monotonic_s()
            stalled_since = stalled_since or now
            if now - stalled_since > poll_timeout:
                raise KafkaClientError(
                    f"{tp.topic}-{tp.partition}: no record at offset {position} after "
                    f"{poll_timeout:.0f}s (high watermark {chunk.high_watermark}, planned end "
                    f"{end}): the log may have been truncated")

    def log_start_offset(self, tp: TopicPartition | tuple[str, int]) -> int:
        return run(self._async.log_start_offset(TopicPartition(*tp)))

    def close(self) -> None:
        run(self._async.close())

    def __enter__(self) -> RangeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
