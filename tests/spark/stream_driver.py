"""A streaming job the tests run both in-process and as a driver process they SIGKILL:
odradek topic → Parquet (Spark's file sink, exactly-once through its commit log).

``python -m tests.spark.stream_driver BOOTSTRAP TOPIC OUT CHECKPOINT MAX_OFFSETS`` runs it
with a processing-time trigger until killed (bounded by ``--seconds``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def start_query(spark: Any, bootstrap: str, topic: str, out: str, checkpoint: str,
                max_offsets: int, available_now: bool) -> Any:
    stream = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(max_offsets)).load()
              .selectExpr("CAST(key AS STRING) AS key", "value", "partition", "offset")
              .writeStream.format("parquet").option("path", out)
              .option("checkpointLocation", checkpoint))
    if available_now:
        return stream.trigger(availableNow=True).start()
    return stream.trigger(processingTime="100 milliseconds").start()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("out")
    parser.add_argument("checkpoint")
    parser.add_argument("max_offsets", type=int)
    parser.add_argument("--seconds", type=float, default=300)
    args = parser.parse_args()
    from odradek.spark.session import local_session

    spark = local_session("stream-driver")
    query = start_query(spark, args.bootstrap, args.topic, args.out, args.checkpoint,
                        args.max_offsets, available_now=False)
    print("started", flush=True)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline and query.isActive:
        time.sleep(0.2)
    query.stop()


if __name__ == "__main__":
    main()
