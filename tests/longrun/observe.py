"""Worker actions that look at the cluster: topic setup, the ZooKeeper monitor, and the
final read-back of every log and committed offset.

They run as processes beside the load (inside the client's network namespace for the chaos
run) and hand their results back as files.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from tests.longrun.journal import Journal
from tests.longrun.values import decode

__all__ = ["committed", "create_topics", "monitor", "probe", "read_back"]

MONITOR_EVERY_S = 1.0


def probe(spec: dict[str, Any]) -> None:
    """Exit 0 when ``host:port`` accepts a connection."""
    with socket.create_connection((spec["host"], spec["port"]), timeout=2):
        pass


def create_topics(spec: dict[str, Any]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": spec["bootstrap"]})
    futures = admin.create_topics(
        [NewTopic(t["name"], t["partitions"], t["replication"], config=t.get("config", {}))
         for t in spec["topics"]], operation_timeout=30)
    for future in futures.values():
        future.result(60)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _zk_state(client: Any) -> dict[str, Any]:
    """Controller, live brokers, and every partition's leader, ISR and replicas."""
    from kazoo.exceptions import NoNodeError

    try:
        controller = json.loads(client.get("/controller")[0])["brokerid"]
    except NoNodeError:
        controller = -1
    brokers = sorted(int(b) for b in client.get_children("/brokers/ids"))
    partitions = []
    for topic in sorted(client.get_children("/brokers/topics")):
        try:
            assignment = json.loads(client.get(f"/brokers/topics/{topic}")[0])["partitions"]
        except NoNodeError:
            continue
        for partition, replicas in sorted(assignment.items(), key=lambda kv: int(kv[0])):
            path = f"/brokers/topics/{topic}/partitions/{partition}/state"
            try:
                state = json.loads(client.get(path)[0])
            except NoNodeError:
                state = {"leader": -1, "isr": []}
            partitions.append([topic, int(partition), state["leader"], state["isr"],
                               replicas])
    return {"controller": controller, "brokers": brokers, "partitions": partitions}


def monitor(spec: dict[str, Any]) -> None:
    """Every second: the ZooKeeper state to ``out`` (atomically, with its wall time), and a
    line to ``history`` whenever it changed. Runs until ``seconds`` pass or ``stop`` exists."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException

    out, history, stop = Path(spec["out"]), Path(spec["history"]), Path(spec["stop"])
    client = KazooClient(hosts=spec["zk_connect"], timeout=10)
    client.start(60)
    deadline = time.monotonic() + spec["seconds"]
    previous: dict[str, Any] | None = None
    with history.open("a") as log:
        try:
            while time.monotonic() < deadline and not stop.exists():
                started = time.monotonic()
                try:
                    state = _zk_state(client)
                except KazooException:
                    time.sleep(MONITOR_EVERY_S)  # ZooKeeper paused or unreachable: try again
                    continue
                now = time.time()
                _write_atomically(out, json.dumps({"at": now, **state}))
                if state != previous:
                    log.write(json.dumps({"at": round(now, 3), **state}) + "\n")
                    log.flush()
                    previous = state
                time.sleep(max(0.0, MONITOR_EVERY_S - (time.monotonic() - started)))
        finally:
            client.stop()
            client.close()


def read_back(spec: dict[str, Any]) -> None:
    """Every record of ``topics`` from offset 0 to each partition's high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    journal = Journal(Path(spec["journal"]))
    consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": "longrun-readback",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": False})
    try:
        metadata = consumer.list_topics(timeout=30)
        ends: dict[tuple[str, int], int] = {}
        for topic in spec["topics"]:
            for partition in sorted(metadata.topics[topic].partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                           timeout=30)
                ends[(topic, partition)] = high
                journal.write(f"E {topic} {partition} {high} {low}")
        positions = dict.fromkeys(ends, 0)
        consumer.assign([TopicPartition(t, p, 0) for (t, p) in ends])
        deadline = time.monotonic() + spec["seconds"]
        while any(positions[tp] < ends[tp] for tp in ends):
            if time.monotonic() > deadline:
                short = {f"{t}-{p}": (positions[(t, p)], ends[(t, p)]) for t, p in ends
                         if positions[(t, p)] < ends[(t, p)]}
                raise TimeoutError(f"read-back incomplete after {spec['seconds']}s: {short}")
            for message in consumer.consume(1000, 0.5):
                if message.error() is not None:
                    continue
                tp = (str(message.topic()), int(message.partition() or 0))
                offset = int(message.offset() or 0)
                if offset >= ends[tp]:
                    continue  # beyond the end offset taken at the start
                producer, seq = decode(message.value())
                journal.write(f"L {tp[0]} {tp[1]} {offset} {producer or '-'} {seq}")
                positions[tp] = offset + 1
        journal.count("records", sum(positions.values()))
    finally:
        consumer.close()
        journal.close()


def committed(spec: dict[str, Any]) -> None:
    """Each group's committed offset of every partition of ``topics``, as JSON."""
    from confluent_kafka import Consumer, TopicPartition

    result: dict[str, dict[str, int]] = {}
    for group in spec["groups"]:
        consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": group,
                             "enable.auto.commit": False})
        try:
            metadata = consumer.list_topics(timeout=30)
            partitions = [TopicPartition(t, p) for t in spec["topics"]
                          for p in sorted(metadata.topics[t].partitions)]
            offsets = consumer.committed(partitions, timeout=60)
            result[group] = {f"{tp.topic} {tp.partition}": tp.offset for tp in offsets
                             if tp.offset >= 0}
        finally:
            consumer.close()
    _write_atomically(Path(spec["out"]), json.dumps(result))
