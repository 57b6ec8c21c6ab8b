"""The bench's own behaviour: each benchmark at its tiny size emits well-formed records.

Not timed: these run ``python -m bench --tiny --only <module>`` the way ``make bench`` runs
the full sizes, and check what it writes — every line of ``results.jsonl`` is a JSON object
with the fields other tools compare across commits (system, test, value, unit, run id,
load average), every load ran against both odradek and Apache Kafka (or every peer) with
no error row, the comparison rows carry a finite ratio, and ``summary.md`` and the plots
exist. Only the limits benchmark (no broker) is in the default suite; the ones that start
3-broker clusters of both systems take minutes on a shared machine and are ``slow``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.harness.apache_kafka import REPO_ROOT, ApacheKafka

SYSTEMS = {"odradek", "apache-kafka", "rabbitmq", "activemq", "limit", "bench"}
ROW_FIELDS = {"name", "system", "test", "value", "unit", "time", "loadavg", "commit",
              "run_id", "scale", "interpreter"}
METRICS = ("msgs_per_s", "mb_per_s", "p50_ms", "p99_ms", "p999_ms", "cpu_s", "rss_mib")


def run_bench(module: str, output: Path, timeout: float) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--tiny", "--only", module, "--output", str(output)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = (output / "results.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows, "no rows written"
    # The same rows go to stdout, one JSON object a line, for a caller that pipes them.
    printed = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert printed == rows
    for row in rows:
        assert row.keys() >= ROW_FIELDS, row
        assert row["system"] in SYSTEMS, row
        assert row["scale"] == "tiny"
        assert row["value"] is None or isinstance(row["value"], int | float), row
        assert len(row["loadavg"]) == 3
        assert row["interpreter"]["executable"] == sys.executable, row["interpreter"]
        assert row["interpreter"]["calibration_ms"] > 0
    errors = [r for r in rows if r.get("kind") == "error" or r["unit"] == "error"]
    assert not errors, errors
    assert (output / "summary.md").exists()
    return rows


def loads(rows: list[dict[str, Any]], kind: str) -> dict[str, set[str]]:
    """test -> the systems it has ``kind`` rows for."""
    found: dict[str, set[str]] = {}
    for row in rows:
        if row.get("kind") == kind:
            found.setdefault(row["test"], set()).add(row["system"])
    return found


def check_series(rows: list[dict[str, Any]], systems: set[str]) -> None:
    """Every load: a run and a median row per system, metrics numeric, comparisons finite."""
    runs, medians = loads(rows, "run"), loads(rows, "median")
    assert runs and runs == medians
    for test, found in medians.items():
        assert found == systems, (test, found)
    for row in rows:
        if row.get("kind") in ("run", "median"):
            assert isinstance(row["params"], dict)
            assert row["value"] is not None and row["value"] > 0, row
            for metric in METRICS:
                if row.get(metric) is not None:
                    assert isinstance(row[metric], int | float) and row[metric] >= 0, row
            assert row["cpu_s"] is not None and row["rss_mib"] > 0, row
    comparisons = [r for r in rows if r.get("kind") == "comparison"]
    assert comparisons
    for row in comparisons:
        assert row["ratio"] is not None and math.isfinite(row["ratio"]), row
        assert row["ratio"] == pytest.approx(row["value"] / row["reference"])


def require_kafka() -> None:
    kafka = ApacheKafka()
    if kafka.fetch_jars() is None:
        pytest.skip(f"Apache Kafka {kafka.version} is unavailable: {kafka.unavailable_reason}")


def test_limits_and_summary(tmp_path: Path) -> None:
    rows = run_bench("bench_limits", tmp_path, 120)
    limits = {r["test"]: r for r in rows if r.get("kind") == "limit"}
    assert set(limits) == {"limits.loopback_tcp", "limits.sequential_append",
                           "limits.sendfile", "limits.crc32c"}
    for row in limits.values():
        assert row["system"] == "limit" and row["unit"] == "MB/s" and row["value"] > 0
    assert Counter(r["kind"] for r in rows)["duration"] == 2
    summary = (tmp_path / "summary.md").read_text()
    assert "limits.sendfile" in summary and "tiny mode" in summary
    assert f"odradek's brokers ran on CPython {platform.python_version()} at `{sys.executable}`" \
        in summary, "the summary does not say which interpreter ran the brokers"


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.timeout(960)
def test_perf_tools(tmp_path: Path) -> None:
    require_kafka()
    rows = run_bench("bench_perf_tools", tmp_path, 900)
    check_series(rows, {"odradek", "apache-kafka"})
    assert set(loads(rows, "median")) == {
        "kafka_tools.produce.acks1", "kafka_tools.produce.acks_all", "kafka_tools.consume",
        "kafka_tools.e2e_closed_loop.acks1", "kafka_tools.e2e_closed_loop.acks_all",
        "confluent.produce.acks1", "confluent.consume",
        "kafka_tools.same_cores.produce.acks1", "kafka_tools.same_cores.consume"}
    cores = len(os.sched_getaffinity(0))
    for row in rows:  # one node's cores: Kafka one broker on all, odradek one per core
        if row["test"].startswith("kafka_tools.same_cores.") and row.get("kind") == "run":
            assert row["params"]["cores"] == cores, row
            assert row["records"] == row["params"]["records"], row
    assert (tmp_path / "ratios.png").stat().st_size > 0
    assert (tmp_path / "throughput.png").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.timeout(660)
def test_tls(tmp_path: Path) -> None:
    require_kafka()
    rows = run_bench("bench_tls", tmp_path, 600)
    check_series(rows, {"odradek", "apache-kafka"})
    for row in rows:
        if row.get("kind") == "run":  # every load moved all its records, over both listeners
            assert row["records"] == row["params"]["records"] and row["msgs_per_s"] > 0, row
    kept = {r["name"]: r["value"] for r in rows if r.get("kind") == "ratio"}
    assert set(kept) == {f"tls.{kind}.ssl_over_plaintext.{system}"
                         for kind in ("produce", "consume")
                         for system in ("odradek", "apache-kafka")}
    assert all(value is not None and value > 0 for value in kept.values()), kept


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.timeout(660)
def test_latency(tmp_path: Path) -> None:
    require_kafka()
    rows = run_bench("bench_latency", tmp_path, 600)
    check_series(rows, {"odradek", "apache-kafka"})
    for row in rows:
        if row.get("kind") == "run":
            assert row["lost"] == 0 and row["received"] > 0, row
            assert row["p50_ms"] <= row["p99_ms"] <= row["p999_ms"], row
    assert (tmp_path / "latency.png").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.timeout(660)
def test_log_growth(tmp_path: Path) -> None:
    require_kafka()
    rows = run_bench("bench_log_growth", tmp_path, 600)
    runs = [r for r in rows if r.get("kind") == "run"]
    for system in ("odradek", "apache-kafka"):
        for test in ("log_growth.produce", "log_growth.consume"):
            chunks = [r for r in runs if r["system"] == system and r["test"] == test]
            assert len(chunks) == 3, (system, test)
            assert [r["stored_gb"] for r in chunks] == sorted(r["stored_gb"] for r in chunks)
            assert all(not r.get("truncated") and r["mb_per_s"] > 0 for r in chunks)
    flat = [r for r in rows if r.get("kind") == "flatness"]
    assert len(flat) == 4 and all(r["value"] > 0 for r in flat)
    assert (tmp_path / "log_growth.png").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.timeout(960)
def test_paper(tmp_path: Path) -> None:
    require_kafka()
    rows = run_bench("bench_paper", tmp_path, 900)
    systems = {"odradek", "apache-kafka", "rabbitmq", "activemq"}
    medians = loads(rows, "median")
    assert medians["paper.produce.batch1.no_ack"] == systems
    assert medians["paper.consume"] == systems
    assert medians["paper.produce.batch50.no_ack"] == {"odradek", "apache-kafka"}
    versus = {r.get("versus") for r in rows if r.get("kind") == "comparison"}
    assert {"rabbitmq", "activemq"} <= versus


def test_transactions(tmp_path: Path) -> None:
    rows = run_bench("bench_transactions", tmp_path, 600)
    names = {row["name"] for row in rows}
    for size in (1, 100, 1000):
        for mode in ("transactional", "idempotent"):
            assert f"transactions.{mode}_produce_{size}_per_unit" in names
    measured = [row for row in rows if row["name"].startswith("transactions.")]
    assert all(row["value"] and row["value"] > 0 for row in measured), measured
