"""Exactly-once streaming writes (``writeStream.format("odradek")`` with
``transactionalIdPrefix``): each sink task writes its partition of a micro-batch in one Kafka
transaction, and stores *how far it got* in that same transaction — the paper's rule for
exactly-once loading (the offsets reached are stored with the output, atomically), with the
transaction making the two one write.

Identity. The task's ``transactional.id`` is ``<prefix>-<queryId>-<partitionId>``: the query id
Spark keeps in the checkpoint (stable across restarts) and the task's Spark partition. Every
attempt of that task, in this run or after a restart, has the same id, so its
``init_transactions`` fences any older attempt still alive (a zombie's commit fails with
PRODUCER_FENCED) and aborts whatever that attempt left open.

Marker. Inside the transaction the task commits, for a consumer group of its own (named like
its transactional id), the offset ``batchId + 1`` (TxnOffsetCommit; the key is partition 0 of
the first topic written, which always exists). A group offset commits with the transaction or
not at all. The name is :func:`odradek.metrics.lag.sink_marker_group`'s, by which the consumer
lag metrics know to leave these groups out (they are not consumers: their lag would never
drain). Before writing, a task reads that offset (OffsetFetch with ``require_stable``, after
``init_transactions`` has finished any earlier attempt): if it is already past this batch, the
batch was committed by an earlier attempt whose success Spark never recorded (the driver died
between the tasks' commits and its commit log), and the task writes nothing.

Why a group offset and not a record in a topic: it needs no extra topic, it is read with one
request, and TxnOffsetCommit is exactly the broker's mechanism for "state committed with a
transaction" (Kafka Streams' exactly-once uses it the same way).

What it assumes: a re-run micro-batch hands each Spark partition the same rows (Spark's
exactly-once contract for sinks: replayable sources and a deterministic plan), and readers
use ``isolation.level=read_committed`` (``kafka.isolation.level`` for ``format("odradek")``
and Spark's Kafka source).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark import TaskContext

from odradek.clock import monotonic_s
from odradek.metrics.lag import sink_marker_group

from .options import SinkOptions

__all__ = ["committed_batches", "produce_exactly_once", "produce_in_task", "task_identity"]

#: Spark's local properties for the running micro-batch (StreamExecution.QUERY_ID_KEY and
#: MicroBatchExecution.BATCH_ID_KEY); Python workers receive them in their TaskContext.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


def task_identity(prefix: str) -> tuple[str, int]:
    """The running task's transactional id and micro-batch id."""
    # the client only in steps that talk to the cluster (spark/source.py)
    from .sink_rows import SinkError

    context = TaskContext.get()
    query = context.getLocalProperty(QUERY_ID_PROPERTY) if context is not None else None
    batch = context.getLocalProperty(BATCH_ID_PROPERTY) if context is not None else None
    if context is None or query is None or batch is None:
        raise SinkError("transactionalIdPrefix: not in a streaming micro-batch task (no "
                        f"{QUERY_ID_PROPERTY} / {BATCH_ID_PROPERTY} in the task context)")
    return sink_marker_group(prefix, query, context.partitionId()), int(batch)


def produce_in_task(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> int:
    assert options.transactional_id_prefix is not None
    transactional_id, batch_id = task_identity(options.transactional_id_prefix)
    return produce_exactly_once(options, batches, transactional_id, batch_id)


def committed_batches(admin: Any, group: str, timeout: float = 30.0) -> int:
    """How many micro-batches the task with marker group ``group`` has committed (the
    marker offset; 0 for none). Pending transactional offsets are waited for."""
    # the client only in steps that talk to the cluster (spark/source.py)
    from ._internals import BrokerResponseError, ErrorCode

    deadline = monotonic_s() + timeout
    while True:
        try:
            offsets = admin.list_group_offsets(group, require_stable=True)
        except BrokerResponseError as exc:
            if exc.code != ErrorCode.unstable_offset_commit or monotonic_s() > deadline:
                raise
            time.sleep(0.05)
            continue
        return max(offsets.values(), default=0)


def produce_exactly_once(options: SinkOptions, batches: Iterator[pa.RecordBatch],
                         transactional_id: str, batch_id: int) -> int:
    """Write ``batches`` as micro-batch ``batch_id`` of the task ``transactional_id``:
    all of it in one transaction with its marker, or nothing if an earlier attempt already
    committed it. Returns the rows written (0 when skipped)."""
    # the client only in steps that talk to the cluster (spark/source.py)
    from ._internals import AdminClient, KafkaClientError, Producer, TopicPartition
    from .sink_rows import SinkError, send_rows

    settings = dict(options.producer)
    settings.setdefault("client_id", "odradek-spark-sink")
    settings.update(options.security)
    group = transactional_id
    try:
        producer = Producer(options.bootstrap_servers, transactional_id=transactional_id,
                            **settings)
    except (KafkaClientError, ValueError) as exc:
        raise SinkError(f"transactional producer {transactional_id!r}: {exc}") from exc
    committed = False
    try:
        producer.init_transactions()  # fences older attempts, ends what they left open
        admin = AdminClient(options.bootstrap_servers, **options.security)
        try:
            if committed_batches(admin, group) > batch_id:
                return 0  # an earlier attempt committed this batch
        finally:
            admin.close()
        producer.begin_transaction()
        _futures, sent, topics = send_rows(producer, options, batches)
        if topics:
            producer.send_offsets_to_transaction(
                {TopicPartition(topics[0], 0): batch_id + 1}, group)
        producer.commit_transaction()
        committed = True
        return sent
    except KafkaClientError as exc:
        raise SinkError(f"exactly-once write of batch {batch_id} by {transactional_id!r} "
                        f"failed: {exc}") from exc
    finally:
        if not committed:
            _abort_quietly(producer)
        producer.close()


def _abort_quietly(producer: Any) -> None:
    """Abort at once rather than leave the transaction open (it would hold back every
    read_committed reader until ``transaction.timeout.ms``); the next attempt's
    ``init_transactions`` aborts it anyway if this fails."""
    # the client only in steps that talk to the cluster (spark/source.py)
    from ._internals import KafkaClientError, TxnState

    state = producer.async_producer.transactions.machine.state
    if state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR, TxnState.ABORTING):
        with contextlib.suppress(KafkaClientError, TimeoutError):
            producer.abort_transaction()
