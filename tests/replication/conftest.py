"""Replication suites: unit tests over one broker's replica manager (``cluster_view``
stands in for ZooKeeper), and real ZooKeeper plus 3-5 broker processes (see tests/harness).

``znode`` and ``manager`` are the replica manager the ISR and acks=all suites drive: this
broker, min.insync.replicas=2, its ISR writes going to an in-memory state znode. A suite
that needs another manager defines its own ``manager`` fixture, which takes precedence.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.replication import ReplicaManager
from tests.replication.cluster_view import StateZnode, new_manager


@pytest.fixture
def znode() -> StateZnode:
    return StateZnode()


@pytest.fixture
def manager(tmp_path: Path, znode: StateZnode) -> Iterator[ReplicaManager]:
    replica_manager, logs = new_manager(tmp_path, min_insync_replicas=2, isr_writer=znode)
    yield replica_manager
    logs.shutdown()
