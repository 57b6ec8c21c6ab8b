"""``odradek perf``: producer and consumer throughput tests (like kafka-*-perf-test)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import click

from .output import (
    bootstrap_option,
    client_errors,
    command_config_option,
    output_option,
    print_table,
)


@click.group()
@bootstrap_option
@command_config_option
@output_option
@click.pass_context
def perf(ctx: click.Context, bootstrap: str, security: dict[str, Any], output: str) -> None:
    """Measure producer or consumer throughput and latency."""
    ctx.obj = {"bootstrap": bootstrap, "output": output, "security": security}


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


@perf.command(name="produce")
@click.option("--topic", required=True)
@click.option("--num-records", type=click.IntRange(min=1), required=True)
@click.option("--record-size", type=click.IntRange(min=0), default=100, show_default=True)
@click.option("--throughput", type=int, default=-1, show_default=True,
              help="Max records/s; -1 = unlimited.")
@click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default="all",
              show_default=True)
@click.option("--compression", type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]),
              default="none", show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=65536, show_default=True)
@click.option("--linger-ms", type=click.IntRange(min=0), default=5, show_default=True)
@click.pass_obj
@client_errors
def perf_produce(obj: dict[str, Any], topic: str, num_records: int, record_size: int,
                 throughput: int, acks: str, compression: str, batch_size: int,
                 linger_ms: int) -> None:
    """Send NUM_RECORDS records of RECORD_SIZE random bytes; report rate and latency."""
    bootstrap, output = obj["bootstrap"], obj["output"]
    from rich.progress import Progress  # on use (odradek.cli)

    from odradek.client import Producer

    producer = Producer(bootstrap, acks=acks, compression_type=compression,
                        batch_size=batch_size, linger_ms=linger_ms, **obj["security"])
    payload = os.urandom(record_size)
    latencies: list[float] = []
    sample_every = max(1, num_records // 20_000)
    errors: list[BaseException] = []

    def sampled(sent: float) -> Any:
        def on_delivery(err: BaseException | None, _metadata: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                latencies.append((time.perf_counter() - sent) * 1000)
        return on_delivery

    start = time.perf_counter()
    try:
        with Progress(transient=True, disable=output == "json") as progress:
            task = progress.add_task(f"producing to {topic}", total=num_records)
            for i in range(num_records):
                if throughput > 0:
                    ahead = i / throughput - (time.perf_counter() - start)
                    if ahead > 0:
                        time.sleep(ahead)  # pacing to the requested rate, not synchronization
                callback = sampled(time.perf_counter()) if i % sample_every == 0 else None
                producer.send(topic, payload, on_delivery=callback)
                if i % 5000 == 0:
                    progress.update(task, completed=i)
            producer.flush()
    finally:
        producer.close()
    elapsed = time.perf_counter() - start
    if errors:
        raise click.ClickException(f"{len(errors)} sampled records failed: {errors[0]}")
    latencies.sort()
    result = {
        "records": num_records, "seconds": round(elapsed, 3),
        "records_per_sec": round(num_records / elapsed, 1),
        "mb_per_sec": round(num_records * record_size / elapsed / 1024 / 1024, 2),
        "avg_latency_ms": round(sum(latencies) / len(latencies), 2) if latencies else 0,
        "p50_latency_ms": round(_percentile(latencies, 0.50), 2),
        "p99_latency_ms": round(_percentile(latencies, 0.99), 2),
        "max_latency_ms": round(latencies[-1], 2) if latencies else 0,
    }
    _report(result, output)


@perf.command(name="consume")
@click.option("--topic", required=True)
@click.option("--messages", type=click.IntRange(min=1), required=True)
@click.option("--group", default=None, help="Consume as this group (default: assign all).")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=30_000, show_default=True,
              help="Give up when no record arrives for this long.")
@click.pass_obj
@client_errors
def perf_consume(obj: dict[str, Any], topic: str, messages: int, group: str | None,
                 timeout_ms: int) -> None:
    """Read MESSAGES records from the beginning; report rate."""
    bootstrap, output = obj["bootstrap"], obj["output"]
    from rich.progress import Progress  # on use (odradek.cli)

    from odradek.client import Consumer, TopicPartition

    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                        auto_offset_reset="earliest", max_poll_records=5000,
                        **obj["security"])
    seen = 0
    size = 0
    try:
        if group:
            consumer.subscribe([topic])
        else:
            tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
            if not tps:
                raise click.ClickException(f"topic {topic!r} does not exist")
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
        start = time.perf_counter()
        last = start
        with Progress(transient=True, disable=output == "json") as progress:
            task = progress.add_task(f"consuming {topic}", total=messages)
            while seen < messages:
                records = consumer.poll(500)
                if not records:
                    if (time.perf_counter() - last) * 1000 > timeout_ms:
                        break
                    continue
                last = time.perf_counter()
                seen += len(records)
                size += sum(len(r.value or b"") for r in records)
                progress.update(task, completed=seen)
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    _report({"records": seen, "seconds": round(elapsed, 3),
             "records_per_sec": round(seen / elapsed, 1) if elapsed else 0,
             "mb_per_sec": round(size / elapsed / 1024 / 1024, 2) if elapsed else 0}, output)
    if seen < messages:
        raise click.ClickException(f"only {seen} of {messages} records arrived within "
                                   f"{timeout_ms} ms of each other")


def _report(result: dict[str, float], output: str) -> None:
    if output == "json":
        click.echo(json.dumps(result))
    else:
        print_table(None, list(result), [list(result.values())])
