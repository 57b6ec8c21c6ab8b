"""``odradek acls``: add, remove and list ACLs with ``kafka-acls``' flags.

One command with an action flag, as ``kafka-acls`` has: ``--add`` and ``--remove`` take
principals (``--allow-principal`` / ``--deny-principal``), operations and resources;
``--list`` takes resources (none: every ACL) and optionally ``--principal``. Resources are
``--topic``, ``--group``, ``--transactional-id`` (each repeatable, ``*`` for all) and
``--cluster``; ``--resource-pattern-type`` is literal (default), prefixed, and for
``--list``/``--remove`` also match or any. Unlike ``kafka-acls``, ``--remove`` asks no
confirmation.
"""

from __future__ import annotations

from typing import Any

import click

from odradek.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)

from .output import (
    bootstrap_option,
    client_errors,
    command_config_option,
    output_option,
    print_json,
    print_table,
)

_PATTERNS = ("literal", "prefixed", "match", "any")
_OPERATIONS = tuple(op.spelling for op in Operation if op > Operation.ANY)


def _resources(topics: tuple[str, ...], groups: tuple[str, ...], txns: tuple[str, ...],
               cluster: bool) -> list[tuple[ResourceType, str]]:
    found = [(ResourceType.TOPIC, t) for t in topics]
    found += [(ResourceType.GROUP, g) for g in groups]
    found += [(ResourceType.TRANSACTIONAL_ID, t) for t in txns]
    if cluster:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return found


def _admin(bootstrap: str, security: dict[str, Any]) -> Any:
    from odradek.client import AdminClient  # on use (odradek.cli)

    return AdminClient(bootstrap, **security)


def _rows(bindings: list[AclBinding]) -> list[tuple[str, ...]]:
    return [(b.pattern.resource_type.name, b.pattern.name, b.pattern.pattern_type.name,
             b.entry.principal, b.entry.host, b.entry.operation.name, b.entry.permission.name)
            for b in bindings]


@click.command()
@bootstrap_option
@command_config_option
@output_option
@click.option("--add", "action", flag_value="add", help="Add the ACLs described.")
@click.option("--remove", "action", flag_value="remove", help="Remove the ACLs described.")
@click.option("--list", "action", flag_value="list", help="List ACLs (of the resources).")
@click.option("--topic", "topics", multiple=True, help="Topic name or prefix; * for all.")
@click.option("--group", "groups", multiple=True, help="Consumer group name or prefix.")
@click.option("--transactional-id", "txns", multiple=True, help="Transactional id.")
@click.option("--cluster", is_flag=True, help="The cluster resource.")
@click.option("--resource-pattern-type", "pattern", type=click.Choice(_PATTERNS),
              default="literal", show_default=True)
@click.option("--allow-principal", "allow", multiple=True, help="User:<name> or User:*.")
@click.option("--deny-principal", "deny", multiple=True, help="User:<name> or User:*.")
@click.option("--allow-host", "allow_hosts", multiple=True, help="Default: *.")
@click.option("--deny-host", "deny_hosts", multiple=True, help="Default: *.")
@click.option("--operation", "operations", multiple=True,
              type=click.Choice(_OPERATIONS, case_sensitive=False), help="Repeatable.")
@click.option("--principal", help="--list: only this principal's ACLs.")
@client_errors
def acls(bootstrap: str, security: dict[str, Any], output: str, action: str | None,
         topics: tuple[str, ...], groups: tuple[str, ...], txns: tuple[str, ...],
         cluster: bool, pattern: str, allow: tuple[str, ...], deny: tuple[str, ...],
         allow_hosts: tuple[str, ...], deny_hosts: tuple[str, ...],
         operations: tuple[str, ...], principal: str | None) -> None:
    """Manage ACLs (the brokers need authorizer.class.name)."""
    if action is None:
        raise click.UsageError("one of --add, --remove or --list is required")
    resources = _resources(topics, groups, txns, cluster)
    pattern_type = PatternType.from_spelling(pattern)
    ops = [Operation.from_spelling(op) for op in operations]
    entries = [(p, h, Permission.ALLOW) for p in allow for h in allow_hosts or ("*",)]
    entries += [(p, h, Permission.DENY) for p in deny for h in deny_hosts or ("*",)]
    admin = _admin(bootstrap, security)
    try:
        if action == "list":
            filters = [AclFilter(kind, name, pattern_type if pattern != "literal"
                                 else PatternType.ANY, principal)
                       for kind, name in resources] or [AclFilter(principal=principal)]
            found = [b for f in filters for b in admin.describe_acls(f)]
            _show(found, output, "ACLs")
            return
        if not resources:
            raise click.UsageError("name at least one resource (--topic, --group, ...)")
        if action == "add":
            if not entries or not ops:
                raise click.UsageError("--add needs a principal and an --operation")
            try:
                bindings = [AclBinding(ResourcePattern(kind, name, pattern_type),
                                       AccessControlEntry(p, h, op, permission))
                            for kind, name in resources for p, h, permission in entries
                            for op in ops]
            except ValueError as exc:
                raise click.UsageError(str(exc)) from None
            admin.create_acls(bindings)
            _show(bindings, output, "Added ACLs")
            return
        selected: list[tuple[str | None, str | None, Permission]] = [*entries] or [
            (None, None, Permission.ANY)]
        filters = [AclFilter(kind, name, pattern_type, p, h, op, permission)
                   for kind, name in resources for p, h, permission in selected
                   for op in ops or [Operation.ANY]]
        _show(admin.delete_acls(filters), output, "Removed ACLs")
    finally:
        admin.close()


def _show(bindings: list[AclBinding], output: str, title: str) -> None:
    headers = ["RESOURCE_TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION",
               "PERMISSION"]
    rows = _rows(bindings)
    if output == "json":
        print_json([dict(zip([h.lower() for h in headers], row, strict=True)) for row in rows])
    else:
        print_table(title, headers, rows)
