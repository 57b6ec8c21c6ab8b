"""Test harness shared by every suite: real ZooKeeper, broker processes, bounded waits.

Fixtures live in :mod:`tests.harness.fixtures` (registered by ``tests/conftest.py``); the
process machinery is :mod:`odradek.local_cluster`, the same code ``odradek cluster`` runs.
"""

from odradek.local_cluster import (
    BrokerProcess,
    LocalCluster,
    WaitTimeout,
    ZooKeeperProcess,
    free_port,
    port_open,
    wait_until,
)

__all__ = [
    "BrokerProcess",
    "LocalCluster",
    "WaitTimeout",
    "ZooKeeperProcess",
    "free_port",
    "port_open",
    "wait_until",
]
