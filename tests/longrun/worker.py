"""Entry point of the long runs' worker processes: ``python -m tests.longrun.worker ACTION
'{"json": "spec"}'``.

Loads and observers run as their own processes so a network namespace can hold them, a
stuck client cannot stall the test, and the test stops each by PID when its time is up.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from tests.longrun.load_consumers import consume_confluent, consume_odradek
from tests.longrun.load_producers import produce_confluent, produce_odradek
from tests.longrun.observe import committed, create_topics, monitor, probe, read_back

ACTIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "produce-confluent": produce_confluent,
    "produce-odradek": produce_odradek,
    "consume-confluent": consume_confluent,
    "consume-odradek": consume_odradek,
    "create-topics": create_topics,
    "monitor": monitor,
    "read-back": read_back,
    "committed": committed,
    "probe": probe,
}


def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[0] not in ACTIONS:
        raise SystemExit(f"usage: worker {{{','.join(ACTIONS)}}} JSON-SPEC")
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ACTIONS[argv[0]](json.loads(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
