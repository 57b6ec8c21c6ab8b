"""A local SparkSession that can run ``format("odradek")`` (examples, tests, benchmarks).

The Python Data Source API runs ``read``/``write`` in Python worker processes; they must use
the interpreter that has odradek and pyarrow installed, or they fail with
``ModuleNotFoundError``. Spark starts ``python3`` from PATH unless ``PYSPARK_PYTHON`` says
otherwise, so this sets it to the running interpreter first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from . import register

__all__ = ["local_session"]

#: Quiet, small, deterministic defaults for a one-machine session.
DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
}


def local_session(app_name: str = "odradek", *, master: str = "local[2]",
                  jars: Iterable[str] = (), conf: Mapping[str, str] | None = None,
                  log_level: str = "WARN") -> Any:
    """Get or create a SparkSession with ``format("odradek")`` registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**DEFAULT_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    jar_list = list(jars)
    if jar_list:
        builder = builder.config("spark.jars", ",".join(jar_list))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark
