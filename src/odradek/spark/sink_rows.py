"""Rows of Arrow batches onto an odradek producer, shared by the plain sink (:mod:`.sink`)
and the exactly-once one (:mod:`.exactly_once`), and the error both raise."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from odradek.clock import wall_ms

from ._internals import BATCH_HEADER_SIZE
from .arrow_produce import encode_rows, topic_rows
from .options import SinkOptions

__all__ = ["SinkError", "send_rows"]


class SinkError(RuntimeError):
    """Records could not be delivered; the message names the Kafka error."""


def send_rows(producer: Any, options: SinkOptions, batches: Iterator[pa.RecordBatch]
              ) -> tuple[list[Any], int, list[str]]:
    """Queue every row of ``batches`` on ``producer``: the futures, the row count and the
    topics written (in first-written order).

    Each Arrow batch is partitioned and encoded by compiled passes (:mod:`.arrow_produce`)
    and handed to the producer a whole producer batch at a time (``send_encoded``), which
    sequences, sends and retries it like any other batch."""
    config = producer.async_producer.config
    futures: list[Any] = []
    topics: list[str] = []
    sent = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        timestamp = wall_ms()
        try:
            for topic, rows in topic_rows(batch, options.topic):
                if topic not in topics:
                    topics.append(topic)
                all_partitions, available = producer.partitions(topic)
                futures += producer.send_encoded(topic, (
                    (encoded.partition, encoded.records, encoded.count)
                    for encoded in encode_rows(batch, rows, all_partitions, available,
                                               config.batch_size, BATCH_HEADER_SIZE)),
                    timestamp)
        except ValueError as exc:
            raise SinkError(str(exc)) from exc
        sent += batch.num_rows
    return futures, sent, topics
