"""Producing known records and comparing them with the rows Spark returns."""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from odradek.client import Producer

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class Produced:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int

    def row(self, topic: str, headers: bool = True) -> tuple[Any, ...]:
        """The row Spark's Kafka source returns for this record (headers null, not [], when
        the record has none)."""
        ts = datetime.datetime.fromtimestamp(self.timestamp / 1000, datetime.UTC)
        base = (self.key, self.value, topic, self.partition, self.offset,
                ts.replace(tzinfo=None), 0)
        return (*base, list(self.headers) or None) if headers else base


def random_records(n: int, seed: int = 0) -> list[tuple[bytes | None, bytes | None,
                                                          list[tuple[str, bytes | None]]]]:
    """Keys (some null), values of many sizes (some null), headers (some null values)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else f"user-{rnd.randrange(50)}".encode()
        size = rnd.choice((0, 1, 12, 13, 100, 1000, 5000))
        value = None if i % 11 == 5 else bytes(rnd.randrange(256) for _ in range(size))
        headers = [(f"h{j}", None if (i + j) % 5 == 0 else f"v{i}-{j}".encode())
                   for j in range(rnd.choice((0, 0, 1, 3)))]
        out.append((key, value, headers))
    return out


def produce(bootstrap: str, topic: str, records: Iterable[tuple[Any, Any, Any]], *,
            compression: str = "none", partitions: Sequence[int] | None = None,
            timestamp: int | None = None) -> list[Produced]:
    """Send ``records`` (round-robin over ``partitions`` when given) and return what the
    broker stored, with offsets."""
    with Producer(bootstrap, compression_type=None if compression == "none" else compression,
                  linger_ms=5) as producer:
        sent = []
        for i, (key, value, headers) in enumerate(records):
            partition = partitions[i % len(partitions)] if partitions else None
            future = producer.send(topic, value, key=key, headers=headers or None,
                                   partition=partition, timestamp=timestamp)
            sent.append((future, key, value, tuple(headers or ())))
        producer.flush()
        out = []
        for future, key, value, headers in sent:
            meta = future.get(30)
            out.append(Produced(meta.partition, meta.offset, key, value, headers,
                                meta.timestamp))
    return out


def rows(df: Any) -> list[tuple[Any, ...]]:
    """Rows as plain tuples (headers as lists of (key, value), or None as Spark returns it
    for a record without headers), sorted by partition/offset."""
    out = []
    for row in df.collect():
        values = list(row)
        if "headers" in row.__fields__:
            index = row.__fields__.index("headers")
            if values[index] is not None:
                values[index] = [(h["key"], h["value"]) for h in values[index]]
        out.append(tuple(bytes(v) if isinstance(v, bytearray) else v for v in values))
    fields = df.columns
    return sorted(out, key=lambda r: (r[fields.index("topic")] if "topic" in fields else "",
                                      r[fields.index("partition")], r[fields.index("offset")]))


def expected(topic: str, produced: Iterable[Produced], headers: bool = True
             ) -> list[tuple[Any, ...]]:
    return sorted((p.row(topic, headers) for p in produced), key=lambda r: (r[3], r[4]))
