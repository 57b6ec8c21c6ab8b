"""One paper-mode consumer as its own process, so a test can SIGKILL it mid-flight.

``python -m tests.paper_mode.member --zookeeper H:P/chroot --bootstrap H:P --topic T
--group G --name NAME --out FILE [--session-ms N] [--commit-ms N] [--reset smallest]``

It consumes with the paper's stream (``for message in consumer``) and appends every message
to ``FILE`` as ``{"event": "record", "p": partition, "o": offset, "v": value}`` (flushed)
before asking for the next one, so what the file shows is a superset of what the consumer
commits (auto-commit covers only records it has moved past). The consumer id is
``<group>_<NAME>`` and its single thread ``<group>_<NAME>-0``. SIGTERM closes the consumer
(final commit, ephemeral nodes deleted); SIGKILL leaves the nodes to the session timeout.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any

from odradek.client import ZooKeeperConsumer


class Stopped(Exception):
    pass


def _stop(*_: Any) -> None:
    raise Stopped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--session-ms", type=int, default=4000)
    parser.add_argument("--commit-ms", type=int, default=200)
    parser.add_argument("--reset", default="smallest")
    args = parser.parse_args()
    out = open(args.out, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    def write(event: str, **fields: Any) -> None:
        out.write(json.dumps({"event": event, "t": time.time(), **fields}) + "\n")
        out.flush()

    signal.signal(signal.SIGTERM, _stop)
    consumer = ZooKeeperConsumer(
        args.zookeeper, args.group, [args.topic], bootstrap_servers=args.bootstrap,
        consumer_id=args.name, auto_offset_reset=args.reset,
        auto_commit_interval_ms=args.commit_ms, zookeeper_session_timeout_ms=args.session_ms,
        rebalance_max_retries=30, rebalance_backoff_ms=300, fetch_max_wait_ms=100)
    write("started", consumer_id=consumer.consumer_id)
    try:
        for message in consumer:
            write("record", p=message.partition, o=message.offset,
                  v=(message.value or b"").decode())
    except Stopped:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        consumer.close()
        write("closed")
    sys.exit(0)


if __name__ == "__main__":
    main()
