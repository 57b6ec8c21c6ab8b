"""odradek topics in Spark: ``spark.read``/``readStream``/``write``/``writeStream`` with
``format("odradek")`` — Spark's Kafka source and sink options and row layout, through the
Python Data Source API (no JVM jar).

Usage::

    import odradek.spark                     # registers "odradek" with the active session
    df = (spark.read.format("odradek")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "activity").load())

Installing ``odradek[spark]`` also installs the ``pyspark_odradek`` module, which Spark 4
discovers by itself in every new session, so even the import is optional. Without either:
``spark.dataSource.register(odradek.spark.OdradekDataSource)``. See ``docs/spark.md``.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from .options import OptionError
from .source import OdradekDataSource

__all__ = ["DataLossError", "OdradekDataSource", "OptionError", "SinkError", "register"]


def __getattr__(name: str) -> Any:
    # Spark imports this package in every planning process; the client comes in only when
    # a step needs it (see ``source``), so these two load on first use.
    if name == "DataLossError":
        from .reading import DataLossError  # on first use: see the comment above

        return DataLossError
    if name == "SinkError":
        from .sink_rows import SinkError  # on first use: see the comment above

        return SinkError
    raise AttributeError(name)


def register(spark: Any = None) -> bool:
    """Register ``format("odradek")`` with ``spark`` (default: the active session).
    Returns False when there is no session yet (nothing to register with)."""
    if spark is None:
        spark = SparkSession.getActiveSession()
        if spark is None:
            return False
    if not _registered(spark):
        spark.dataSource.register(OdradekDataSource)
    return True


def _registered(spark: Any) -> bool:
    """Whether the session already knows "odradek" (Spark found ``pyspark_odradek`` by
    itself): registering again only logs that it replaced it."""
    try:
        manager = spark._jsparkSession.sessionState().dataSourceManager()
        return bool(manager.dataSourceExists(OdradekDataSource.name()))
    except Exception:  # Spark Connect or another version: registering is always safe
        return False


register()
