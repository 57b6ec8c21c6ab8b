"""``odradek groups``: list, describe, reset offsets of, and delete consumer groups
(like kafka-consumer-groups)."""

from __future__ import annotations

import datetime
from typing import Any

import click

from .output import (
    bootstrap_option,
    client_errors,
    command_config_option,
    names_argument,
    output_option,
    print_json,
    print_table,
)


@click.group()
@bootstrap_option
@command_config_option
@output_option
@click.pass_context
def groups(ctx: click.Context, bootstrap: str, security: dict[str, Any], output: str) -> None:
    """Inspect and manage consumer groups."""
    ctx.obj = {"bootstrap": bootstrap, "output": output, "security": security}


def _admin(ctx: click.Context) -> Any:
    from odradek.client import AdminClient  # on use (odradek.cli)

    return AdminClient(ctx.obj["bootstrap"], **ctx.obj["security"])


@groups.command(name="list")
@click.pass_context
@client_errors
def list_(ctx: click.Context) -> None:
    """Every group known to the cluster, with its type: classic, or consumer (KIP-848)."""
    admin = _admin(ctx)
    try:
        found = admin.list_groups()
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json([{"group": g.group_id, "type": g.group_type,
                     "protocol_type": g.protocol_type, "state": g.state} for g in found])
    else:
        print_table(None, ["Group", "Type", "Protocol type", "State"],
                    [(g.group_id, g.group_type, g.protocol_type, g.state) for g in found])


@groups.command()
@names_argument("--group", "group_ids", multiple=True, help="Group to describe (repeatable).")
@click.option("--members", "by_member", is_flag=True,
              help="One row per member (like kafka-consumer-groups --describe --members).")
@click.option("--verbose", is_flag=True,
              help="With --members: each member's epoch and its current against its target "
                   "assignment (consumer-type groups), or its assignment (classic).")
@click.pass_context
@client_errors
def describe(ctx: click.Context, group_ids: tuple[str, ...], by_member: bool,
             verbose: bool) -> None:
    """Members, committed offsets and lag per partition. A consumer-type group (KIP-848)
    also shows its group epoch, target assignment epoch and assignor."""
    admin = _admin(ctx)
    data: list[dict[str, Any]] = []
    try:
        consumer_groups = admin.describe_consumer_groups(group_ids)
        classic = admin.describe_groups([g for g in group_ids if consumer_groups[g] is None])
        for group in group_ids:
            data.append(_describe(admin, group, consumer_groups[group], classic.get(group)))
    finally:
        admin.close()
    if ctx.obj["output"] == "json":
        print_json(data)
        return
    for entry in data:
        if by_member:
            _print_members(entry, verbose)
        else:
            print_table(_title(entry),
                        ["Topic", "Partition", "Current offset", "Log end offset", "Lag",
                         "Member", "Client", "Host"],
                        [(r["topic"], r["partition"], r["current_offset"],
                          r["log_end_offset"], r["lag"], r["member_id"] or "-",
                          r["client_id"] or "-", r["host"] or "-")
                         for r in entry["partitions"]])


def _describe(admin: Any, group: str, consumer: Any, classic: Any) -> dict[str, Any]:
    """One group as plain data: the JSON output, and what the tables print."""
    desc = consumer or classic
    committed = admin.list_group_offsets(group)
    owner = {tp: m for m in desc.members for tp in m.assignment}
    tps = sorted(set(committed) | set(owner))
    ends = {tp: v.offset if v else None
            for tp, v in admin.list_offsets({tp: -1 for tp in tps}).items()} if tps else {}
    rows = []
    for tp in tps:
        holder = owner.get(tp)
        offset = committed.get(tp)
        end = ends.get(tp)
        rows.append({
            "topic": tp.topic, "partition": tp.partition, "current_offset": offset,
            "log_end_offset": end,
            "lag": end - offset if end is not None and offset is not None else None,
            "member_id": holder.member_id if holder else None,
            "client_id": holder.client_id if holder else None,
            "host": holder.client_host if holder else None})
    members = []
    for m in desc.members:
        member: dict[str, Any] = {
            "member_id": m.member_id, "group_instance_id": m.group_instance_id,
            "client_id": m.client_id, "host": m.client_host,
            "partitions": len(m.assignment), "assignment": _assignment(m.assignment)}
        if consumer is not None:
            member.update(member_epoch=m.member_epoch,
                          target_assignment=_assignment(m.target_assignment))
        members.append(member)
    entry: dict[str, Any] = {
        "group": group, "type": "consumer" if consumer else "classic", "state": desc.state,
        "coordinator": desc.coordinator, "members": len(desc.members),
        "member_details": members, "partitions": rows}
    if consumer is not None:
        entry.update(group_epoch=consumer.group_epoch,
                     assignment_epoch=consumer.assignment_epoch, assignor=consumer.assignor)
    else:
        entry["protocol"] = classic.protocol
    return entry


