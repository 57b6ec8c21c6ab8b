"""The producer's sender: one task that turns buffered batches into Produce requests.

It drains the partitions whose batches are ready (:mod:`.accumulator`), groups them by
leader into one Produce request per broker (at most ``max.in.flight.requests.per.connection``
outstanding per broker) and resolves the batches from the response; the send API in front
of it (:mod:`.producer`) only appends to the accumulator and wakes it.

Delivery guarantees: idempotence is on by default (with acks=all): the sender gets a
producer id (InitProducerId), stamps each batch with per-partition sequence numbers when it is
first drained and reuses the same bytes on every retry, so a retry after a lost response is
deduplicated by the broker (DUPLICATE_SEQUENCE_NUMBER counts as success) and order holds with
5 requests in flight. Retriable failures (connection loss, NOT_LEADER_OR_FOLLOWER, ...) put the
batch back at the front of its partition after ``retry.backoff.ms`` and refresh metadata,
until ``delivery.timeout.ms``; then — and on any fatal error — the batch's futures raise.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import epoch_millis

from .accumulator import ProducerBatch, RecordAccumulator
from .aio import Wakeup, result_within
from .cluster_client import STALE_METADATA_CODES, ClusterClient
from .errors import (
    BrokerResponseError,
    ConnectionFailed,
    DeliveryTimeout,
    KafkaClientError,
    UnsupportedByBroker,
)
from .metadata import TopicPartition
from .producer_config import ProducerConfig

if TYPE_CHECKING:
    from .transactions import TransactionManager

__all__ = ["Sender"]

log = logging.getLogger(__name__)

_SEQUENCE_WRAP = 1 << 31
# The broker no longer knows this producer id/epoch: bump the epoch (or a new id), then retry.
_PRODUCER_FENCED = (ErrorCode.unknown_producer_id, ErrorCode.invalid_producer_epoch)
#: Sequence and epoch errors an idempotent producer recovers from by itself (new id or
#: epoch, re-sequenced retry); in a transaction they fail it instead (see :mod:`.transactions`).
_RESEQUENCE = (ErrorCode.out_of_order_sequence_number, *_PRODUCER_FENCED)


class Sender:
    """The sender task and what only it changes: requests in flight per broker, the
    producer id and epoch, the next sequence number per partition. The send API wakes it
    through ``wakeup`` and waits on :attr:`idle` (nothing incomplete, for ``flush``) and
    :attr:`space` (buffer memory freed)."""

    def __init__(self, config: ProducerConfig, client: ClusterClient,
                 accumulator: RecordAccumulator, wakeup: Wakeup) -> None:
        self.config = config
        self.client = client
        self.accumulator = accumulator
        self._wakeup = wakeup
        self.idle = asyncio.Event()
        self.space = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.in_flight: dict[int, int] = {}
        self.producer_id = -1
        self.producer_epoch = -1
        self._next_sequence: dict[TopicPartition, int] = {}
        self.fatal: BaseException | None = None
        self._stopped = False
        self._responses: set[asyncio.Task[None]] = set()
        self._metadata_refresh: asyncio.Task[None] | None = None
        #: Set by a transactional producer: batches are added to its transaction before
        #: they are drained, and their failures fail it.
        self.txn: TransactionManager | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> asyncio.Task[None]:
        self.task = loop.create_task(self._run_sender(), name="odradek-sender")
        return self.task

    def stop(self) -> list[asyncio.Task[Any]]:
        """Stop the loop; returns the tasks still to cancel and await (the loop, the
        metadata refresh, the Produce requests in flight)."""
        self._stopped = True
        self._wakeup.set()
        return [t for t in (self.task, self._metadata_refresh, *self._responses)
                if t is not None]

    def fail_all(self, error: BaseException) -> None:
        for batch in self.accumulator.abort_all():
            self.finish(batch, -1, error=error)
        for batch in list(self.accumulator.incomplete):
            self.finish(batch, -1, error=error)

    # ------------------------------------------------------------------ the loop

    async def _run_sender(self) -> None:
        backoff = self.config.retry_backoff_ms / 1000
        while not self._stopped:
            # Cleared *before* looking at the accumulator: a wakeup that arrives while
            # _send_ready awaits (a response, a flush, a new batch) is kept, never lost.
            self._wakeup.clear()
            try:
                delay = await self._send_ready()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("producer sender loop error")
                delay = backoff
            if not self.accumulator.has_incomplete:
                self.idle.set()
            if delay > 0:
                await self._wakeup.wait(delay)
            else:
                await asyncio.sleep(0)

    async def _send_ready(self) -> float:
        now = monotonic_s()
        backoff = self.config.retry_backoff_ms / 1000
        for batch in self.accumulator.expired(now):
            self._expire(batch)
        if self.client.needs_refresh or self.client.add_topics(
                self.accumulator.unsent_topics()):
            # In the background: a refresh against an unreachable cluster can take minutes
            # of retries, and the sender must keep expiring batches meanwhile.
            self._refresh_metadata_soon()
        txn = self.txn
        if txn is not None:
            if self.producer_id < 0 or not txn.machine.may_drain:
                return backoff  # nothing is sent outside a live transaction
        elif (self.config.enable_idempotence and self.producer_id < 0
                and not await self._init_producer_id()):
            return backoff
        ready, delay = self.accumulator.ready(now, self._sequencing_id())
        if txn is not None and ready:
            ready = await txn.add_partitions(ready)
        if not ready:
            return delay
        metadata = self.client.metadata
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in ready:
            leader = metadata.leader_for(tp)
            if leader < 0:
                self.client.invalidate()
                delay = min(delay, backoff)
                continue
            by_node.setdefault(leader, []).append(tp)
        for node_id, tps in by_node.items():
            if self.in_flight.get(node_id, 0) >= self.config.max_in_flight:
                continue  # a response will wake us
            batches = self.drain_for_node(tps, now)
            if batches:
                self.in_flight[node_id] = self.in_flight.get(node_id, 0) + 1
                task = asyncio.get_running_loop().create_task(
                    self._send_produce(node_id, batches))
                self._responses.add(task)
                task.add_done_callback(self._responses.discard)
            if self.accumulator.ready(now, self._sequencing_id())[0]:
                delay = 0 if self.in_flight.get(node_id, 0) < self.config.max_in_flight \
                    else delay
        return delay

    def _refresh_metadata_soon(self) -> None:
        if self._metadata_refresh is not None and not self._metadata_refresh.done():
            return
        task = asyncio.get_running_loop().create_task(self._refresh_metadata(),
                                                      name="odradek-producer-metadata")
        self._metadata_refresh = task

    async def _refresh_metadata(self) -> None:
        try:
            await self.client.refresh_metadata()
        except KafkaClientError as exc:
            log.warning("metadata refresh failed: %s", exc)
        finally:
            self._wakeup.set()

    def _sequencing_id(self) -> int | None:
        """The producer id batches are numbered under (None without idempotence): a
        partition with a batch in flight under another id is not drained until it is back
        (see :mod:`.accumulator`)."""
        return self.producer_id if self.config.enable_idempotence else None

    def drain_for_node(self, tps: list[TopicPartition], now: float) -> list[ProducerBatch]:
        batches: list[ProducerBatch] = []
        size = 0
        compression = self.config.compression
        for tp in tps:
            batch = self.accumulator.drain(tp, now, self._sequencing_id())
            if batch is None:
                continue
            if self.config.enable_idempotence and batch.producer_id != self.producer_id:
                batch.encoded = None  # the producer id was reset: sequence it again
                batch.base_sequence = -1
            if self.config.enable_idempotence and batch.base_sequence < 0:
                sequence = self._next_sequence.get(tp, 0)
                batch.base_sequence = sequence
                batch.producer_id = self.producer_id
                batch.producer_epoch = self.producer_epoch
                self._next_sequence[tp] = (sequence + batch.record_count) % _SEQUENCE_WRAP
            try:
                encoded = batch.encode(compression, self.txn is not None)
            except Exception as exc:  # a codec failure fails this batch, not the sender
                self.finish(batch, -1, error=KafkaClientError(
                    f"cannot encode batch for {tp.topic}-{tp.partition}: {exc}"))
                continue
            if batches and size + len(encoded) > self.config.max_request_size:
                self.accumulator.reenqueue(batch, 0.0)
                break
            size += len(encoded)
            batches.append(batch)
        return batches

    async def _send_produce(self, node_id: int, batches: list[ProducerBatch]) -> None:
        acks = self.config.acks
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for batch in batches:
            batch.attempts += 1
            by_topic.setdefault(batch.tp.topic, []).append(
                {"index": batch.tp.partition, "records": batch.encoded})
        body = {
            "transactional_id": None if self.txn is None else self.txn.transactional_id,
            "acks": acks,
            "timeout": self.config.request_timeout_ms,
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in by_topic.items()],
        }
        try:
            try:
                # Bounded by the request timeout *and* the earliest delivery deadline, so
                # no batch outlives delivery.timeout.ms while its request hangs.
                deadline = min(monotonic_s() + self.config.request_timeout_ms / 1000 + 5,
                               min(batch.deadline for batch in batches))
                # An open connection is used at once (``wait_for`` would add a task and a
                # loop iteration before the batch is even written).
                conn = self.client.connected(node_id)
                if conn is None:
                    conn = await asyncio.wait_for(self.client.connection(node_id),
                                                  _remaining(deadline))
                if acks == 0:
                    await asyncio.wait_for(conn.send(ApiKey.PRODUCE, body,
                                                     expect_response=False),
                                           _remaining(deadline))
                    for batch in batches:
                        self.finish(batch, -1)
                    return
                # Written now, and the response awaited directly (a timer, no task): each
                # loop iteration saved is one less chance for an application thread holding
                # the GIL to stall the sender. At most max.in.flight requests of
                # max.request.size each are outstanding, which bounds the write buffer.
                response = await result_within(conn.send_nowait(ApiKey.PRODUCE, body),
                                               _remaining(deadline))
            except (TimeoutError, KafkaClientError, OSError) as exc:
                if isinstance(exc, TimeoutError):
                    # The request may or may not have been applied: the connection's
                    # stream position is unknown, so it is not reused.
                    self.client.drop_connection(node_id)
                    exc = ConnectionFailed(f"produce to broker {node_id} timed out")
                self.client.invalidate()
                for batch in batches:
                    self.retry_or_fail(batch, exc)
                return
            results: dict[TopicPartition, Any] = {}
            for topic_response in response.responses:
                for part in topic_response.partition_responses:
                    results[TopicPartition(topic_response.name, int(part.index))] = part
            for batch in batches:
                part = results.get(batch.tp)
                if part is None:
                    self.retry_or_fail(batch, ConnectionFailed(
                        f"broker {node_id} did not answer for {batch.tp}"))
                    continue
                code = part.error_code
                if code == ErrorCode.none:
                    self.finish(batch, int(part.base_offset),
                                 epoch_millis(getattr(part, "log_append_time", None)))
                elif code == ErrorCode.duplicate_sequence_number:
                    self.finish(batch, int(part.base_offset))
                else:
                    error = BrokerResponseError(code, f"produce to {batch.tp.topic}-"
                                                f"{batch.tp.partition}",
                                                getattr(part, "error_message", None))
                    if code in STALE_METADATA_CODES:
                        self.client.invalidate()
                    if self.txn is None and (code in _PRODUCER_FENCED or (
                            code == ErrorCode.out_of_order_sequence_number
                            and self.is_unfillable_gap(batch))):
                        self.reset_producer_id()
                    self.retry_or_fail(batch, error)
        except Exception as exc:  # never leave a batch unresolved
            log.exception("unexpected error handling a produce response")
            for batch in batches:
                if not batch.result.done:
                    self.finish(batch, -1, error=KafkaClientError(f"internal error: {exc!r}"))
        finally:
            self.in_flight[node_id] = max(0, self.in_flight.get(node_id, 1) - 1)
            self._wakeup.set()

    def retry_or_fail(self, batch: ProducerBatch, error: BaseException) -> None:
        now = monotonic_s()
        if self.txn is not None and isinstance(error, BrokerResponseError) and (
                error.code in _RESEQUENCE or error.code == ErrorCode.producer_fenced):
            retriable = False  # the transaction fails (fatally when fenced)
        else:
            retriable = getattr(error, "retriable", False) or (
                isinstance(error, BrokerResponseError) and error.code in _RESEQUENCE)
        if (retriable and not self._closing_hard() and batch.attempts <= self.config.retries
                and now < batch.deadline):
            log.debug("retrying %s after %s", batch.tp, error)
            self.accumulator.reenqueue(batch, now + self.config.retry_backoff_ms / 1000)
            return
        if retriable and now >= batch.deadline:
            self._expire(batch, error)
            return
        self.finish(batch, -1, error=error)

    def _expire(self, batch: ProducerBatch, cause: BaseException | None = None) -> None:
        """Fail a batch past ``delivery.timeout.ms``. If it carried sequence numbers the
        broker may or may not have them, so later batches would hit
        ErrorCode.out_of_order_sequence_number until their own deadlines: start a new producer id
        instead (what the Java client does)."""
        detail = f" (last error: {cause})" if cause is not None else ""
        self.finish(batch, -1, error=DeliveryTimeout(
            f"{batch.record_count} records for {batch.tp.topic}-{batch.tp.partition} not "
            f"delivered within delivery.timeout.ms={self.config.delivery_timeout_ms}{detail}"))
        if (self.config.enable_idempotence and batch.base_sequence >= 0 and self.txn is None
                and batch.producer_id == self.producer_id):  # else reset already
            self.reset_producer_id()

    def _closing_hard(self) -> bool:
        return self.accumulator.closed

    def finish(self, batch: ProducerBatch, base_offset: int, log_append_time: int = -1,
                error: BaseException | None = None) -> None:
        batch.complete(base_offset, log_append_time, error)
        self.accumulator.release(batch)
        if error is not None and self.txn is not None:
            if isinstance(error, BrokerResponseError):
                self.txn.machine.on_error(error)
            else:
                self.txn.machine.abortable(error)
        self.space.set()
        if not self.accumulator.has_incomplete:
            self.idle.set()

    # ------------------------------------------------------------------ idempotence

    async def _init_producer_id(self) -> bool:
        try:
            conn = await self.client.any_connection()
            if not conn.supports(ApiKey.INIT_PRODUCER_ID):
                log.warning("broker has no InitProducerId: idempotence disabled")
                self.config.enable_idempotence = False
                return True
            response = await self.client.send(None, ApiKey.INIT_PRODUCER_ID, {
                "transactional_id": None, "transaction_timeout": 60_000,
                "producer_id": -1, "producer_epoch": -1})
        except (KafkaClientError, UnsupportedByBroker) as exc:
            log.warning("InitProducerId failed: %s", exc)
            return False
        code = response.error_code
        if code:
            error = BrokerResponseError(code, "InitProducerId")
            if not error.retriable:
                self.fatal = error
                self.fail_all(error)
            log.warning("%s", error)
            return False
        self.producer_id = int(response.producer_id)
        self.producer_epoch = int(response.producer_epoch)
        log.debug("producer id %d epoch %d", self.producer_id, self.producer_epoch)
        return True

    def is_unfillable_gap(self, batch: ProducerBatch) -> bool:
        """OUT_OF_ORDER_SEQUENCE_NUMBER for ``batch`` with no earlier batch of its partition
        still pending under the same producer id: retrying can never succeed.

        This is how the perf-produce hang happened: the first batch to a just-created
        partition failed retriably (NOT_LEADER_OR_FOLLOWER), and a later pipelined batch
        arrived once the broker was leader; a broker with no state for a producer id accepts
        *any* first sequence, so it took the later batch, and every retry of the earlier one
        then got ErrorCode.out_of_order_sequence_number until delivery.timeout.ms (120 s). Like the
        Java client, start a new producer id; the unacknowledged batches are re-sequenced.
        """
        if batch.base_sequence < 0 or batch.producer_id != self.producer_id:
            return False  # already re-sequenced (or about to be) under a new id
        return not any(
            other is not batch and other.tp == batch.tp
            and other.producer_id == batch.producer_id
            and 0 <= other.base_sequence < batch.base_sequence
            for other in list(self.accumulator.incomplete))

    def use_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        """A (transactional) InitProducerId answered: number batches from 0 under it."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self._next_sequence.clear()

    def drop_queued(self, error: BaseException) -> None:
        """Fail every batch not yet sent (an aborted transaction's); in-flight ones are
        left to their responses."""
        for batch in self.accumulator.abort_all():
            self.finish(batch, -1, error=error)

    def reset_producer_id(self) -> None:
        """The broker forgot us (ErrorCode.unknown_producer_id): start a new id, re-sequence unsent
        batches. In-flight ones fail and come back here as retries."""
        self.producer_id = -1
        self._next_sequence.clear()
        with self.accumulator.lock:
            for queue in self.accumulator.batches.values():
                for batch in queue:
                    batch.encoded = None
                    batch.base_sequence = -1


def _remaining(deadline: float) -> float:
    return max(deadline - monotonic_s(), 0.001)
