"""A PNG of the pipeline's results: page views per minute of the busiest pages and the
click-through rate (from the stream job's ``page_metrics``), and events per minute by type
(from the offline load's ``activity`` table).

    python -m examples.pipeline.plot [--warehouse DIR] [--output results.png]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def plot(spark: Any, warehouse: Path, output: Path, top: int = 5) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pyspark.sql import functions as F

    fig, axes = plt.subplots(3, 1, figsize=(11, 10), sharex=True)
    metrics_path = warehouse / "page_metrics"
    if metrics_path.exists() and any(metrics_path.glob("date=*")):
        metrics = spark.read.parquet(str(metrics_path))
        busiest = [r.page for r in metrics.groupBy("page").agg(F.sum("views").alias("v"))
                   .orderBy(F.desc("v")).limit(top).collect()]
        for page in busiest:
            points = (metrics.where(F.col("page") == page).orderBy("minute")
                      .select("minute", "views").collect())
            axes[0].plot([p.minute for p in points], [p.views for p in points], label=page)
        axes[0].legend(fontsize=8, loc="upper right")
        ctr = (metrics.groupBy("minute")
               .agg((F.sum("clicks") / F.sum("views")).alias("ctr")).orderBy("minute")
               .collect())
        axes[1].plot([p.minute for p in ctr], [p.ctr for p in ctr], color="#c44e52")
    axes[0].set_ylabel("page views / minute")
    axes[0].set_title("busiest pages (stream job → page_metrics)")
    axes[1].set_ylabel("click-through rate")
    axes[1].set_title("clicks / page views, all pages (event-time minutes)")
    table = warehouse / "activity"
    if table.exists() and any(table.glob("load=*")):
        activity = spark.read.parquet(str(table))
        counts = (activity.groupBy(F.window("ts", "1 minute").start.alias("minute"), "type")
                  .count().orderBy("minute").collect())
        for kind in sorted({r.type for r in counts}):
            points = [r for r in counts if r.type == kind]
            axes[2].plot([p.minute for p in points], [p["count"] for p in points],
                         label=kind)
        axes[2].legend(fontsize=8, loc="upper right")
    axes[2].set_ylabel("events / minute")
    axes[2].set_title("all events by type (offline load → activity)")
    axes[2].set_xlabel("event time (UTC)")
    fig.autofmt_xdate()
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)
    plt.close(fig)
    return output


def main() -> None:
    from odradek.spark.session import local_session

    parser = argparse.ArgumentParser(prog="python -m examples.pipeline.plot")
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    spark = local_session("pipeline-plot")
    out = plot(spark, args.warehouse, args.output or args.warehouse / "results.png")
    print(f"plot: {out}")


if __name__ == "__main__":
    main()
