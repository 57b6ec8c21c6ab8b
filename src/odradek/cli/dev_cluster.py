"""`odradek cluster`: ZooKeeper plus N brokers on this machine, for development.

The processes are the same ones a test starts (:mod:`odradek.local_cluster`). The command
stays in the foreground and keeps them up: a broker (or ZooKeeper) that dies — say, killed
with ``kill -9`` to try failover — is reported in one line and restarted with backoff while
the rest keep running (:mod:`odradek.cli.supervisor`). SIGTERM/SIGINT stop the brokers
(controlled shutdown) and then ZooKeeper, also while a restart is pending.

Broker ``i`` serves ``/metrics`` on ``metrics-base-port + i`` (printed with the addresses).
``--prometheus`` also starts Debian's ``prometheus`` (when installed: ``make prometheus``)
scraping every broker with the labels the dashboards select on and evaluating odradek's
alert rules, so queries and alerts can be tried without Kubernetes. That tooling is the
``odradek[monitoring]`` extra (:mod:`odradek_monitoring`), imported only when asked for:
without it ``--prometheus`` stops before anything starts, naming the extra.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from odradek.cli.output import table_console
from odradek.cli.supervisor import Supervisor
from odradek.local_cluster import LocalCluster, WaitTimeout, port_open
from odradek.zookeeper import JavaNotFound, ZooKeeperJarsNotFound

if TYPE_CHECKING:
    from odradek_monitoring.prometheus import LocalPrometheus

MONITORING_EXTRA = "pip install 'odradek[monitoring]'"

DEV_LABELS = {"namespace": "dev", "cluster": "dev"}
"""Target labels of the dev cluster's brokers in the local Prometheus (plus ``broker``)."""


def run_dev_cluster(
    brokers: int, data_dir: Path, base_port: int, zookeeper_port: int, overrides: list[str],
    *, metrics_base_port: int = 0, prometheus: bool = False, nodes: int = 0,
) -> int:
    console = table_console(stderr=True)
    if prometheus and not _monitoring_extra_installed(console):
        return 1
    metrics_ports = ([metrics_base_port + i for i in range(brokers)] if metrics_base_port
                     else [])
    busy = [p for p in [zookeeper_port, *range(base_port, base_port + brokers), *metrics_ports]
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
                           {**defaults, **parsed}, metrics_ports=metrics_ports or None,
                           nodes=nodes)
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

    server = _start_prometheus(console, cluster, data_dir) if prometheus else None
    table = Table(title="odradek dev cluster", show_header=True)
    for column in ("process", "address", "metrics", "pid", "log"):
        table.add_column(column)
    assert cluster.zookeeper is not None
    table.add_row("zookeeper", cluster.zookeeper.connect, "", str(cluster.zookeeper.pid),
                  str(cluster.zookeeper.log_path))
    for broker in cluster.brokers:
        table.add_row(broker.name, broker.bootstrap, broker.metrics_url or "off",
                      str(broker.pid), str(broker.log_path))
    if server is not None and server.process is not None:
        table.add_row("prometheus", server.url, "", str(server.process.pid),
                      str(server.process.log_path))
    console.print(table)
    console.print(f"\nbootstrap servers: [bold]{cluster.bootstrap}[/bold]")
    console.print("produce:  odradek produce --bootstrap-server "
                  f"{cluster.brokers[0].bootstrap} my-topic   (lines from stdin)")
    console.print("consume:  odradek consume --bootstrap-server "
                  f"{cluster.brokers[0].bootstrap} my-topic --from-beginning")
    console.print("any Kafka client works too, e.g. kcat -b "
                  f"{cluster.brokers[0].bootstrap} -L\n\nA broker or ZooKeeper that dies is "
                  "restarted (try kill -9 on a broker's pid). Ctrl-C stops the cluster.")

    supervisor = Supervisor([cluster.zookeeper, *cluster.brokers],
                            lambda line: console.print(Text(line), soft_wrap=True))
    while not stop.wait(0.5):
        supervisor.check()
    with console.status("stopping brokers, then ZooKeeper…"):
        if server is not None:
            server.stop()
        cluster.stop()
    return 0


def _monitoring_extra_installed(console: Console) -> bool:
    """Whether ``--prometheus``'s tooling imports; if not, one line naming the extra."""
    try:  # on demand: the monitoring extra is optional, and only --prometheus needs it
        import odradek_monitoring.alerts
        import odradek_monitoring.prometheus  # noqa: F401
    except ImportError as exc:
        console.print(Text(f"--prometheus needs the monitoring extra ({MONITORING_EXTRA}): "
                           f"{exc}", style="red"))
        return False
    return True


def _start_prometheus(console: Console, cluster: LocalCluster,
                      data_dir: Path) -> LocalPrometheus | None:
    """Prometheus scraping every broker, with the alert rules; None (and a warning) when
    the binary is missing or the brokers serve no metrics: the cluster runs anyway."""
    # the monitoring extra: run_dev_cluster checked it imports before starting anything
    from odradek_monitoring.alerts import rules_yaml
    from odradek_monitoring.prometheus import LocalPrometheus, PrometheusError, ScrapeTarget

    targets = [ScrapeTarget(broker.metrics_address, {**DEV_LABELS, "broker": str(i)})
               for i, broker in enumerate(cluster.brokers) if broker.metrics_address]
    if not targets:
        console.print("[yellow]--prometheus: the brokers serve no metrics "
                      "(--metrics-base-port 0)[/yellow]")
        return None
    directory = data_dir.resolve() / "prometheus"
    directory.mkdir(parents=True, exist_ok=True)
    rules = directory / "odradek.rules.yaml"
    rules.write_text(rules_yaml())
    try:
        server = LocalPrometheus(directory, targets, rule_files=(rules,),
                                 scrape_interval="5s", evaluation_interval="5s")
        with console.status("starting Prometheus…"):
            server.start()
    except PrometheusError as exc:
        console.print(f"[yellow]--prometheus: {exc}; running without it[/yellow]")
        return None
    console.print(f"Prometheus: [bold]{server.url}[/bold] (alerts: {server.url}/alerts)")
    return server
