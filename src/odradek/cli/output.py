"""Shared plumbing of the client commands: bootstrap option, tables vs JSON, errors, Ctrl-C.

Humans get rich tables on stdout; ``--output json`` prints one JSON document (or JSON lines
for streams) for scripts. A table fits the window only in a terminal: piped to grep or a file
it is never cut, so a long topic or group name arrives whole. Any client error becomes one
``Error: ...`` line and exit code 1; Ctrl-C stops with exit code 130 after the command's own
cleanup ran.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

bootstrap_option = click.option(
    "--bootstrap-server", "bootstrap", required=True, envvar="ODRADEK_BOOTSTRAP_SERVER",
    metavar="HOST:PORT[,HOST:PORT]", help="Broker(s) to connect to first.")


def load_command_config(_ctx: click.Context, _param: click.Parameter,
                         path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    # the client costs about a second to import: only commands given a config file pay it
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
        from odradek.client.errors import KafkaClientError  # on use (odradek.cli)

        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        except (KafkaClientError, ValueError, TimeoutError) as exc:
            raise click.ClickException(str(exc) or type(exc).__name__) from None

    return wrapper  # type: ignore[return-value]


def names_argument(option: str, dest: str, *, multiple: bool, required: bool = True,
                   help: str) -> Callable[[F], F]:
    """The name(s) a command acts on, as arguments (``groups describe G``) or as Kafka's option
    (``--group G``, what kafka-consumer-groups and kafka-topics take and scripts already use).

    Both forms may be mixed; the names arrive in ``dest`` (a tuple when ``multiple``, else one
    string, or None when not ``required`` and none was given), duplicates dropped.
    """
    noun = option.lstrip("-")
    metavar = noun.upper() if required else f"[{noun.upper()}]"
    metavar += "..." if multiple else ""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def merged(*args: Any, **kwargs: Any) -> Any:
            positional = kwargs.pop("positional_names") or ()
            flagged = kwargs.pop(dest)
            if isinstance(positional, str):
                positional = (positional,)
            if isinstance(flagged, str):
                flagged = (flagged,)
            names = tuple(dict.fromkeys((*positional, *(flagged or ()))))
            ctx = click.get_current_context()
            if required and not names:
                raise click.UsageError(f"give the {noun}: {noun.upper()} or {option} "
                                       f"{noun.upper()}", ctx)
            if not multiple and len(names) > 1:
                raise click.UsageError(f"one {noun} at a time, got {', '.join(names)}", ctx)
            kwargs[dest] = names if multiple else (names[0] if names else None)
            return func(*args, **kwargs)

        with_option = click.option(option, dest, multiple=multiple, default=None,
                                   metavar=noun.upper(), help=help)(merged)
        argument = click.argument("positional_names", metavar=metavar,
                                  nargs=-1 if multiple else 1, required=False)
        return argument(with_option)  # type: ignore[return-value]

    return decorate


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


_UNLIMITED_WIDTH = 1_000_000
"""Columns of a console that is not a terminal: wider than any table, so rich never wraps or
cuts a cell (a table is only as wide as its content, so nothing is padded to this width)."""


def table_console(stderr: bool = False) -> Console:
    """A rich console for stdout (or stderr) that truncates only where a person reads it.

    In a terminal rich fits tables to the window. Anywhere else (a pipe, a file, a test) it
    would assume 80 columns and cut names with an ellipsis, so the width is unlimited there:
    whoever greps the output gets every name whole.
    """
    from rich.console import Console  # on use (odradek.cli)

    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=_UNLIMITED_WIDTH)


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]
                ) -> None:
    """A table under an optional title line. The title is a line of its own, not rich's table
    title, which would wrap a long topic or group name to the table's (narrow) width."""
    from rich.table import Table  # on use (odradek.cli)
    from rich.text import Text

    console = table_console()
    if title:
        console.print(Text(title, style="bold"), soft_wrap=True)
    table = Table(show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    console.print(table)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))
