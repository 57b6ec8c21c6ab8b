"""``odradek topics``: create, list, describe, alter and delete topics (like kafka-topics)."""

from __future__ import annotations

from typing import Any

import click

from .output import (
    bootstrap_option,
    client_errors,
    command_config_option,
    names_argument,
    output_option,
    parse_configs,
    print_json,
    print_table,
)


@click.group()
@bootstrap_option
@command_config_option
@output_option
@click.pass_context
def topics(ctx: click.Context, bootstrap: str, security: dict[str, Any], output: str) -> None:
    """Manage topics."""
    ctx.obj = {"bootstrap": bootstrap, "output": output, "security": security}


def _admin(ctx: click.Context) -> Any:
    from odradek.client import AdminClient  # on use (odradek.cli)

    return AdminClient(ctx.obj["bootstrap"], **ctx.obj["security"])


@topics.command()
@names_argument("--topic", "topic", multiple=False, help="The topic to create.")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="Default: the broker's num.partitions.")
@click.option("--replication-factor", type=click.IntRange(min=1), default=None,
              help="Default: the broker's default.replication.factor.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Topic config override (repeatable).")
@click.option("--if-not-exists", is_flag=True, help="No error when the topic exists.")
@click.pass_context
@client_errors
def create(ctx: click.Context, topic: str, partitions: int | None,
           replication_factor: int | None, configs: tuple[str, ...],
           if_not_exists: bool) -> None:
    """Create a topic."""
    from odradek.client import KafkaClientError, NewTopic  # on use (odradek.cli)

    config = parse_configs(configs)
    admin = _admin(ctx)
    try:
        admin.create_topics([NewTopic(topic, partitions or -1, replication_factor or -1,
                                      config)])
    except KafkaClientError as exc:
        if not (if_not_exists and "TOPIC_ALREADY_EXISTS" in str(exc)):
            raise
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json({"created": topic})
    else:
        click.echo(f"Created topic {topic}.")


@topics.command(name="list")
@click.option("--exclude-internal", is_flag=True)
@click.pass_context
@client_errors
def list_(ctx: click.Context, exclude_internal: bool) -> None:
    """List topic names."""
    admin = _admin(ctx)
    try:
        found = admin.list_topics(include_internal=not exclude_internal)
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json(sorted(found))
    else:
        for name in sorted(found):
            click.echo(name)


@topics.command()
@names_argument("--topic", "names", multiple=True, required=False,
                help="Topic to describe (repeatable; default: all).")
@click.pass_context
@client_errors
def describe(ctx: click.Context, names: tuple[str, ...]) -> None:
    """Partitions, leaders, replicas and ISR (plus config overrides) of topics."""
    from odradek.client.admin import RESOURCE_TOPIC  # on use (odradek.cli)

    admin = _admin(ctx)
    try:
        infos = admin.describe_topics(names) if names else admin.list_topics(False)
        configs = {}
        for name in infos:
            entries = admin.describe_configs(RESOURCE_TOPIC, name)
            configs[name] = {k: e.value for k, e in entries.items()
                             if e.source == "DYNAMIC_TOPIC_CONFIG"}
    finally:
        admin.close()
    data = [{
        "topic": name, "topic_id": info.topic_id, "partition_count": len(info.partitions),
        "replication_factor": len(next(iter(info.partitions.values())).replicas)
        if info.partitions else 0,
        "configs": configs.get(name, {}),
        "partitions": [{"partition": p.partition, "leader": p.leader,
                        "replicas": list(p.replicas), "isr": list(p.isr)}
                       for _, p in sorted(info.partitions.items())],
    } for name, info in sorted(infos.items())]
    if ctx.obj["output"] == "json":
        print_json(data)
        return
    for topic in data:
        overrides = ",".join(f"{k}={v}" for k, v in sorted(topic["configs"].items()))
        print_table(
            f"{topic['topic']}  partitions={topic['partition_count']}  "
            f"replication={topic['replication_factor']}  configs={overrides or '-'}",
            ["Partition", "Leader", "Replicas", "Isr"],
            [(p["partition"], p["leader"], ",".join(map(str, p["replicas"])),
              ",".join(map(str, p["isr"]))) for p in topic["partitions"]])


@topics.command()
@names_argument("--topic", "topic", multiple=False, help="The topic to alter.")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="New total partition count (can only grow).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Set a topic config (repeatable).")
@click.option("--delete-config", "deletes", multiple=True, metavar="KEY",
              help="Remove a topic config override (repeatable).")
@click.pass_context
@client_errors
def alter(ctx: click.Context, topic: str, partitions: int | None, configs: tuple[str, ...],
          deletes: tuple[str, ...]) -> None:
    """Add partitions or change topic configs."""
    from odradek.client.admin import RESOURCE_TOPIC  # on use (odradek.cli)

    if partitions is None and not configs and not deletes:
        raise click.UsageError("nothing to alter: give --partitions, --config or "
                               "--delete-config")
    changes: list[tuple[str, str, str | None]] = [
        (k, "set", v) for k, v in parse_configs(configs).items()]
    changes += [(k, "delete", None) for k in deletes]
    admin = _admin(ctx)
    try:
        admin.describe_topics([topic])
        if partitions is not None:
            admin.create_partitions({topic: partitions})
        if changes:
            admin.incremental_alter_configs(RESOURCE_TOPIC, topic, changes)
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json({"altered": topic})
    else:
        click.echo(f"Altered topic {topic}.")


@topics.command()
@names_argument("--topic", "names", multiple=True, help="Topic to delete (repeatable).")
@click.option("--if-exists", is_flag=True, help="No error when the topic does not exist.")
@click.pass_context
@client_errors
def delete(ctx: click.Context, names: tuple[str, ...], if_exists: bool) -> None:
    """Delete topics."""
    from odradek.client import KafkaClientError  # on use (odradek.cli)

    admin = _admin(ctx)
    try:
        admin.delete_topics(names)
    except KafkaClientError as exc:
        if not (if_exists and "UNKNOWN_TOPIC_OR_PARTITION" in str(exc)):
            raise
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json({"deleted": list(names)})
    else:
        click.echo(f"Deleted topic(s) {', '.join(names)}.")
