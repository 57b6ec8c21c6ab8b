"""One librdkafka consumer (confluent-kafka, ``group.protocol=consumer``) as its own process,
so that a test can SIGKILL it. The twin of ``java/GroupConsumer.java``.

``python rdkafka_group_member.py BOOTSTRAP GROUP TOPIC [key=value ...]`` prints one line per
event, ``<wall ms> <EVENT> <rest>``, flushed at once: ``ASSIGNED``/``REVOKED``/``LOST``
with the partitions, stamped when the callback runs (a revocation after the offsets of the
revoked partitions are committed), ``RECORD <partition> <offset>``, and ``CLOSED`` after a
clean close on SIGTERM (which revokes, commits and leaves the group).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from types import FrameType

from confluent_kafka import Consumer, KafkaException, TopicPartition


def emit(event: str, rest: str = "") -> None:
    sys.stdout.write(f"{int(time.time() * 1000)} {event} {rest}\n")
    sys.stdout.flush()


def partitions(tps: list[TopicPartition]) -> str:
    return ",".join(str(tp.partition) for tp in sorted(tps, key=lambda tp: tp.partition))


def main(bootstrap: str, group: str, topic: str, *properties: str) -> None:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
        "auto.offset.reset": "earliest", "enable.auto.commit": True,
        "auto.commit.interval.ms": 300,
        # stored only once printed: a commit never covers a record the test missed
        "enable.auto.offset.store": False,
    }
    for setting in properties:
        key, value = setting.split("=", 1)
        config[key] = value
    consumer = Consumer(config)

    def on_assign(_: Consumer, tps: list[TopicPartition]) -> None:
        emit("ASSIGNED", partitions(tps))

    def on_revoke(c: Consumer, tps: list[TopicPartition]) -> None:
        # Hand the partitions over at the position reached: commit first (an error here is
        # "nothing consumed since the last commit").
        with contextlib.suppress(KafkaException):
            c.commit(asynchronous=False)
        emit("REVOKED", partitions(tps))

    def on_lost(_: Consumer, tps: list[TopicPartition]) -> None:
        emit("LOST", partitions(tps))

    stop = False

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit("STARTED")
    while not stop:
        message = consumer.poll(0.1)
        if message is None or message.error() is not None:
            continue
        emit("RECORD", f"{message.partition()} {message.offset()}")
        consumer.store_offsets(message)
    consumer.close()
    emit("CLOSED")


if __name__ == "__main__":
    main(*sys.argv[1:])
