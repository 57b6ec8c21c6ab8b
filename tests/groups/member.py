"""One consumer-group member as its own process, so a test can SIGKILL it mid-flight.

``python -m tests.groups.member --client confluent|kafka-python|aiokafka --bootstrap H:P
--topic T --group G --out FILE [--session-ms N] [--instance-id ID]``

The member subscribes with the client's own group management, and for every record it
consumes it first appends ``{"event": "record", ...}`` to ``FILE`` (flushed) and only then
commits the offset synchronously: what the file shows is a superset of what is committed,
which is what lets a test check at-least-once delivery across a kill. Every assignment the
client hands the application is appended as ``{"event": "assigned", "partitions": [...]}``.
SIGTERM closes the consumer cleanly (LeaveGroup); SIGKILL leaves nothing behind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import time
from typing import IO, Any

_POLL_S = 0.2


class EventLog:
    def __init__(self, path: str) -> None:
        self._file: IO[str] = open(path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    def write(self, event: str, **fields: Any) -> None:
        self._file.write(json.dumps({"event": event, "t": time.time(), **fields}) + "\n")
        self._file.flush()


class Stop:
    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._set)

    def _set(self, *_: Any) -> None:
        self.requested = True


def run_confluent(args: argparse.Namespace, events: EventLog, stop: Stop) -> None:
    import confluent_kafka

    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": args.session_ms,
        "heartbeat.interval.ms": max(args.session_ms // 6, 100),
        "topic.metadata.refresh.interval.ms": 2000,
    }
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = confluent_kafka.Consumer(config)

    def on_assign(_consumer: Any, partitions: list[Any]) -> None:
        events.write("assigned", partitions=sorted(p.partition for p in partitions))

    def on_revoke(_consumer: Any, partitions: list[Any]) -> None:
        events.write("revoked", partitions=sorted(p.partition for p in partitions))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    try:
        while not stop.requested:
            messages = consumer.consume(100, _POLL_S)
            good = [m for m in messages if m.error() is None]
            for message in good:
                events.write("record", p=message.partition(), o=message.offset(),
                             v=(message.value() or b"").decode())
            if good:
                latest: dict[int, int] = {}
                for message in good:
                    partition, offset = message.partition(), message.offset()
                    assert partition is not None and offset is not None
                    latest[partition] = offset + 1
                consumer.commit(
                    offsets=[confluent_kafka.TopicPartition(args.topic, p, o)
                             for p, o in latest.items()],
                    asynchronous=False,
                )
    finally:
        consumer.close()


def run_kafka_python(args: argparse.Namespace, events: EventLog, stop: Stop) -> None:
    import kafka
    from kafka.structs import OffsetAndMetadata

    # Its coordinator's join/sync/heartbeat steps to this member's log (a few lines per
    # rebalance): a member that stops mid-rebalance shows which request went unanswered.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    logging.getLogger("kafka.coordinator").setLevel(logging.INFO)

    class Listener(kafka.ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            events.write("revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            events.write("assigned", partitions=sorted(tp.partition for tp in assigned))

    consumer = kafka.KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=max(args.session_ms // 6, 100),
        metadata_max_age_ms=2000,
        **({"group_instance_id": args.instance_id} if args.instance_id else {}),
    )
    consumer.subscribe([args.topic], listener=Listener())
    try:
        while not stop.requested:
            batches = consumer.poll(timeout_ms=int(_POLL_S * 1000))
            commits = {}
            for tp, records in batches.items():
                for record in records:
                    events.write("record", p=tp.partition, o=record.offset,
                                 v=(record.value or b"").decode())
                commits[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
            if commits:
                consumer.commit(commits)
    finally:
        consumer.close()


async def _run_aiokafka(args: argparse.Namespace, events: EventLog, stop: Stop) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.structs import OffsetAndMetadata

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            events.write("revoked", partitions=sorted(tp.partition for tp in revoked))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            events.write("assigned", partitions=sorted(tp.partition for tp in assigned))

    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=max(args.session_ms // 6, 100),
        metadata_max_age_ms=2000,
        **({"group_instance_id": args.instance_id} if args.instance_id else {}),
    )
    consumer.subscribe([args.topic], listener=Listener())
    await consumer.start()
    try:
        while not stop.requested:
            batches = await consumer.getmany(timeout_ms=int(_POLL_S * 1000))
            commits = {}
            for tp, records in batches.items():
                for record in records:
                    events.write("record", p=tp.partition, o=record.offset,
                                 v=(record.value or b"").decode())
                commits[tp] = OffsetAndMetadata(records[-1].offset + 1, "")
            if commits:
                await consumer.commit(commits)
    finally:
        await consumer.stop()


def run_aiokafka(args: argparse.Namespace, events: EventLog, stop: Stop) -> None:
    asyncio.run(_run_aiokafka(args, events, stop))


RUNNERS = {"confluent": run_confluent, "kafka-python": run_kafka_python,
           "aiokafka": run_aiokafka}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--client", choices=sorted(RUNNERS), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--instance-id", default=None)
    args = parser.parse_args()
    events = EventLog(args.out)
    events.write("started", client=args.client)
    RUNNERS[args.client](args, events, Stop())


if __name__ == "__main__":
    main()
