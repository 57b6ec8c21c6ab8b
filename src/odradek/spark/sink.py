"""``df.write.format("odradek")`` and ``writeStream``: rows → records, as Spark's Kafka sink.

Columns, as Spark's Kafka sink takes them: ``value`` (string or binary, required; null writes
a tombstone), ``key`` (string or binary, optional), ``topic`` (string; the ``topic`` option
overrides it), ``partition`` (int, optional: otherwise keys hash with murmur2 and keyless
records go to a sticky partition), ``headers`` (``array<struct<key string, value binary>>``,
optional). Other columns are an error, as are wrong types — both found on the driver before
any task runs.

Rows are never handled one by one in Python: each Arrow batch is partitioned (murmur2, as the
Java client does) and encoded into RecordBatch v2 bodies by compiled passes
(:mod:`.arrow_produce`), then handed over a producer batch at a time. Tasks produce through
odradek's idempotent producer (acks=all unless ``kafka.acks`` says otherwise), kept per Python
worker like Spark's cached Kafka producers, and flush before they finish: a task succeeds only
when every record it sent is acknowledged. A delivery failure fails the task with the Kafka
error's name (``UNKNOWN_TOPIC_OR_PARTITION``, ``MESSAGE_TOO_LARGE``, ...). Delivery is
at-least-once, like Spark's Kafka sink: a retried task or micro-batch writes its records again
— unless the ``transactionalIdPrefix`` option makes a streaming write exactly-once
(:mod:`.exactly_once`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from .options import OptionError, SinkOptions
from .sink_rows import SinkError, send_rows

__all__ = ["BatchWriter", "SinkError", "StreamWriter"]

_producers: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}
_lock = threading.Lock()


@dataclass
class WriteCommit(WriterCommitMessage):
    records: int


def _column_type_error(name: str, allowed: str, got: Any) -> OptionError:
    return OptionError(name, f"the '{name}' column must be {allowed}, got "
                       f"{got.simpleString()}")


def check_input(schema: StructType, options: SinkOptions) -> None:
    """Spark's Kafka sink rules for the input columns (``KafkaWriter.validateQuery``)."""
    fields = {f.name: f.dataType for f in schema.fields}
    extra = sorted(set(fields) - {"key", "value", "topic", "partition", "headers"})
    if extra:
        raise OptionError("schema", f"unexpected column(s) {extra}: the sink takes key, "
                          f"value, topic, partition and headers")
    if "value" not in fields:
        raise OptionError("value", "required column 'value' not found")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], (StringType, BinaryType)):
            raise _column_type_error(name, "string or binary", fields[name])
    if options.topic is None and "topic" not in fields:
        raise OptionError("topic", "no topic: add a 'topic' column or set the 'topic' "
                              "option")
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise _column_type_error("topic", "string", fields["topic"])
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise _column_type_error("partition", "int", fields["partition"])
    if "headers" in fields:
        headers = fields["headers"]
        ok = (isinstance(headers, ArrayType) and isinstance(headers.elementType, StructType)
              and [f.name for f in headers.elementType.fields] == ["key", "value"]
              and isinstance(headers.elementType["key"].dataType, StringType)
              and isinstance(headers.elementType["value"].dataType, BinaryType))
        if not ok:
            raise _column_type_error("headers", "array<struct<key:string,value:binary>>",
                                     headers)


def _producer(options: SinkOptions) -> Any:
    # the client only in steps that talk to the cluster (spark/source.py)
    from ._internals import Producer

    settings = dict(options.producer)
    settings.setdefault("client_id", "odradek-spark-sink")
    settings.update(options.security)
    key = (options.bootstrap_servers, tuple(sorted(settings.items())))
    with _lock:
        producer = _producers.get(key)
        if producer is None:
            producer = _producers[key] = Producer(options.bootstrap_servers, **settings)
        return producer


def produce(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Send every row of ``batches``; returns how many, once all are acknowledged."""
    # the client only in steps that talk to the cluster (spark/source.py)
    from ._internals import KafkaClientError

    producer = _producer(options)
    try:
        futures, sent, _topics = send_rows(producer, options, batches)
        producer.flush()
    except KafkaClientError as exc:
        raise SinkError(f"writing to odradek failed: {exc}") from exc
    for future in futures:
        error = future.exception(0)
        if error is not None:
            raise SinkError(f"writing to odradek failed: {error}") from error
    return sent


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions, schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise OptionError("mode", "save mode Overwrite is not allowed for a topic (it is "
                              "append-only): use mode('append')")
        if options.transactional_id_prefix is not None:
            raise OptionError("transactionalIdPrefix", "exactly-once writes are for "
                              "writeStream (a batch write has no micro-batch id to "
                              "recognize a retry by)")
        check_input(schema, options)
        self.opts = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommit:
        return WriteCommit(produce(self.opts, iterator))


class StreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, schema: StructType, overwrite: bool) -> None:
        check_input(schema, options)
        self.opts = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommit:
        if self.opts.transactional_id_prefix is not None:
            # exactly-once only with transactionalIdPrefix
            from .exactly_once import produce_in_task

            return WriteCommit(produce_in_task(self.opts, iterator))
        return WriteCommit(produce(self.opts, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records are acknowledged when tasks finish; nothing is left to commit."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records already acknowledged stay (at-least-once, as with Spark's Kafka sink;
        with ``transactionalIdPrefix`` a re-run of the batch skips what was committed)."""
