"""Spark 4 registers the Python data sources of installed ``pyspark_*`` modules that export a
``DefaultSource`` by itself (``pyspark.sql.worker.lookup_data_sources``): this module makes
``format("odradek")`` work in every session without an import or a register call."""

from odradek.spark.source import OdradekDataSource as DefaultSource

__all__ = ["DefaultSource"]
