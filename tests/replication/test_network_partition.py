"""A leader cut off from ZooKeeper and its peers by a network partition (not a crash).

ZooKeeper, three brokers and a client each run in their own network namespace on one bridge
(:mod:`tests.harness.netns`). A second producer runs inside the leader's own namespace, so
it can still reach the isolated leader — the dangerous case: the old leader keeps running
and believes it leads until it learns otherwise. While cut off it must not acknowledge any
acks=all write (it cannot replicate, and its ISR shrink cannot be written to ZooKeeper),
the rest of the cluster elects a new leader and keeps serving, and after the partition heals
the old leader truncates its unreplicated tail and rejoins the ISR: every acknowledged write
from either producer is in the final log, with no duplicates.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from odradek.local_cluster import BrokerProcess, ManagedProcess, ZooKeeperProcess, wait_until
from tests.harness.fixtures import attach_process_logs
from tests.harness.jsonl import read_json_lines
from tests.harness.netns import Host, NetworkLab, netns_unavailable_reason

reason = netns_unavailable_reason()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

REPO = Path(__file__).resolve().parents[2]
TOPIC = "partitioned"
ZK_PORT = 2181
BROKER_PORT = 9092
BROKER_SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "offsets.topic.replication.factor": "1",
    "controlled.shutdown.enable": "false",
}


def agent(host: Host, *args: str, timeout: float = 90) -> Any:
    """Run one netns_agent action inside ``host`` and return its JSON answer."""
    result = subprocess.run(
        host.command([sys.executable, "-m", "tests.replication.netns_agent", *args]),
        capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )
    if result.returncode != 0:
        raise AssertionError(f"agent {args[0]} failed in {host.name}:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def in_namespace(process: ManagedProcess, host: Host) -> ManagedProcess:
    process.argv = host.command(process.argv)
    return process


def test_isolated_leader_acknowledges_nothing_and_loses_no_committed_write(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    processes: list[ManagedProcess] = []
    with NetworkLab() as lab:
        zk_host = lab.add_host("zk")
        broker_hosts = [lab.add_host(f"b{i}") for i in range(3)]
        client = lab.add_host("client")
        zk_connect = f"{zk_host.address}:{ZK_PORT}"
        bootstrap = ",".join(f"{h.address}:{BROKER_PORT}" for h in broker_hosts)
        try:
            zookeeper = in_namespace(ZooKeeperProcess(ZK_PORT, tmp_path / "zk"), zk_host)
            processes.append(zookeeper)
            zookeeper.start()
            wait_until(lambda: agent(client, "probe", zk_host.address, str(ZK_PORT)), 60,
                       "ZooKeeper reachable from the client namespace")
            for broker_id, host in enumerate(broker_hosts):
                broker = in_namespace(BrokerProcess(
                    broker_id, BROKER_PORT, tmp_path / f"b{broker_id}", zk_connect,
                    {**BROKER_SETTINGS, "listeners": f"PLAINTEXT://{host.address}:{BROKER_PORT}"},
                ), host)
                processes.append(broker)
                broker.start()
            for host in broker_hosts:
                reachable = functools.partial(agent, client, "probe", host.address,
                                              str(BROKER_PORT))
                wait_until(reachable, 60, f"broker on {host.address} reachable")

            agent(client, "create", bootstrap, TOPIC)

            def state() -> dict[str, Any] | None:
                value: dict[str, Any] | None = agent(client, "state", zk_connect, TOPIC)
                return value

            initial = wait_until(lambda: (s := state()) and s["leader"] >= 0
                                 and len(s["isr"]) == 3 and s, 60, "a leader with ISR of 3")
            assert isinstance(initial, dict)
            old_leader = initial["leader"]
            leader_host = broker_hosts[old_leader]

            outside_out, inside_out = tmp_path / "outside.jsonl", tmp_path / "inside.jsonl"
            outside = subprocess.Popen(client.command(
                [sys.executable, "-m", "tests.replication.netns_agent", "produce", bootstrap,
                 TOPIC, "outside", "40", str(outside_out)]), cwd=REPO,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            inside = subprocess.Popen(leader_host.command(
                [sys.executable, "-m", "tests.replication.netns_agent", "produce",
                 f"{leader_host.address}:{BROKER_PORT}", TOPIC, "inside", "40",
                 str(inside_out)]), cwd=REPO,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_until(lambda: sum(r["error"] is None for r in read_json_lines(inside_out))
                           >= 50, 30, "the colocated producer to get 50 acks before the cut")

                lab.cut(leader_host)
                cut_at = time.time()

                new_state = wait_until(
                    lambda: (s := state()) and s["leader"] not in (old_leader, -1) and s, 60,
                    "a new leader elected by the rest of the cluster")
                assert isinstance(new_state, dict)
                assert old_leader not in new_state["isr"]
                acked_outside_before = sum(r["error"] is None for r in read_json_lines(outside_out))
                wait_until(lambda: sum(r["error"] is None for r in read_json_lines(outside_out))
                           > acked_outside_before + 50, 30,
                           "the majority side to keep acknowledging writes")
                lab.heal(leader_host)
                healed_at = time.time()
            finally:
                outside.wait(120)
                inside.wait(120)

            wait_until(lambda: (s := state()) and len(s["isr"]) == 3 and old_leader in s["isr"],
                       90, "the old leader to truncate, catch up and rejoin the ISR")

            reports = read_json_lines(outside_out) + read_json_lines(inside_out)
            acknowledged = {r["value"] for r in reports if r["error"] is None}
            # Writes sent after the cut may be acknowledged after the heal (librdkafka retries
            # them on the new leader); none may be acknowledged while the leader is isolated.
            acked_while_isolated = [
                r["value"] for r in read_json_lines(inside_out)
                if r["error"] is None and r["time"] < healed_at
                and float(r["value"].rsplit("-", 1)[1]) > cut_at + 0.5
            ]
            assert acked_while_isolated == [], (
                f"the isolated leader acknowledged {len(acked_while_isolated)} writes it "
                f"could not replicate, e.g. {acked_while_isolated[:3]}")

            final = agent(client, "consume", bootstrap, TOPIC)
            values = final["values"]
            assert len(values) == final["high_watermark"], "could not read up to the HW"
            assert len(values) == len(set(values)), "duplicates in the final log"
            lost = acknowledged - set(values)
            assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {sorted(lost)[:3]}"
            assert any(v.startswith("outside") for v in values)
        finally:
            attach_process_logs(request, processes)
            for process in reversed(processes):
                process.stop(timeout=15)
