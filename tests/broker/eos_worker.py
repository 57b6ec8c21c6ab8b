"""A consume-transform-produce worker for the exactly-once kill test (run as a process).

``python -m tests.broker.eos_worker BOOTSTRAP SOURCE SINK GROUP PARTITIONS`` reads SOURCE
read_committed from the group's committed offsets (manual assignment: fencing comes from
the transactional id, which every incarnation shares), writes each value prefixed with
``out-`` to SINK and commits the input offsets in the same transaction. It exits 0 after
3 s without new input. The test SIGKILLs it at random moments and starts it again.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def main(bootstrap: str, source: str, sink: str, group: str, partitions: int) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-tx",
                         "transaction.timeout.ms": 10000, "linger.ms": 5})
    producer.init_transactions(60)  # fences the previous incarnation, ends its transaction
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(source, p) for p in range(partitions)])
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < 3:
        messages = [m for m in consumer.consume(num_messages=50, timeout=0.5)
                    if m.error() is None]
        if not messages:
            continue
        idle_since = time.monotonic()
        producer.begin_transaction()
        positions: dict[int, int] = {}
        for message in messages:
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            producer.produce(sink, value=b"out-" + (message.value() or b""),
                             partition=partition)
            positions[partition] = offset + 1
        producer.send_offsets_to_transaction(
            [TopicPartition(source, p, o) for p, o in positions.items()],
            consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
