"""`odradek cluster`: ZooKeeper plus N brokers on this machine, for development.

The processes are the same ones a test starts (:mod:`odradek.local_cluster`). The command
stays in the foreground, reports a process that dies, and on SIGTERM/SIGINT stops the
brokers (controlled shutdown) before ZooKeeper.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from rich.console import Console
from rich.table import Table

from odradek.local_cluster import LocalCluster, WaitTimeout, port_open
from odradek.zookeeper import JavaNotFound, ZooKeeperJarsNotFound


def run_dev_cluster(
    brokers: int, data_dir: Path, base_port: int, zookeeper_port: int, overrides: list[str]
) -> int:
    console = Console(stderr=True)
    busy = [p for p in [zookeeper_port, *range(base_port, base_port + brokers)]
            if port_open("127.0.0.1", p)]
    if busy:
        console.print(f"[red]port(s) already in use: {', '.join(map(str, busy))}[/red] "
                      "(is a cluster already running? choose --base-port/--zookeeper-port)")
        return 1
    parsed = dict(item.split("=", 1) for item in overrides if "=" in item)
    replication = str(min(3, brokers))
    defaults = {
        "default.replication.factor": replication,
        "offsets.topic.replication.factor": replication,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": str(min(2, brokers)),
    }
    cluster = LocalCluster(brokers, data_dir.resolve(), base_port, zookeeper_port,
                           {**defaults, **parsed})
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        with console.status(f"starting ZooKeeper and {brokers} broker(s)…"):
            cluster.start()
    except (JavaNotFound, ZooKeeperJarsNotFound) as exc:
        console.print(f"[red]{exc}[/red]")
        return 1
    except WaitTimeout as exc:
        console.print(f"[red]{exc}[/red]")
        cluster.stop()
        return 1

    table = Table(title="odradek dev cluster", show_header=True)
    for column in ("process", "address", "pid", "log"):
        table.add_column(column)
    assert cluster.zookeeper is not None
    table.add_row("zookeeper", cluster.zookeeper.connect, str(cluster.zookeeper.pid),
                  str(cluster.zookeeper.log_path))
    for broker in cluster.brokers:
        table.add_row(broker.name, broker.bootstrap, str(broker.pid), str(broker.log_path))
    console.print(table)
    console.print(f"\nbootstrap servers: [bold]{cluster.bootstrap}[/bold]")
    console.print("produce:  odradek produce --bootstrap-server "
                  f"{cluster.brokers[0].bootstrap} my-topic   (lines from stdin)")
    console.print("consume:  odradek consume --bootstrap-server "
                  f"{cluster.brokers[0].bootstrap} my-topic --from-beginning")
    console.print("any Kafka client works too, e.g. kcat -b "
                  f"{cluster.brokers[0].bootstrap} -L\n\nCtrl-C stops the cluster.")

    exit_code = 0
    while not stop.wait(1.0):
        dead = [p for p in [cluster.zookeeper, *cluster.brokers] if not p.running]
        if dead:
            for process in dead:
                console.print(f"[red]{process.name} exited; last log lines:[/red]\n"
                              f"{process.log_tail(20)}")
            exit_code = 1
            break
    with console.status("stopping brokers, then ZooKeeper…"):
        cluster.stop()
    return exit_code
