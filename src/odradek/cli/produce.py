"""``odradek produce``: one record per stdin line (like kafka-console-producer)."""

from __future__ import annotations

import sys
from typing import Any

import click

from .output import bootstrap_option, client_errors, command_config_option, parse_properties

PROPERTIES = ("parse.key", "key.separator", "parse.headers", "headers.delimiter",
              "headers.separator", "headers.key.separator", "ignore.error")


@click.command()
@bootstrap_option
@command_config_option
@click.argument("topic")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE",
              help="parse.key=true, key.separator=<sep> (default TAB), parse.headers=true, "
                   "headers.delimiter, headers.separator, headers.key.separator.")
@click.option("--compression", "--compression-codec", "compression",
              type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]), default="none",
              show_default=True)
@click.option("--acks", "--request-required-acks", "acks",
              type=click.Choice(["0", "1", "all", "-1"]), default="all", show_default=True)
@click.option("--linger-ms", type=click.IntRange(min=0), default=5, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=16384, show_default=True)
@client_errors
def produce(bootstrap: str, security: dict[str, Any], topic: str, properties: tuple[str, ...],
            compression: str,
            acks: str, linger_ms: int, batch_size: int) -> None:
    """Send each line of stdin as one record to TOPIC."""
    from odradek.client import Producer  # on use (odradek.cli)

    props = parse_properties(properties, PROPERTIES)
    parse_key = props.get("parse.key", "false").lower() == "true"
    key_separator = props.get("key.separator", "\t")
    parse_headers = props.get("parse.headers", "false").lower() == "true"
    headers_delimiter = props.get("headers.delimiter", "\t")
    headers_separator = props.get("headers.separator", ",")
    headers_key_separator = props.get("headers.key.separator", ":")
    producer = Producer(bootstrap, compression_type=compression, acks=acks,
                        linger_ms=linger_ms, batch_size=batch_size, max_block_ms=10_000,
                        **security)
    futures = []
    count = 0
    try:
        for number, raw in enumerate(sys.stdin.buffer, start=1):
            line = raw.rstrip(b"\r\n")
            headers = None
            key = None
            if parse_headers:
                head, sep, line = line.partition(headers_delimiter.encode())
                if not sep:
                    raise click.ClickException(f"line {number}: no headers delimiter")
                headers = []
                for item in head.split(headers_separator.encode()) if head else []:
                    name, _, value = item.partition(headers_key_separator.encode())
                    headers.append((name.decode(), value))
            if parse_key:
                key, sep, line = line.partition(key_separator.encode())
                if not sep:
                    raise click.ClickException(
                        f"line {number}: no key separator {key_separator!r} (parse.key=true)")
            futures.append(producer.send(topic, line, key=key, headers=headers))
            count += 1
            if len(futures) >= 10_000:
                for future in futures:
                    future.get()
                futures.clear()
        producer.flush()
        for future in futures:
            future.get()
    finally:
        producer.close(timeout=30)
    click.echo(f"Produced {count} record(s) to {topic}.", err=True)
