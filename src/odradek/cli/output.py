"""Shared plumbing of the client commands: bootstrap option, tables vs JSON, errors, Ctrl-C.

Humans get rich tables on stdout; ``--output json`` prints one JSON document (or JSON lines
for streams) for scripts. Any client error becomes one ``Error: ...`` line and exit code 1;
Ctrl-C stops with exit code 130 after the command's own cleanup ran.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

bootstrap_option = click.option(
    "--bootstrap-server", "bootstrap", required=True, envvar="ODRADEK_BOOTSTRAP_SERVER",
    metavar="HOST:PORT[,HOST:PORT]", help="Broker(s) to connect to first.")


def load_command_config(_ctx: click.Context, _param: click.Parameter,
                         path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    from pathlib import Path

    from odradek.client.security import settings_from_properties
    from odradek.config import parse_properties as parse_java_properties

    try:
        return settings_from_properties(parse_java_properties(Path(path).read_text()))
    except (OSError, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint="--command-config") from None


command_config_option = click.option(
    "--command-config", "security", type=click.Path(exists=True, dir_okay=False),
    callback=load_command_config, envvar="ODRADEK_COMMAND_CONFIG",
    help="Client properties file, as for Kafka's tools: security.protocol, sasl.mechanism, "
         "sasl.jaas.config (or sasl.username/sasl.password), ssl.truststore.location.")
output_option = click.option(
    "--output", "output", type=click.Choice(["table", "json"]), default="table",
    show_default=True, help="Tables for people, JSON for scripts.")


def client_errors(func: F) -> F:
    """Turn client and argument errors into one clear line and a non-zero exit."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from odradek.client.errors import KafkaClientError

        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        except (KafkaClientError, ValueError, TimeoutError) as exc:
            raise click.ClickException(str(exc) or type(exc).__name__) from None

    return wrapper  # type: ignore[return-value]


def parse_properties(values: Iterable[str], known: Sequence[str]) -> dict[str, str]:
    """``--property k=v`` pairs (Kafka console tool style); unknown keys are an error."""
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--property")
        if key not in known:
            raise click.BadParameter(f"unknown property {key!r} (known: {', '.join(known)})",
                                     param_hint="--property")
        out[key] = value.encode().decode("unicode_escape")
    return out


def parse_configs(values: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--config")
        out[key] = value
    return out


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]
                ) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    Console().print(table)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))
