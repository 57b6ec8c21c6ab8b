"""The row layout of Spark's Kafka source, which odradek's source reproduces exactly.

A job moves between ``format("kafka")`` and ``format("odradek")`` by changing the name only if
both produce the same columns with the same types and nullability, so the schema is spelled
out here once, as Spark's ``KafkaRecordToRowConverter`` defines it, together with the Arrow
schema the Python Data Source API requires for that Spark schema (Spark checks it batch by
batch).
"""

from __future__ import annotations

from functools import cache

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["HEADERS_TYPE", "arrow_schema", "kafka_schema"]

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()),
                                     StructField("value", BinaryType())]))

_COLUMNS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]


def kafka_schema(include_headers: bool = False) -> StructType:
    """``key, value, topic, partition, offset, timestamp, timestampType[, headers]``."""
    fields = list(_COLUMNS)
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


@cache
def arrow_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema Spark expects from ``read()`` for :func:`kafka_schema`."""
    return to_arrow_schema(kafka_schema(include_headers), timezone="UTC")
