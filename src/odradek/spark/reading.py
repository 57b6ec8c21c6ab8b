"""The executor side of the source: one offset range → Arrow record batches.

Runs in Spark's Python workers. A worker is reused across tasks (``spark.python.worker.reuse``),
so its :class:`RangeReader` — connections to the brokers and a metadata cache — is kept per
cluster and client settings instead of reconnecting for every task (Spark's Kafka source
caches its consumers for the same reason).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections.abc import Iterator

import pyarrow as pa

from ._internals import RangeReader, TopicPartition
from .arrow_records import decode_chunk
from .options import SourceOptions
from .planning import OffsetRange

__all__ = ["DataLossError", "data_loss_message", "read_range"]

log = logging.getLogger(__name__)

_readers: dict[tuple[str, tuple[tuple[str, object], ...]], RangeReader] = {}
_lock = threading.Lock()


class DataLossError(RuntimeError):
    """Offsets the query needs are gone (retention, a deleted or recreated topic)."""


def data_loss_message(detail: str) -> str:
    return (f"{detail}. Some data may have been lost because it is not available in the "
            f"cluster any more: either it was aged out by retention or the topic was deleted "
            f"before all of it was processed. If you don't want the query to fail in such "
            f"cases, set the source option 'failOnDataLoss' to 'false'.")


def _reader(options: SourceOptions) -> RangeReader:
    settings = dict(options.client)
    settings.setdefault("client_id", "odradek-spark")
    settings.update(options.security)
    key = (options.bootstrap_servers, tuple(sorted(settings.items())))
    with _lock:
        reader = _readers.get(key)
        if reader is None:
            reader = _readers[key] = RangeReader(options.bootstrap_servers, **settings)
            atexit.register(_close, reader)
        return reader


def _close(reader: RangeReader) -> None:
    with contextlib.suppress(Exception):  # interpreter shutdown: nobody left to tell
        reader.close()


def read_range(options: SourceOptions, offsets: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Every record of ``offsets`` in order, one Arrow batch per Fetch response."""
    if offsets.end <= offsets.start:
        return
    tp = TopicPartition(offsets.topic, offsets.partition)

    def lost(tp: TopicPartition, start: int, until: int) -> None:
        detail = (f"Cannot fetch offsets [{start}, {until}) of {tp.topic}-{tp.partition}: "
                  f"the log now starts at {until}")
        if options.fail_on_data_loss:
            raise DataLossError(data_loss_message(detail))
        log.warning("%s; skipping them (failOnDataLoss=false)", detail)

    reader = _reader(options)
    for chunk in reader.chunks(tp, offsets.start, offsets.end,
                               poll_timeout=options.poll_timeout_ms / 1000, on_data_loss=lost):
        batch = decode_chunk(chunk.records, topic=offsets.topic, partition=offsets.partition,
                             start=chunk.fetch_offset, until=offsets.end,
                             include_headers=options.include_headers,
                             check_crcs=options.check_crcs)
        if batch is not None:
            yield batch