def _assignment(partitions: Any) -> str:
    """``topic:0,1;other:3``: one whitespace-free cell, as kafka-consumer-groups prints."""
    by_topic: dict[str, list[str]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(str(tp.partition))
    return ";".join(f"{topic}:{','.join(parts)}" for topic, parts in by_topic.items())


def _title(entry: dict[str, Any]) -> str:
    if entry["type"] == "consumer":
        detail = (f"group-epoch={entry['group_epoch']}  assignment-epoch="
                  f"{entry['assignment_epoch']}  assignor={entry['assignor'] or '-'}")
    else:
        detail = f"protocol={entry['protocol'] or '-'}"
    return (f"{entry['group']}  type={entry['type']}  state={entry['state']}  {detail}  "
            f"members={entry['members']}  coordinator={entry['coordinator']}")


def _print_members(entry: dict[str, Any], verbose: bool) -> None:
    columns = ["Member", "Instance", "Host", "Client", "#Partitions"]
    consumer = entry["type"] == "consumer"
    if verbose:
        columns += (["Member epoch", "Assignment", "Target epoch", "Target assignment"]
                    if consumer else ["Assignment"])
    rows = []
    for m in entry["member_details"]:
        row = [m["member_id"], m["group_instance_id"] or "-", m["host"], m["client_id"],
               m["partitions"]]
        if verbose and consumer:
            row += [m["member_epoch"], m["assignment"] or "-", entry["assignment_epoch"],
                    m["target_assignment"] or "-"]
        elif verbose:
            row.append(m["assignment"] or "-")
        rows.append(row)
    print_table(_title(entry), columns, rows)


@groups.command(name="reset-offsets")
@names_argument("--group", "group", multiple=False, help="The group whose offsets move.")
@click.option("--topic", "topics", multiple=True, required=True,
              help="TOPIC or TOPIC:P1,P2 (repeatable).")
@click.option("--to-earliest", is_flag=True)
@click.option("--to-latest", is_flag=True)
@click.option("--to-offset", type=click.IntRange(min=0), default=None)
@click.option("--shift-by", type=int, default=None)
@click.option("--to-datetime", default=None, help="ISO 8601, e.g. 2024-01-31T12:00:00Z.")
@click.option("--execute", is_flag=True, help="Apply; without it only show the plan.")
@click.pass_context
@client_errors
def reset_offsets(ctx: click.Context, group: str, topics: tuple[str, ...], to_earliest: bool,
                  to_latest: bool, to_offset: int | None, shift_by: int | None,
                  to_datetime: str | None, execute: bool) -> None:
    """Move an inactive group's committed offsets (dry run unless --execute)."""
    from rich.progress import Progress  # on use (odradek.cli)

    from odradek.client import TopicPartition

    chosen = [to_earliest, to_latest, to_offset is not None, shift_by is not None,
              to_datetime is not None]
    if sum(chosen) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-offset, "
                               "--shift-by, --to-datetime")
    admin = _admin(ctx)
    try:
        tps: list[TopicPartition] = []
        for spec in topics:
            name, _, parts = spec.partition(":")
            if parts:
                tps += [TopicPartition(name, int(p)) for p in parts.split(",")]
            else:
                info = admin.describe_topics([name])[name]
                tps += [TopicPartition(name, p) for p in sorted(info.partitions)]
        earliest = {tp: v.offset if v else 0
                    for tp, v in admin.list_offsets({tp: -2 for tp in tps}).items()}
        latest = {tp: v.offset if v else 0
                  for tp, v in admin.list_offsets({tp: -1 for tp in tps}).items()}
        current = admin.list_group_offsets(group, tps)
        target: dict[TopicPartition, int] = {}
        if to_datetime is not None:
            try:
                when = datetime.datetime.fromisoformat(to_datetime.replace("Z", "+00:00"))
            except ValueError:
                raise click.BadParameter("not an ISO 8601 date-time",
                                         param_hint="--to-datetime") from None
            if when.tzinfo is None:
                when = when.astimezone()
            found = admin.list_offsets({tp: int(when.timestamp() * 1000) for tp in tps})
        with Progress(transient=True, disable=ctx.obj["output"] == "json") as progress:
            task = progress.add_task("computing offsets", total=len(tps))
            for tp in tps:
                if to_earliest:
                    value = earliest[tp]
                elif to_latest:
                    value = latest[tp]
                elif to_offset is not None:
                    value = to_offset
                elif shift_by is not None:
                    value = current.get(tp, earliest[tp]) + shift_by
                else:
                    hit = found[tp]
                    value = hit.offset if hit is not None else latest[tp]
                target[tp] = min(max(value, earliest[tp]), latest[tp])
                progress.advance(task)
        if execute:
            admin.alter_group_offsets(group, target)
    finally:
        admin.close()
    rows = [{"topic": tp.topic, "partition": tp.partition, "current_offset": current.get(tp),
             "new_offset": off} for tp, off in sorted(target.items())]
    if ctx.obj["output"] == "json":
        print_json({"group": group, "executed": execute, "offsets": rows})
        return
    print_table(f"{group}: {'reset' if execute else 'plan (dry run; add --execute)'}",
                ["Topic", "Partition", "Current offset", "New offset"],
                [(r["topic"], r["partition"], r["current_offset"], r["new_offset"])
                 for r in rows])


@groups.command()
@names_argument("--group", "group_ids", multiple=True, help="Group to delete (repeatable).")
@click.pass_context
@client_errors
def delete(ctx: click.Context, group_ids: tuple[str, ...]) -> None:
    """Delete inactive groups and their committed offsets."""
    admin = _admin(ctx)
    try:
        admin.delete_groups(group_ids)
    finally:
        admin.close()
    click.echo(f"Deleted group(s) {', '.join(group_ids)}.")
