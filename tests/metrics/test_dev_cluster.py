"""`odradek cluster --prometheus`: the dev cluster prints each broker's metrics URL and
starts a real Prometheus that scrapes them and loads the alert rules."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from odradek.local_cluster import free_port
from tests.harness.dev_cluster import consecutive_free_ports, read_until
from tests.harness.prometheus import promtool_binary


@pytest.mark.slow
def test_dev_cluster_prints_metrics_urls_and_runs_prometheus(tmp_path: Path) -> None:
    promtool_binary()  # Debian's prometheus package is installed (make prometheus)
    base, zk, metrics = consecutive_free_ports(2), free_port(), consecutive_free_ports(2)
    log_path = tmp_path / "cli.log"
    log_file = log_path.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "odradek", "cluster", "--brokers", "2", "--data-dir",
         str(tmp_path / "data"), "--base-port", str(base), "--zookeeper-port", str(zk),
         "--metrics-base-port", str(metrics), "--prometheus"],
        stdout=log_file, stderr=log_file)
    try:
        output = read_until(process, log_path, r"Ctrl-C stops the cluster", 120).string
        for i in range(2):
            assert f"http://127.0.0.1:{metrics + i}/metrics" in output
        found = re.search(r"Prometheus: (http://127\.0\.0\.1:\d+)", output)
        assert found, output
        prometheus = found.group(1)
        deadline = time.monotonic() + 60
        while True:
            with urllib.request.urlopen(f"{prometheus}/api/v1/targets", timeout=10) as r:
                targets = json.load(r)["data"]["activeTargets"]
            if len(targets) == 2 and all(t["health"] == "up" for t in targets):
                break
            assert time.monotonic() < deadline, targets
            time.sleep(1)
        assert sorted(t["labels"]["broker"] for t in targets) == ["0", "1"]
        with urllib.request.urlopen(f"{prometheus}/api/v1/rules", timeout=10) as r:
            groups = json.load(r)["data"]["groups"]
        assert any(rule["name"] == "OdradekOfflinePartitions"
                   for group in groups for rule in group["rules"])
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log_file.close()
