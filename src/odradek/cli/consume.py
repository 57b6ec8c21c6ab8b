"""``odradek consume``: print records of a topic (like kafka-console-consumer)."""

from __future__ import annotations

import json
from typing import Any

import click

from odradek.clock import monotonic_s

from .output import (
    bootstrap_option,
    client_errors,
    command_config_option,
    output_option,
    parse_properties,
)

PROPERTIES = ("print.key", "print.value", "print.timestamp", "print.partition",
              "print.offset", "print.headers", "key.separator", "line.separator")


def _text(data: bytes | None) -> str:
    return "null" if data is None else data.decode(errors="replace")


@click.command()
@bootstrap_option
@command_config_option
@click.argument("topic")
@click.option("--group", default=None, help="Consume as a member of this consumer group.")
@click.option("--zookeeper", default=None, metavar="HOST:PORT[/CHROOT]",
              help="With --group: the paper's consumer group, coordinated through this "
                   "ZooKeeper (the brokers' zookeeper.connect) instead of a broker.")
@click.option("--from-beginning", is_flag=True,
              help="Start at the earliest offset when there is no committed one.")
@click.option("--max-messages", type=click.IntRange(min=1), default=None,
              help="Exit after this many records.")
@click.option("--partition", type=click.IntRange(min=0), default=None,
              help="Only this partition (no group).")
@click.option("--offset", default=None,
              help="With --partition: an offset, 'earliest' or 'latest'.")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=None,
              help="Exit when no record arrives for this long.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE",
              help="print.key, print.timestamp, print.partition, print.offset, "
                   "print.headers, print.value (true/false), key.separator.")
@output_option
@client_errors
def consume(bootstrap: str, security: dict[str, Any], topic: str, group: str | None,
            zookeeper: str | None,
            from_beginning: bool,
            max_messages: int | None, partition: int | None, offset: str | None,
            timeout_ms: int | None, properties: tuple[str, ...], output: str) -> None:
    """Print records of TOPIC, one per line, until Ctrl-C (or --max-messages)."""
    from odradek.client import Consumer, TopicPartition, ZooKeeperConsumer  # on use (odradek.cli)

    props = parse_properties(properties, PROPERTIES)
    flag = {k: props.get(k, "false").lower() == "true" for k in PROPERTIES}
    flag["print.value"] = props.get("print.value", "true").lower() == "true"
    separator = props.get("key.separator", "\t")
    if group is not None and partition is not None:
        raise click.UsageError("--partition cannot be combined with --group")
    if offset is not None and partition is None:
        raise click.UsageError("--offset needs --partition")
    if zookeeper is not None and (group is None or partition is not None):
        raise click.UsageError("--zookeeper needs --group (and no --partition): it runs the "
                               "paper's ZooKeeper-coordinated consumer group")
    reset = "earliest" if from_beginning else "latest"
    consumer: Consumer | ZooKeeperConsumer
    if zookeeper is not None and group is not None:
        consumer = ZooKeeperConsumer(zookeeper, group, [topic], bootstrap_servers=bootstrap,
                                     auto_offset_reset="smallest" if from_beginning
                                     else "largest", client_id="odradek-console-consumer")
    else:
        consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                            auto_offset_reset=reset, client_id="odradek-console-consumer",
                            **security)
    seen = 0
    try:
        if isinstance(consumer, ZooKeeperConsumer):
            pass  # registered and owning its partitions already
        elif group is not None:
            consumer.subscribe([topic])
        else:
            partitions = consumer.partitions_for_topic(topic)
            if not partitions:
                raise click.ClickException(f"topic {topic!r} does not exist")
            if partition is not None:
                if partition not in partitions:
                    raise click.ClickException(f"topic {topic!r} has no partition {partition}")
                partitions = [partition]
            tps = [TopicPartition(topic, p) for p in partitions]
            consumer.assign(tps)
            if offset in (None, "earliest", "latest"):
                if offset == "earliest" or (offset is None and from_beginning):
                    consumer.seek_to_beginning(*tps)
                else:
                    consumer.seek_to_end(*tps)
            else:
                try:
                    consumer.seek(tps[0], int(offset))
                except ValueError:
                    raise click.BadParameter("must be an offset, earliest or latest",
                                             param_hint="--offset") from None
        last_record = monotonic_s()
        while max_messages is None or seen < max_messages:
            records = consumer.poll(timeout_ms=500,
                                    max_records=None if max_messages is None
                                    else max_messages - seen)
            if not records:
                if timeout_ms is not None and \
                        (monotonic_s() - last_record) * 1000 >= timeout_ms:
                    break
                continue
            last_record = monotonic_s()
            lines = []
            for r in records:
                if output == "json":
                    lines.append(json.dumps({
                        "topic": r.topic, "partition": r.partition, "offset": r.offset,
                        "timestamp": r.timestamp, "key": None if r.key is None else _text(r.key),
                        "value": None if r.value is None else _text(r.value),
                        "headers": {k: _text(v) for k, v in r.headers}}))
                    continue
                parts = []
                if flag["print.timestamp"]:
                    parts.append(f"CreateTime:{r.timestamp}" if r.timestamp_type == 0
                                 else f"LogAppendTime:{r.timestamp}")
                if flag["print.partition"]:
                    parts.append(f"Partition:{r.partition}")
                if flag["print.offset"]:
                    parts.append(f"Offset:{r.offset}")
                if flag["print.headers"]:
                    parts.append(",".join(f"{k}:{_text(v)}" for k, v in r.headers)
                                 or "NO_HEADERS")
                if flag["print.key"]:
                    parts.append(_text(r.key))
                if flag["print.value"]:
                    parts.append(_text(r.value))
                lines.append(separator.join(parts))
            click.echo("\n".join(lines))
            seen += len(records)
        if group is not None:
            consumer.commit()
    finally:
        consumer.close()
    click.echo(f"Processed a total of {seen} messages", err=True)
