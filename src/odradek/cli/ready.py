"""``odradek broker-ready``: the broker pod's readiness probe (see :mod:`odradek.readiness`).

Exit 0 when the local broker is registered and in the ISR of everything it replicates, 1 with
one line saying why not. Meant for an exec probe, so it reads the broker id the way the image's
entrypoint derives it (``BROKER_ID`` or the StatefulSet ordinal) when not given.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import click

from odradek.cli.output import load_command_config


@click.command("broker-ready")
@click.option("--bootstrap-server", "bootstrap", default=None,
              help="The broker to ask. Default: 127.0.0.1:$ODRADEK_PORT (9092).")
@click.option("--broker-id", type=click.IntRange(min=0), default=None,
              help="Default: $BROKER_ID, else the ordinal at the end of $HOSTNAME.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=5.0, show_default=True,
              help="Seconds to wait for the broker's answer.")
@click.option("--command-config", "security", type=click.Path(dir_okay=False),
              callback=load_command_config, envvar="ODRADEK_PROBE_CONFIG",
              help="Client properties for a TLS/SASL listener (the image's entrypoint writes "
                   "them to $ODRADEK_PROBE_CONFIG).")
def broker_ready(bootstrap: str | None, broker_id: int | None, timeout: float,
                 security: dict[str, Any]) -> None:
    """Exit 0 if the broker is registered and caught up (in every ISR it belongs to)."""
    # on use (odradek.cli)
    from odradek.readiness import BrokerNotReady, broker_id_from_environment, check_broker_ready

    if bootstrap is None:
        bootstrap = f"127.0.0.1:{os.environ.get('ODRADEK_PORT', '9092')}"
    if broker_id is None:
        try:
            broker_id = broker_id_from_environment()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    try:
        asyncio.run(check_broker_ready(bootstrap, broker_id, timeout, security))
    except BrokerNotReady as exc:
        click.echo(f"not ready: {exc}", err=True)
        raise SystemExit(1) from None
    click.echo(f"broker {broker_id} ready")
