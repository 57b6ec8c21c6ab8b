"""`odradek zookeeper` runs a real Apache ZooKeeper that serves ordinary ZooKeeper clients."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from kazoo.client import KazooClient

from odradek.zookeeper import zookeeper_ready
from tests.harness import free_port, wait_until


def _start_cli(port: int, data_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "odradek", "zookeeper", "--port", str(port),
         "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def test_zookeeper_command_serves_kazoo_create_ephemeral_and_watch(tmp_path: Path) -> None:
    port = free_port()
    process = _start_cli(port, tmp_path / "zk")
    lines: list[str] = []
    stdout = process.stdout
    assert stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(stdout), daemon=True)
    reader.start()
    try:
        wait_until(lambda: process.poll() is None and zookeeper_ready("127.0.0.1", port), 60,
                   "odradek zookeeper to accept sessions")
        wait_until(lambda: any(f"ZooKeeper serving on 127.0.0.1:{port}" in line
                               for line in lines), 30, "the command to announce it is serving")
        owner = KazooClient(hosts=f"127.0.0.1:{port}", timeout=10)
        watcher = KazooClient(hosts=f"127.0.0.1:{port}", timeout=10)
        owner.start(timeout=15)
        watcher.start(timeout=15)
        try:
            owner.create("/brokers/ids", makepath=True)
            owner.create("/config/topics/events", b'{"version":1,"config":{}}', makepath=True)
            data, stat = watcher.get("/config/topics/events")
            assert data == b'{"version":1,"config":{}}'
            assert stat.version == 0

            seen: list[list[str]] = []
            changed = threading.Event()

            @watcher.ChildrenWatch("/brokers/ids")
            def on_children(children: list[str]) -> None:
                seen.append(sorted(children))
                if children:
                    changed.set()

            owner.create("/brokers/ids/7", b"{}", ephemeral=True)
            assert changed.wait(10), f"child watch did not fire; saw {seen}"
            assert seen[-1] == ["7"]

            # An ephemeral node disappears with its session.
            owner.stop()
            owner.close()
            wait_until(lambda: watcher.get_children("/brokers/ids") == [], 20,
                       "ephemeral /brokers/ids/7 to vanish with its session")
            wait_until(lambda: seen[-1] == [], 10, "the child watch to report the removal")
        finally:
            watcher.stop()
            watcher.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        reader.join(10)
    output = "".join(lines)
    assert process.returncode == 0, f"exit code {process.returncode} on SIGTERM:\n{output}"


def test_zookeeper_command_without_java_says_how_to_install_it(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = str(bin_dir)  # no java here
    result = subprocess.run(
        [sys.executable, "-m", "odradek", "zookeeper", "--port", str(free_port()),
         "--data-dir", str(tmp_path / "zk")],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert result.returncode != 0
    assert "Java 17+" in result.stderr and "apt-get install" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_harness_zookeeper_fixture_isolates_tests_by_chroot(zk_connect: str) -> None:
    host, _, chroot = zk_connect.partition("/")
    client = KazooClient(hosts=host, timeout=10)
    client.start(timeout=15)
    try:
        client.ensure_path("/" + chroot)
        assert client.get_children("/" + chroot) == []
    finally:
        client.stop()
        client.close()
