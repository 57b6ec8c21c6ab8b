"""End-to-end latency at fixed rates (1k, 10k, 50k msgs/s), odradek beside Apache Kafka 3.9.

Producer → brokers → consumer, open loop (:mod:`bench.latency_probe`): 3 brokers each, one
6-partition RF 3 topic per system (each run reads from the log end), 100-byte records,
acks=1 and acks=all, librdkafka (confluent-kafka) in two Python processes for both systems.
Each system is warmed up first (10k msgs/s per acks mode, not reported). Repeated (3 full,
1 quick; tiny: 1k msgs/s, acks=1 only) with the systems alternating. Goals (odradek /
Apache Kafka, medians): p50 ≤ 1.0, p99 ≤ 1.5.
"""

from __future__ import annotations

from functools import partial

import confluent_kafka

from bench.common import Context
from bench.latency_probe import measure
from bench.series import Comparison, Series, alternate, measured
from bench.systems import (
    APACHE_KAFKA,
    ODRADEK,
    Cluster,
    both_clusters,
    create_topic,
)

RATES = (1_000, 10_000, 50_000)
PARTITIONS = 6
REPLICATION = 3


def run(ctx: Context) -> None:
    repeats = ctx.pick(3, 1, 1)
    warmup_s, measure_s = ctx.pick((2.0, 5.0), (2.0, 4.0), (0.5, 1.5))
    rates = ctx.pick(RATES, RATES, RATES[:1])
    acks_modes = ctx.pick(("1", "all"), ("1", "all"), ("1",))
    warmup_runs_s = ctx.pick(10.0, 5.0, 1.0)
    client = (f"confluent-kafka {confluent_kafka.version()[0]} "
              f"(librdkafka {confluent_kafka.libversion()[0]}), Python, 2 processes")
    with both_clusters(ctx.scratch_dir("latency")) as clusters:
        live = {name: c for name, c in clusters.items() if isinstance(c, Cluster)}
        for name, reason in clusters.items():
            if isinstance(reason, str):
                ctx.report(f"latency.start.{name}", None, "s", system=name,
                           test="latency.start", kind="error", error=reason)
        order = [s for s in (APACHE_KAFKA, ODRADEK) if s in live]
        # One topic per system for every run: each run's consumer starts at the log end.
        # A fresh topic per run measured Apache Kafka's first seconds on a new partition
        # (seconds-long produce stalls on this loaded machine), not its steady state.
        topics: dict[str, str] = {}
        for system in order:
            topics[system] = f"lat-{system}"
            create_topic(live[system].bootstrap, topics[system], PARTITIONS, REPLICATION)

        for system in order:  # warm-up, not reported: JIT, connections, page cache
            cluster = live[system]
            for acks in acks_modes:
                measure(cluster.bootstrap, topics[system], PARTITIONS, 10_000, acks,
                        1.0, warmup_runs_s)

        for acks in acks_modes:
            for rate in rates:
                series = Series(
                    ctx, f"latency.e2e.{rate // 1000}k.acks{'_all' if acks == 'all' else 1}",
                    {"brokers": 3, "partitions": PARTITIONS, "replication": REPLICATION,
                     "record_bytes": 100, "rate": rate, "acks": acks, "client": client,
                     "warmup_s": warmup_s, "measure_s": measure_s},
                    primary="p50_ms",
                    comparisons=[Comparison("p50_ms", "≤ 1.0"), Comparison("p99_ms", "≤ 1.5"),
                                 Comparison("p999_ms"), Comparison("cpu_s")])
                for repeat in range(repeats):
                    for system in alternate(order, repeat):
                        cluster = live[system]
                        series.run_once(system, partial(
                            measured, cluster.pids, measure, cluster.bootstrap,
                            topics[system], PARTITIONS, rate, acks, warmup_s, measure_s),
                            repeat)
                series.finish()
