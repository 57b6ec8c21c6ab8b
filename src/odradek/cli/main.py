"""The ``odradek`` command: one entry point, one module per command group.

Every long-running command runs in the foreground and stops cleanly on SIGTERM/SIGINT; bad
input exits non-zero with one clear line (``click.UsageError`` / ``click.ClickException``).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from odradek import __version__


def _setup_logging(verbose: int) -> None:
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="odradek")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """odradek: a distributed commit log that speaks the Apache Kafka protocol."""
    _setup_logging(verbose)


@cli.command()
@click.option("--port", type=int, default=2181, show_default=True, help="Client port.")
@click.option("--data-dir", type=click.Path(path_type=Path), required=True,
              help="Directory for ZooKeeper's snapshots and transaction logs.")
def zookeeper(port: int, data_dir: Path) -> None:
    """Run the real Apache ZooKeeper server (from the pyspark wheel) in the foreground."""
    # on use (odradek.cli)
    from odradek.zookeeper import JavaNotFound, ZooKeeperJarsNotFound, run_foreground

    try:
        code = run_foreground(port, data_dir)
    except (JavaNotFound, ZooKeeperJarsNotFound) as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(code)


@cli.command()
@click.argument("properties", required=False, type=click.Path(exists=True, dir_okay=False,
                                                              path_type=Path))
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a property of the properties file (repeatable).")
def broker(properties: Path | None, overrides: tuple[str, ...]) -> None:
    """Run a broker in the foreground, configured like Kafka's server.properties."""
    from odradek.config import BrokerConfig, ConfigError  # on use (odradek.cli)

    try:
        config = BrokerConfig.load(properties, overrides)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if logging.getLogger().level > logging.INFO:
        logging.getLogger().setLevel(logging.INFO)
    from odradek.broker.app import run  # on use (odradek.cli)

    sys.exit(run(config))


@cli.command()
@click.option("--brokers", type=click.IntRange(1, 32), default=3, show_default=True)
@click.option("--data-dir", type=click.Path(path_type=Path), required=True,
              help="Directory for ZooKeeper's and every broker's data.")
@click.option("--base-port", type=int, default=9092, show_default=True,
              help="Broker i listens on base-port + i.")
@click.option("--zookeeper-port", type=int, default=2181, show_default=True)
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Broker property applied to every broker (repeatable).")
@click.option("--metrics-base-port", type=click.IntRange(0, 65535), default=9404,
              show_default=True,
              help="Broker i serves Prometheus metrics on metrics-base-port + i (0: off).")
@click.option("--prometheus", is_flag=True,
              help="Also start a local Prometheus (Debian's package) scraping the brokers, "
                   "with odradek's alert rules.")
@click.option("--nodes", type=click.IntRange(0, 32), default=0, show_default=True,
              help="Emulate N machines with one broker per core: broker i gets "
                   "broker.rack=node-(i mod N), so replicas never share a node (0: no racks).")
def cluster(brokers: int, data_dir: Path, base_port: int, zookeeper_port: int,
            overrides: tuple[str, ...], metrics_base_port: int, prometheus: bool,
            nodes: int) -> None:
    """Run a local development cluster: ZooKeeper plus N brokers, in the foreground."""
    from odradek.cli.dev_cluster import run_dev_cluster  # on use (odradek.cli)

    sys.exit(run_dev_cluster(brokers, data_dir, base_port, zookeeper_port, list(overrides),
                             metrics_base_port=metrics_base_port, prometheus=prometheus,
                             nodes=nodes))


from odradek.cli.acls import acls  # noqa: E402
from odradek.cli.consume import consume  # noqa: E402
from odradek.cli.groups import groups  # noqa: E402
from odradek.cli.perf import perf  # noqa: E402
from odradek.cli.produce import produce  # noqa: E402
from odradek.cli.ready import broker_ready  # noqa: E402
from odradek.cli.topics import topics  # noqa: E402
from odradek.cli.users import users  # noqa: E402

cli.add_command(topics)
cli.add_command(users)
cli.add_command(acls)
cli.add_command(produce)
cli.add_command(consume)
cli.add_command(groups)
cli.add_command(perf)
cli.add_command(broker_ready)


def main() -> None:
    cli(prog_name="odradek")
