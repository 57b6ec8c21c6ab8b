"""``odradek users``: SASL/SCRAM users (what ``kafka-configs --entity-type users`` does).

Credentials are salted on this side and stored by the brokers in ZooKeeper; a password is
read from ``--password``, else from a prompt (so it need not appear in shell history).
"""

from __future__ import annotations

from typing import Any

import click

from .output import (
    bootstrap_option,
    client_errors,
    command_config_option,
    output_option,
    print_json,
    print_table,
)

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@click.group()
@bootstrap_option
@command_config_option
@output_option
@click.pass_context
def users(ctx: click.Context, bootstrap: str, security: dict[str, Any], output: str) -> None:
    """Manage SASL/SCRAM users."""
    ctx.obj = {"bootstrap": bootstrap, "output": output, "security": security}


def _admin(ctx: click.Context) -> Any:
    from odradek.client import AdminClient  # on use (odradek.cli)

    return AdminClient(ctx.obj["bootstrap"], **ctx.obj["security"])


@users.command()
@click.argument("user")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True,
              help="Default: asked for.")
@click.option("--mechanism", "mechanisms", type=click.Choice(MECHANISMS), multiple=True,
              help="Repeatable; default: both SCRAM mechanisms.")
@click.pass_context
@client_errors
def add(ctx: click.Context, user: str, password: str, mechanisms: tuple[str, ...]) -> None:
    """Add USER, or set a new password."""
    admin = _admin(ctx)
    try:
        admin.alter_user_scram_credentials(
            upsert=[(user, mechanism, password) for mechanism in mechanisms or MECHANISMS])
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json({"user": user, "mechanisms": list(mechanisms or MECHANISMS)})
    else:
        click.echo(f"Set the credentials of user {user}.")


@users.command()
@click.argument("user")
@click.option("--mechanism", "mechanisms", type=click.Choice(MECHANISMS), multiple=True,
              help="Repeatable; default: every mechanism the user has.")
@click.pass_context
@client_errors
def delete(ctx: click.Context, user: str, mechanisms: tuple[str, ...]) -> None:
    """Delete USER's credentials."""
    admin = _admin(ctx)
    try:
        if not mechanisms:
            mechanisms = tuple(c.mechanism for c in
                               admin.describe_user_scram_credentials([user]))
        admin.alter_user_scram_credentials(delete=[(user, m) for m in mechanisms])
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json({"deleted": user, "mechanisms": list(mechanisms)})
    else:
        click.echo(f"Deleted the credentials of user {user}.")


@users.command(name="list")
@click.pass_context
@client_errors
def list_(ctx: click.Context) -> None:
    """Users and their SCRAM mechanisms."""
    admin = _admin(ctx)
    try:
        found = admin.describe_user_scram_credentials()
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json([{"user": c.user, "mechanism": c.mechanism, "iterations": c.iterations}
                    for c in found])
    else:
        print_table("SCRAM users", ["USER", "MECHANISM", "ITERATIONS"],
                    [(c.user, c.mechanism, c.iterations) for c in found])
