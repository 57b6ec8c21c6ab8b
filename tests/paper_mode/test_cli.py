"""``odradek consume --zookeeper H:P/chroot --group G``: the paper's consumer on the command
line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kazoo.client import KazooClient

from .conftest import PaperCluster, create_topic, produce, registered, registry_offsets

REPO_ROOT = Path(__file__).resolve().parents[2]


def odradek(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "odradek", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO_ROOT)


def test_console_consumer_in_paper_mode_reads_and_commits_to_zookeeper(
        paper_cluster: PaperCluster, zk: KazooClient, group: str) -> None:
    topic = create_topic(paper_cluster.bootstrap, 2)
    values = produce(paper_cluster.bootstrap, topic, 2, 3, "cli")
    done = odradek("consume", "--bootstrap-server", paper_cluster.bootstrap, topic,
                   "--zookeeper", paper_cluster.zk_connect, "--group", group,
                   "--from-beginning", "--max-messages", "6")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == sorted(values)
    assert registry_offsets(zk, group, topic, 2) == {0: 3, 1: 3}
    assert registered(zk, group) == []


def test_zookeeper_without_group_is_a_usage_error(paper_cluster: PaperCluster) -> None:
    done = odradek("consume", "--bootstrap-server", paper_cluster.bootstrap, "t",
                   "--zookeeper", paper_cluster.zk_connect)
    assert done.returncode == 2 and "--zookeeper needs --group" in done.stderr


def test_a_process_exiting_without_close_leaves_the_group_at_once(
        paper_cluster: PaperCluster, zk: KazooClient, group: str) -> None:
    topic = create_topic(paper_cluster.bootstrap, 2)
    produce(paper_cluster.bootstrap, topic, 2, 2, "exit")
    script = (
        "from odradek.client import ZooKeeperConsumer\n"
        f"c = ZooKeeperConsumer({paper_cluster.zk_connect!r}, {group!r}, [{topic!r}], "
        f"bootstrap_servers={paper_cluster.bootstrap!r}, auto_offset_reset='smallest')\n"
        "got = []\n"
        "while len(got) < 4:\n"
        "    got += c.poll(1000)\n"
        "print(len(got))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=REPO_ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "4", done.stderr
    # No session timeout waited for: the exit hook deleted the nodes and committed.
    assert registered(zk, group) == []
    assert registry_offsets(zk, group, topic, 2) == {0: 2, 1: 2}
