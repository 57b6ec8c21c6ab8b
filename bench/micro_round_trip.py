"""Microbench: one-in-flight one-record Produce (acks=1) against one broker over TCP.

The unit of work issue 24 is about: one small request's round trip. A client sends one
pre-encoded Produce of one record, waits for its response, and sends the next; the bench
prints the wall time per round trip and the broker's CPU per request (user + system, from
``/proc/<pid>/stat`` before and after), with the interpreter that ran the broker (the
bench's own, see :mod:`bench.interpreter`) and the load average, since the machine is
shared: compare runs taken at a similar load, several times.
``python -m bench.micro_round_trip [--requests N]`` from the repository root; ZooKeeper and
the broker are started and stopped by PID (``odradek.local_cluster``).

Not part of ``make bench`` (no peer to compare with): a profile aid for issue 24's goal of
≤ 80 µs broker CPU per one-record Produce.
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import time
from pathlib import Path

from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import TopicName

from bench.interpreter import describe, summary_line
from odradek.local_cluster import LocalCluster, free_port, wait_until
from odradek.protocol.messages import decode_response, encode_request
from tests.broker.helpers import batch, produce_request

TOPIC = "round-trip"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` so far (fields 14 and 15 of /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def _read_frame(sock: socket.socket) -> bytes:
    data = bytearray()
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return bytes(data[4:])


def _produce_error(sock: socket.socket, request: bytes) -> int:
    sock.sendall(request)
    _, response = decode_response(_read_frame(sock), 0, 9)
    return int(response.responses[0].partition_responses[0].error_code)  # type: ignore[union-attr]


def run(requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(1, Path(tmp), base_port=free_port(), zookeeper_port=free_port(),
                               overrides={"offsets.topic.replication.factor": "1"})
        cluster.start()
        try:
            broker = cluster.brokers[0]
            assert broker.pid is not None
            with socket.create_connection(("127.0.0.1", broker.port)) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.sendall(encode_request(MetadataRequest(  # auto-creates the topic
                    topics=(MetadataRequestTopic(name=TopicName(TOPIC), topic_id=None),),
                    allow_auto_topic_creation=True,
                    include_topic_authorized_operations=False), 1))
                _read_frame(sock)
                request = encode_request(produce_request(TOPIC, batch(b"x" * 100), acks=1), 2)
                wait_until(lambda: _produce_error(sock, request) == 0, 30, "the topic's leader")
                for _ in range(requests // 10):  # warm up
                    sock.sendall(request)
                    _read_frame(sock)
                cpu, started = _cpu_seconds(broker.pid), time.perf_counter()
                for _ in range(requests):
                    sock.sendall(request)
                    _read_frame(sock)
                wall = time.perf_counter() - started
                cpu = _cpu_seconds(broker.pid) - cpu
        finally:
            cluster.stop()
    print(f"one-in-flight one-record Produce, acks=1, {requests} requests: "
          f"{wall / requests * 1e6:.1f} µs per round trip, "
          f"{cpu / requests * 1e6:.1f} µs broker CPU per request; load {os.getloadavg()}")
    print(f"broker interpreter: {summary_line(describe())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    run(parser.parse_args().requests)


if __name__ == "__main__":
    main()
