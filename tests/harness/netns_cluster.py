"""ZooKeeper, brokers and a client host, each in its own network namespace of a
:class:`~tests.harness.netns.NetworkLab`, so any one of them can be cut off.

The processes are the usual :class:`~odradek.local_cluster.ZooKeeperProcess` and
:class:`~odradek.local_cluster.BrokerProcess`, started through ``ip netns exec`` (which execs
in place: the PID recorded is the server's own, so kill -9 and SIGSTOP reach it directly).
The test process stays in the root namespace and cannot reach the lab's addresses; anything
that talks to the cluster runs through :meth:`NetnsCluster.client_command`.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from odradek.local_cluster import BrokerProcess, ManagedProcess, ZooKeeperProcess, wait_until
from tests.harness.netns import Host, NetworkLab

__all__ = ["NetnsCluster"]

ZK_PORT = 2181
BROKER_PORT = 9092

_PROBE = ("import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), "
          "timeout=1).close()")


def _in_namespace(process: ManagedProcess, host: Host) -> ManagedProcess:
    process.argv = host.command(process.argv)
    return process


@dataclass
class NetnsCluster:
    """``size`` brokers (hosts ``b0``…), ZooKeeper (host ``zk``) and host ``client``."""

    lab: NetworkLab
    data_dir: Path
    size: int = 3
    overrides: dict[str, str] = field(default_factory=dict)
    zookeeper: ZooKeeperProcess | None = field(default=None, init=False)
    brokers: list[BrokerProcess] = field(default_factory=list, init=False)
    broker_hosts: list[Host] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.zk_host = self.lab.add_host("zk")
        self.broker_hosts = [self.lab.add_host(f"b{i}") for i in range(self.size)]
        self.client = self.lab.add_host("client")

    @property
    def zookeeper_connect(self) -> str:
        return f"{self.zk_host.address}:{ZK_PORT}"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{host.address}:{BROKER_PORT}" for host in self.broker_hosts)

    def client_command(self, argv: list[str], near_broker: int | None = None) -> list[str]:
        """``argv`` run in the client host, or in broker ``near_broker``'s own host (a
        client that shares that broker's fate when it is cut off)."""
        host = self.client if near_broker is None else self.broker_hosts[near_broker]
        return host.command(argv)

    def reachable(self, address: str, port: int) -> bool:
        """Whether the client host can open a connection to ``address:port`` now."""
        result = subprocess.run(self.client.command([sys.executable, "-c", _PROBE, address,
                                                     str(port)]),
                                capture_output=True, timeout=20)
        return result.returncode == 0

    def start(self, timeout: float = 90) -> None:
        self.zookeeper = ZooKeeperProcess(ZK_PORT, self.data_dir / "zk")
        _in_namespace(self.zookeeper, self.zk_host).start()
        wait_until(lambda: self.reachable(self.zk_host.address, ZK_PORT), timeout,
                   "ZooKeeper reachable from the client host", interval=0.5)
        for broker_id, host in enumerate(self.broker_hosts):
            broker = BrokerProcess(
                broker_id, BROKER_PORT, self.data_dir / f"b{broker_id}", self.zookeeper_connect,
                {**self.overrides, "listeners": f"PLAINTEXT://{host.address}:{BROKER_PORT}"})
            self.brokers.append(broker)
            _in_namespace(broker, host).start()
        for broker_id in range(self.size):
            self.wait_broker_ready(broker_id, timeout)

    def wait_broker_ready(self, broker_id: int, timeout: float = 60) -> None:
        broker, host = self.brokers[broker_id], self.broker_hosts[broker_id]

        def ready() -> bool:
            if not broker.running:
                raise AssertionError(f"{broker.name} exited early:\n{broker.log_tail()}")
            return self.reachable(host.address, BROKER_PORT)

        wait_until(ready, timeout, f"{broker.name} reachable on {host.address}", interval=0.5)

    def restart_broker(self, broker_id: int, timeout: float = 60) -> None:
        """Start a broker that was killed (its old session may still hold its id: the
        broker waits for it to expire)."""
        self.brokers[broker_id].start()
        self.wait_broker_ready(broker_id, timeout)

    def cut(self, broker_id: int) -> None:
        self.lab.cut(self.broker_hosts[broker_id])

    def heal(self, broker_id: int) -> None:
        self.lab.heal(self.broker_hosts[broker_id])

    def processes(self) -> list[ManagedProcess]:
        return [*([self.zookeeper] if self.zookeeper else []), *self.brokers]

    def stop(self) -> None:
        for broker in self.brokers:
            broker.stop(timeout=20)
        if self.zookeeper is not None:
            self.zookeeper.stop(timeout=15)
