"""`odradek cluster` (``make run``) keeps running when a broker dies: the broker is restarted
and answers again while ZooKeeper and the other broker stay up; SIGTERM still stops every
process, also while a restart is pending."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from odradek.local_cluster import answers_api_versions, free_port, wait_until
from tests.harness.dev_cluster import consecutive_free_ports, read_until
from tests.harness.missing_extras import MONITORING_LIBRARIES, python_without


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _pids(table: str) -> dict[str, int]:
    """Process name -> pid, from the table the command prints at start."""
    rows = re.findall(r"(zookeeper|broker-\d+)\s*│[^│]*│[^│]*│\s*(\d+)\s*│", table)
    return {name: int(pid) for name, pid in rows}


def test_killed_broker_is_restarted_and_the_rest_stay_up(tmp_path: Path) -> None:
    base, zookeeper_port = consecutive_free_ports(2), free_port()
    output = tmp_path / "cli.log"
    with output.open("wb") as sink:
        cli = subprocess.Popen(
            [sys.executable, "-m", "odradek", "cluster", "--brokers", "2", "--data-dir",
             str(tmp_path / "data"), "--base-port", str(base), "--zookeeper-port",
             str(zookeeper_port), "--metrics-base-port", "0",
             # the restarted broker registers once ZooKeeper expired the killed one's
             # session: 6 s instead of the default 18 keeps the test short
             "--override", "zookeeper.session.timeout.ms=6000"],
            stdout=sink, stderr=sink)
    pids: dict[str, int] = {}
    try:
        table = read_until(cli, output, r"Ctrl-C stops the cluster", 120).string
        pids = _pids(table)
        assert set(pids) == {"zookeeper", "broker-0", "broker-1"}, table

        os.kill(pids["broker-1"], signal.SIGKILL)
        read_until(cli, output, rf"broker-1 \(pid {pids['broker-1']}\) killed by SIGKILL; "
                                r"restarting it in 1 s", 10)
        restarted = int(read_until(cli, output, r"broker-1 restarted \(pid (\d+)\)", 10)[1])
        pids["broker-1 restarted"] = restarted
        read_until(cli, output, rf"broker-1 is serving again on 127\.0\.0\.1:{base + 1}", 30)
        assert answers_api_versions("127.0.0.1", base + 1)
        assert answers_api_versions("127.0.0.1", base)
        assert _alive(pids["zookeeper"]) and _alive(pids["broker-0"])
        assert not re.search(r"(zookeeper|broker-0) \(pid \d+\) (killed|exited)",
                             output.read_text())

        # killed again at once: the second restart waits 2 s, and SIGTERM comes first
        os.kill(restarted, signal.SIGKILL)
        read_until(cli, output, r"restarting it in 2 s", 10)
        cli.send_signal(signal.SIGTERM)
        assert cli.wait(60) == 0, output.read_text()[-3000:]
        text = output.read_text()
        assert len(re.findall(r"broker-1 restarted", text)) == 1, text[-3000:]
        wait_until(lambda: not any(_alive(pid) for pid in pids.values()), 5,
                   f"every process of the dev cluster gone ({pids})")
    finally:  # after a failure: stop the cluster, then kill by PID whatever is left
        if cli.poll() is None:
            cli.send_signal(signal.SIGTERM)
            try:
                cli.wait(60)
            except subprocess.TimeoutExpired:
                cli.kill()
                cli.wait(10)
        for pid in pids.values():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_prometheus_without_the_monitoring_extra_fails_before_starting(tmp_path: Path) -> None:
    command = python_without(
        MONITORING_LIBRARIES, "import runpy; runpy.run_module('odradek', run_name='__main__')",
        "cluster", "--brokers", "1", "--data-dir", str(tmp_path / "data"),
        "--base-port", str(free_port()), "--zookeeper-port", str(free_port()), "--prometheus")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "--prometheus needs the monitoring extra (pip install 'odradek[monitoring]')" in (
        " ".join(done.stderr.split())), done.stderr
    assert not (tmp_path / "data").exists(), "the cluster started before the check"
