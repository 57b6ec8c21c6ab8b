"""The paper's offline load: the activity since the last load into the Parquet warehouse, one
Spark task per partition, restartable without duplicates or gaps.

    python -m examples.pipeline.offline_load [--bootstrap-server B] [--warehouse DIR]

How it stays exact: a load writes its Parquet files *and* the offsets it reached into a
staging directory, then renames that directory into the table — one atomic rename, so the
data and the offsets are committed together or not at all. The next load starts from the
offsets of the newest committed load. A load killed at any point leaves only a staging
directory, which the next run deletes and redoes; nothing half-written is ever visible.

Layout::

    WAREHOUSE/activity/load=000007/date=2026-01-01/hour=0/part-....parquet
    WAREHOUSE/activity/load=000007/_offsets.json      {"activity": {"0": 1234, ...}}
    WAREHOUSE/activity/_staging/...                    (a load in progress)

``spark.read.parquet("WAREHOUSE/activity")`` reads every committed load (``load``, ``date``
and ``hour`` become partition columns; ``_``-prefixed paths are ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from .stream_job import EVENT_SCHEMA
from .topics import ACTIVITY, DEFAULT_BOOTSTRAP, ensure_topics

OFFSETS_FILE = "_offsets.json"
_LOAD = re.compile(r"^load=(\d{6})$")


def committed_loads(table: Path) -> list[Path]:
    """Committed load directories, oldest first."""
    if not table.exists():
        return []
    return sorted(p for p in table.iterdir() if _LOAD.match(p.name) and p.is_dir())


def last_offsets(table: Path) -> dict[str, dict[str, int]]:
    """The offsets the newest committed load reached ({} before the first load)."""
    loads = committed_loads(table)
    if not loads:
        return {}
    return json.loads((loads[-1] / OFFSETS_FILE).read_text())


def _latest(bootstrap: str) -> dict[str, dict[str, int]]:
    from odradek.client import AdminClient, TopicPartition

    admin = AdminClient(bootstrap)
    try:
        parts = admin.describe_topics([ACTIVITY])[ACTIVITY].partitions
        ends = admin.list_offsets({TopicPartition(ACTIVITY, p): -1 for p in parts})
    finally:
        admin.close()
    return {ACTIVITY: {str(tp.partition): (v.offset if v else 0)
                       for tp, v in sorted(ends.items())}}


def load(spark: Any, bootstrap: str, warehouse: Path, *, show: bool = True) -> int:
    """Load everything since the last committed load; returns the records loaded."""
    from pyspark.sql import functions as F

    table = warehouse / ACTIVITY
    staging_root = table / "_staging"
    shutil.rmtree(staging_root, ignore_errors=True)  # what a killed load left behind
    loads = committed_loads(table)
    start = last_offsets(table)
    # Numbered from what was committed when this load began: a concurrent load that began
    # from the same state picks the same number, and only one of the two renames succeeds.
    number = int(loads[-1].name.removeprefix("load=")) + 1 if loads else 1
    end = _latest(bootstrap)
    starting = {ACTIVITY: {p: start.get(ACTIVITY, {}).get(p, -2) for p in end[ACTIVITY]}}
    todo = sum(o - max(starting[ACTIVITY][p], 0) for p, o in end[ACTIVITY].items())
    if show:
        print(f"offline load: offsets {json.dumps(starting[ACTIVITY])} → "
              f"{json.dumps(end[ACTIVITY])} (about {todo} records)", flush=True)
    if all(starting[ACTIVITY][p] == o for p, o in end[ACTIVITY].items()):
        if show:
            print("offline load: nothing new", flush=True)
        return 0
    started = time.monotonic()
    df = (spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", ACTIVITY)
          .option("startingOffsets", json.dumps(starting))
          .option("endingOffsets", json.dumps(end)).load())
    rows = (df.select("partition", "offset", "timestamp",
                      F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
            .select("partition", "offset", "e.*")
            .withColumn("ts", F.timestamp_millis("event_time"))
            .withColumn("date", F.date_format("ts", "yyyy-MM-dd"))
            .withColumn("hour", F.hour("ts")))
    staging = staging_root / uuid.uuid4().hex
    if show:
        print(f"offline load: writing into {staging}", flush=True)
    rows.write.partitionBy("date", "hour").parquet(str(staging))
    (staging / OFFSETS_FILE).write_text(json.dumps(end))
    _fsync_tree(staging)
    final = table / f"load={number:06d}"
    try:
        os.rename(staging, final)  # the commit: data and offsets appear together
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"{final} was committed by a concurrent load; run again") from exc
    _fsync_dir(table)
    loaded = spark.read.parquet(str(final)).count()
    if show:
        print(f"offline load: committed {final.name}: {loaded} records in "
              f"{time.monotonic() - started:.1f}s", flush=True)
    return loaded


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """Make the staged files durable before the rename publishes them."""
    for directory, _dirs, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(directory))


def main() -> None:
    from odradek.spark.session import local_session

    parser = argparse.ArgumentParser(prog="python -m examples.pipeline.offline_load")
    parser.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP)
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    args = parser.parse_args()
    ensure_topics(args.bootstrap_server)
    spark = local_session("pipeline-offline-load")
    load(spark, args.bootstrap_server, args.warehouse)


if __name__ == "__main__":
    main()
