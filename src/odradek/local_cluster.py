"""ZooKeeper and brokers as local processes: the dev cluster (`odradek cluster`) and tests.

One place knows how to start, wait for, kill -9, restart and stop the processes of a local
cluster, so ``make run`` and the test harness exercise the same code. Every wait has a
deadline and says what it waited for; every process is stopped by PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from odradek.zookeeper import zookeeper_command, zookeeper_ready

__all__ = [
    "BrokerProcess",
    "LocalCluster",
    "ManagedProcess",
    "WaitTimeout",
    "ZooKeeperProcess",
    "answers_api_versions",
    "free_port",
    "port_open",
    "wait_until",
]


class WaitTimeout(AssertionError):
    """A condition did not become true before its deadline."""


def wait_until(
    predicate: Callable[[], object],
    timeout: float,
    message: str,
    interval: float = 0.05,
) -> object:
    """Poll ``predicate`` until it returns a truthy value; raise :class:`WaitTimeout` with
    ``message`` after ``timeout`` seconds. Returns the truthy value."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # the condition may legitimately fail while starting up
            last_error = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise WaitTimeout(f"timed out after {timeout:.1f}s waiting for {message}{detail}")
        time.sleep(interval)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def answers_api_versions(host: str, port: int, timeout: float = 1.0) -> bool:
    """A Kafka broker on ``host:port`` (PLAINTEXT) answers ApiVersions within ``timeout``."""
    # the client (slow to import) only here: Prometheus and tests use the rest
    from odradek.client.connection import Connection, NodeAddress
    from odradek.client.errors import KafkaClientError

    async def ask() -> None:
        connection = await Connection.open(NodeAddress(-1, host, port), timeout=timeout)
        connection.close()
        await connection.wait_closed(timeout)

    try:
        asyncio.run(ask())
    except (KafkaClientError, OSError, TimeoutError):
        return False
    return True


