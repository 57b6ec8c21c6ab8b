"""``format("odradek")``: the Python Data Source that Spark loads for reads and writes.

Everything here runs on the driver except ``read``/``write`` (executors). Spark creates the
data source from the options on every plan, so checking option *names* in the constructor
reports a typo at ``load()``/``save()`` time; the mode-specific checks (batch, streaming, sink)
happen when Spark asks for the reader or writer.

Spark runs each of those steps in a Python process that imports this module first, so the
client (and everything it pulls in) is imported only by the steps that talk to the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from .options import OptionError, SourceOptions, check_names, parse_sink, parse_source
from .schema import kafka_schema

__all__ = ["BatchReader", "OdradekDataSource"]


class OdradekDataSource(DataSource):
    """Reads and writes odradek (or any Kafka) topics with Spark's Kafka source layout."""

    @classmethod
    def name(cls) -> str:
        return "odradek"

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        check_names(self.options)

    def _include_headers(self) -> bool:
        value = str(self.options.get("includeheaders", "false")).strip().lower()
        if value not in ("true", "false"):
            raise OptionError("includeHeaders", f"expected true or false, got {value!r}")
        return value == "true"

    def schema(self) -> StructType:
        return kafka_schema(self._include_headers())

    def _check_schema(self, schema: StructType) -> None:
        expected = kafka_schema(self._include_headers())
        if schema != expected:
            raise OptionError("schema", "the source has a fixed schema (Spark's Kafka "
                              "layout) and cannot take a user-specified one: "
                              f"{expected.simpleString()}")

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_schema(schema)
        return BatchReader(parse_source(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        # the client only in steps that talk to the cluster (spark/source.py)
        from .stream_source import StreamReader

        self._check_schema(schema)
        return StreamReader(parse_source(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        # the client only in steps that talk to the cluster (spark/source.py)
        from .sink import BatchWriter

        return BatchWriter(parse_sink(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        # the client only in steps that talk to the cluster (spark/source.py)
        from .sink import StreamWriter

        return StreamWriter(parse_sink(self.options), schema, overwrite)


class BatchReader(DataSourceReader):
    """``spark.read``: the offset ranges are fixed when the query is planned."""

    def __init__(self, options: SourceOptions) -> None:
        self.opts = options

    def partitions(self) -> Sequence[InputPartition]:
        # the client only in steps that talk to the cluster (spark/source.py)
        from .planning import OffsetRange, OffsetResolver, split_ranges
        from .reading import DataLossError, data_loss_message

        opts = self.opts
        assert opts.ending is not None
        resolver = OffsetResolver(opts)
        try:
            tps = resolver.partitions()
            starts = resolver.resolve(opts.starting, tps)
            ends = resolver.resolve(opts.ending, tps)
        finally:
            resolver.close()
        ranges = []
        for tp in tps:
            start, end = starts[tp], ends[tp]
            if end < start:
                detail = (f"{tp.topic}-{tp.partition}: the starting offset {start} "
                          f"({opts.starting.option}) is after the ending offset {end} "
                          f"({opts.ending.option})")
                if opts.starting.kind in ("offsets", "timestamp", "timestamps") and \
                        opts.ending.kind in ("offsets", "timestamp", "timestamps"):
                    raise OptionError(opts.starting.option, detail)
                if opts.fail_on_data_loss:
                    raise DataLossError(data_loss_message(detail))
                continue
            ranges.append(OffsetRange(tp.topic, tp.partition, start, end))
        return split_ranges(ranges, min_partitions=opts.min_partitions,
                            max_records=opts.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # the client only in steps that talk to the cluster (spark/source.py)
        from .planning import OffsetRange
        from .reading import read_range

        if not isinstance(partition, OffsetRange):
            return iter(())  # no ranges planned: Spark still runs one empty partition
        return read_range(self.opts, partition)
