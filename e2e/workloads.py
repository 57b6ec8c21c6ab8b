"""Client programs that scenarios run inside the cluster (as Jobs in the broker image).

They print one line per fact the test asserts on, so the test reads the Job's log instead of
trusting an exit code: ``ACK <n>`` for every record the cluster acknowledged with acks=all,
``FAIL <n> <error>`` for every record it did not.
"""

from __future__ import annotations

import re

# Produces COUNT records "<prefix>-<n>" at about RATE per second with acks=all (idempotent),
# resolving futures every few records so ACK lines appear while the load runs.
ACKED_PRODUCER = r'''
import sys, time
from odradek.client import Producer

bootstrap, topic, prefix = sys.argv[1:4]
count, rate = int(sys.argv[4]), float(sys.argv[5])
producer = Producer(bootstrap, acks="all", linger_ms=5, request_timeout_ms=10_000,
                    delivery_timeout_ms=120_000)
pending = []

def settle():
    for n, future in pending:
        try:
            future.get(130)
            print(f"ACK {n}", flush=True)
        except Exception as exc:
            print(f"FAIL {n} {type(exc).__name__}: {exc}", flush=True)
    pending.clear()

started = time.monotonic()
for n in range(count):
    pending.append((n, producer.send(topic, f"{prefix}-{n}".encode())))
    if len(pending) >= 20:
        settle()
    delay = started + (n + 1) / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
settle()
producer.close(30)
print("DONE", flush=True)
'''


def producer_command(bootstrap: str, topic: str, prefix: str, count: int, rate: float) -> list[str]:
    return ["python", "-c", ACKED_PRODUCER, bootstrap, topic, prefix, str(count), str(rate)]


def parse_acks(log: str) -> tuple[set[int], dict[int, str]]:
    """The acknowledged record numbers and the failed ones (with their errors) in a log."""
    acked = {int(m) for m in re.findall(r"^ACK (\d+)$", log, re.MULTILINE)}
    failed = {int(n): err for n, err in re.findall(r"^FAIL (\d+) (.*)$", log, re.MULTILINE)}
    return acked, failed