@dataclass
class ManagedProcess:
    """A child process with its log file; stopped by PID, never by name."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    _log: IO[bytes] | None = field(default=None, init=False)

    def start(self) -> None:
        """Start (or, after it exited, start again) the process, appending to its log."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        self._reap(0)  # the previous run's log handle
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            start_new_session=True,  # a Ctrl-C in the terminal reaches us, not each child
        )

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """How the process ended (negative: killed by that signal); None while it runs."""
        return self.process.poll() if self.process is not None else None

    @property
    def address(self) -> str | None:
        """``host:port`` the process serves on, if it serves anything."""
        return None

    def ready(self) -> bool:
        """Serving right now (one quick check, no waiting); a plain process once started."""
        return self.running

    def kill(self) -> None:
        """SIGKILL: the crash case (no shutdown hooks, no flush)."""
        if self.process is not None and self.running:
            self.process.send_signal(signal.SIGKILL)
        self._reap(10)

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM, then SIGKILL if the process has not exited within ``timeout``."""
        if self.process is None:
            return None
        if self.running:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self._reap(10)

    def _reap(self, timeout: float) -> int | None:
        code = None
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self.process.wait(timeout)
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class ZooKeeperProcess(ManagedProcess):
    """The embedded Apache ZooKeeper server on ``port``."""

    def __init__(self, port: int, data_dir: Path, log_path: Path | None = None) -> None:
        command = zookeeper_command(port, data_dir)
        super().__init__("zookeeper", command.argv, log_path or data_dir / "zookeeper.log")
        self.port = port
        self.data_dir = data_dir

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return self.connect

    def ready(self) -> bool:
        return self.running and zookeeper_ready("127.0.0.1", self.port)

    def wait_ready(self, timeout: float = 60) -> None:
        def ready() -> bool:
            if not self.running:
                raise WaitTimeout(f"ZooKeeper exited early:\n{self.log_tail()}")
            return self.ready()

        wait_until(ready, timeout, f"ZooKeeper on port {self.port}", interval=0.1)


class BrokerProcess(ManagedProcess):
    """One ``odradek broker`` process with its own port and data directory."""

    def __init__(
        self,
        broker_id: int,
        port: int,
        data_dir: Path,
        zookeeper_connect: str,
        overrides: dict[str, str] | None = None,
        log_path: Path | None = None,
        metrics_port: int = 0,
    ) -> None:
        self.broker_id = broker_id
        self.port = port
        self.metrics_port = metrics_port
        self.data_dir = data_dir
        self.overrides = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "log.dirs": str(data_dir / "logs"),
            "zookeeper.connect": zookeeper_connect,
            "metrics.port": str(metrics_port),
            **(overrides or {}),
        }
        argv = [sys.executable, "-m", "odradek", "broker"]
        for key, value in self.overrides.items():
            argv += ["--override", f"{key}={value}"]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        super().__init__(f"broker-{broker_id}", argv, log_path or data_dir / "broker.log", env)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return self.bootstrap

    def ready(self) -> bool:
        """Answers requests, not just accepts connections: a restarted broker listens while
        it waits for ZooKeeper to expire its previous session, and serves only after."""
        if not self.overrides["listeners"].startswith("PLAINTEXT://"):
            return self.running and port_open("127.0.0.1", self.port)
        return self.running and answers_api_versions("127.0.0.1", self.port)

    @property
    def metrics_address(self) -> str | None:
        """``host:port`` of ``/metrics`` (None when ``metrics.port`` is 0)."""
        return f"127.0.0.1:{self.metrics_port}" if self.metrics_port else None

    @property
    def metrics_url(self) -> str | None:
        address = self.metrics_address
        return f"http://{address}/metrics" if address else None

    def wait_ready(self, timeout: float = 60) -> None:
        def ready() -> bool:
            if not self.running:
                raise WaitTimeout(f"{self.name} exited early:\n{self.log_tail()}")
            return port_open("127.0.0.1", self.port)

        wait_until(ready, timeout, f"{self.name} listening on port {self.port}", interval=0.1)


@dataclass
class LocalCluster:
    """ZooKeeper plus ``size`` brokers, each with its own port and directory.

    Broker ``i`` listens on ``ports[i]`` when ``ports`` is given, else ``base_port + i``,
    and serves ``/metrics`` on ``metrics_ports[i]`` when given (else no metrics endpoint).
    With ``external_zookeeper`` set, no ZooKeeper is started and brokers use that one.
    ``nodes`` > 0 emulates that many machines running one broker per core: broker ``i`` gets
    ``broker.rack=node-<i mod nodes>``, so rack-aware placement keeps a partition's replicas
    on distinct nodes.
    """

    size: int
    data_dir: Path
    base_port: int = 9092
    zookeeper_port: int = 2181
    overrides: dict[str, str] = field(default_factory=dict)
    chroot: str = ""
    external_zookeeper: str | None = None
    ports: list[int] | None = None
    metrics_ports: list[int] | None = None
    nodes: int = 0
    zookeeper: ZooKeeperProcess | None = field(default=None, init=False)
    brokers: list[BrokerProcess] = field(default_factory=list, init=False)

    @property
    def zookeeper_connect(self) -> str:
        base = self.external_zookeeper or f"127.0.0.1:{self.zookeeper_port}"
        return base + self.chroot

    @property
    def bootstrap(self) -> str:
        return ",".join(broker.bootstrap for broker in self.brokers)

    def start(self, timeout: float = 90) -> None:
        if self.external_zookeeper is None:
            self.zookeeper = ZooKeeperProcess(self.zookeeper_port, self.data_dir / "zookeeper")
            self.zookeeper.start()
            self.zookeeper.wait_ready(timeout)
        self.brokers = [
            BrokerProcess(
                broker_id,
                self.ports[broker_id] if self.ports else self.base_port + broker_id,
                self.data_dir / f"broker-{broker_id}",
                self.zookeeper_connect,
                {**self.overrides, **({"broker.rack": f"node-{broker_id % self.nodes}"}
                                      if self.nodes else {})},
                metrics_port=self.metrics_ports[broker_id] if self.metrics_ports else 0,
            )
            for broker_id in range(self.size)
        ]
        for broker in self.brokers:
            broker.start()
        for broker in self.brokers:
            broker.wait_ready(timeout)

    def restart(self, index: int, timeout: float = 60) -> None:
        broker = self.brokers[index]
        if broker.running:
            broker.stop()
        broker.start()
        broker.wait_ready(timeout)

    def stop(self) -> None:
        for broker in self.brokers:
            broker.stop()
        if self.zookeeper is not None:
            self.zookeeper.stop()

    def logs(self) -> dict[str, str]:
        processes: list[ManagedProcess] = list(self.brokers)
        if self.zookeeper is not None:
            processes.append(self.zookeeper)
        return {process.name: process.log_tail(200) for process in processes}
