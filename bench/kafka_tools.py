"""Apache Kafka's own load tools (3.9, from the Maven Central jars) and their output parsers.

Main classes, read from ``kafka-tools-3.9.x.jar`` (they moved from the Scala ``kafka.tools``
package to ``org.apache.kafka.tools`` during 3.x; the Scala ``kafka.tools.EndToEndLatency``
left in ``kafka_2.13`` is a forwarder):

* ``org.apache.kafka.tools.ProducerPerformance``: records/s, MB/s and the producer's
  send-to-acknowledgement latency percentiles (whole milliseconds);
* ``org.apache.kafka.tools.ConsumerPerformance``: a group consumer reading N records;
  ``fetch.nMsg.sec`` excludes the group join, so it is the rate the brokers deliver;
* ``org.apache.kafka.tools.EndToEndLatency``: one record at a time, closed loop: a
  synchronous send, then poll until that record arrives; percentiles in whole ms.

The tools get a full JIT (unlike the test harness's short-lived CLI runs, which use C1 only)
and a 1 GiB heap: they are the load, and must not be the bottleneck they measure.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.harness.apache_kafka import (
    CONSUMER_PERFORMANCE,
    PRODUCER_PERFORMANCE,
    TOOL_LOG4J,
    ApacheKafka,
    _kill_group,
)

END_TO_END_LATENCY = "org.apache.kafka.tools.EndToEndLatency"
TOOL_JVM = ("-Xmx1G", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true")

_PRODUCER_LINE = re.compile(
    r"(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th")
_E2E_AVG = re.compile(r"Avg latency: (?P<avg>[\d.]+) ms")
_E2E_PCT = re.compile(r"Percentiles: 50th = (?P<p50>\d+), 99th = (?P<p99>\d+), "
                      r"99.9th = (?P<p999>\d+)")


class ToolFailed(RuntimeError):
    pass


def run_tool(kafka: ApacheKafka, main_class: str, args: Sequence[str],
             timeout: float) -> str:
    """Run one of Kafka's tools to completion; its stdout."""
    log4j = Path(tempfile.gettempdir()) / "odradek-bench-tools-log4j.properties"
    if not log4j.exists():
        log4j.write_text(TOOL_LOG4J)
    cmd = kafka.java_command(main_class, args,
                             [*TOOL_JVM, f"-Dlog4j.configuration=file:{log4j}"])
    return run_command(cmd, main_class.rsplit(".", 1)[1], timeout)


def run_command(cmd: Sequence[str], name: str, timeout: float) -> str:
    """Run a load tool to completion; its stdout. Killed (by PID, with its session) on
    timeout; a non-zero exit raises :class:`ToolFailed` with the output's last lines."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        raise ToolFailed(f"{name} took over {timeout:.0f}s") from None
    if proc.returncode != 0:
        tail = " | ".join((out + err).strip().splitlines()[-4:])
        raise ToolFailed(f"{name} exited {proc.returncode}: {tail}")
    return out


def _props(settings: Mapping[str, Any]) -> list[str]:
    return [f"{k}={v}" for k, v in settings.items()]


def producer_performance(kafka: ApacheKafka, bootstrap: str, topic: str, records: int,
                         record_size: int, producer_props: Mapping[str, Any],
                         throughput: int = -1, timeout: float = 600.0) -> dict[str, float]:
    out = run_tool(kafka, PRODUCER_PERFORMANCE, [
        "--topic", topic, "--num-records", str(records), "--record-size", str(record_size),
        "--throughput", str(throughput),
        "--producer-props", f"bootstrap.servers={bootstrap}", *_props(producer_props),
    ], timeout)
    matches = list(_PRODUCER_LINE.finditer(out))
    if not matches:
        raise ToolFailed(f"ProducerPerformance printed no summary: {out[-300:]!r}")
    m = matches[-1]
    return {"records": int(m["records"]), "msgs_per_s": float(m["rate"]),
            "mb_per_s": float(m["rate"]) * record_size / 1e6,
            "avg_ms": float(m["avg"]), "max_ms": float(m["max"]), "p50_ms": float(m["p50"]),
            "p95_ms": float(m["p95"]), "p99_ms": float(m["p99"]), "p999_ms": float(m["p999"])}


def consumer_performance(kafka: ApacheKafka, bootstrap: str, topic: str, records: int,
                         record_size: int, timeout_ms: int = 60_000,
                         timeout: float = 600.0,
                         consumer_props: Mapping[str, Any] | None = None) -> dict[str, float]:
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records),
            "--timeout", str(timeout_ms), "--hide-header"]
    with tempfile.NamedTemporaryFile("w", suffix=".properties") as config:
        if consumer_props:  # the tool takes client settings from a file only
            config.write("\n".join(_props(consumer_props)) + "\n")
            config.flush()
            args += ["--consumer.config", config.name]
        out = run_tool(kafka, CONSUMER_PERFORMANCE, args, timeout)
    lines = [line for line in out.splitlines() if line.count(",") >= 9]
    if not lines:
        raise ToolFailed(f"ConsumerPerformance printed no summary: {out[-300:]!r}")
    cols = [c.strip() for c in lines[-1].split(",")]
    consumed = int(cols[4])
    fetch_ms = float(cols[7])
    return {"records": consumed, "msgs_per_s": float(cols[9]),
            "mb_per_s": float(cols[9]) * record_size / 1e6,
            "total_msgs_per_s": float(cols[5]), "rebalance_ms": float(cols[6]),
            "fetch_ms": fetch_ms, "truncated": consumed < records}


def end_to_end_latency(kafka: ApacheKafka, bootstrap: str, topic: str, records: int,
                       acks: str, record_size: int, timeout: float = 600.0,
                       ) -> dict[str, float]:
    out = run_tool(kafka, END_TO_END_LATENCY,
                   [bootstrap, topic, str(records), acks, str(record_size)], timeout)
    avg, pct = _E2E_AVG.search(out), _E2E_PCT.search(out)
    if avg is None or pct is None:
        raise ToolFailed(f"EndToEndLatency printed no summary: {out[-300:]!r}")
    return {"avg_ms": float(avg["avg"]), "p50_ms": float(pct["p50"]),
            "p99_ms": float(pct["p99"]), "p999_ms": float(pct["p999"]),
            "msgs_per_s": records and 1000.0 / max(float(avg["avg"]), 1e-9)}
