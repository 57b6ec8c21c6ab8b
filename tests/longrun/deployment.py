"""The cluster a long run drives: plain local processes (soak) or network namespaces (chaos).

Both expose the same few operations, so the run, the faults and the workers do not care
which one they have: a bootstrap and ZooKeeper address, the broker and ZooKeeper processes
(for kill -9 and SIGSTOP by PID), how to run a client command where it can reach the
cluster, how to start a killed broker again, and (namespaces only) how to cut a broker off.
"""

from __future__ import annotations

from typing import Protocol

from odradek.local_cluster import BrokerProcess, LocalCluster, ZooKeeperProcess

__all__ = ["Deployment", "LocalDeployment"]


class Deployment(Protocol):
    @property
    def bootstrap(self) -> str: ...

    @property
    def zookeeper_connect(self) -> str: ...

    @property
    def brokers(self) -> list[BrokerProcess]: ...

    @property
    def zookeeper(self) -> ZooKeeperProcess | None: ...

    def client_command(self, argv: list[str], near_broker: int | None = None
                       ) -> list[str]: ...

    def restart_broker(self, broker_id: int, timeout: float = 60) -> None: ...

    def cut(self, broker_id: int) -> None: ...

    def heal(self, broker_id: int) -> None: ...


class LocalDeployment:
    """A :class:`LocalCluster` on 127.0.0.1: clients run as they are; no partitions (every
    process shares one loopback), and ZooKeeper is the test session's, never paused."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def zookeeper_connect(self) -> str:
        return self.cluster.zookeeper_connect

    @property
    def brokers(self) -> list[BrokerProcess]:
        return self.cluster.brokers

    @property
    def zookeeper(self) -> ZooKeeperProcess | None:
        return None

    def client_command(self, argv: list[str], near_broker: int | None = None) -> list[str]:
        return argv

    def restart_broker(self, broker_id: int, timeout: float = 60) -> None:
        broker = self.cluster.brokers[broker_id]
        broker.start()
        broker.wait_ready(timeout)

    def cut(self, broker_id: int) -> None:
        raise NotImplementedError("a local cluster shares one loopback: use NetnsCluster")

    def heal(self, broker_id: int) -> None:
        raise NotImplementedError("a local cluster shares one loopback: use NetnsCluster")
