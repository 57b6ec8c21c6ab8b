"""What TLS costs: produce and consume over SSL vs PLAINTEXT, odradek beside Apache Kafka.

Each system runs one broker with two listeners, PLAINTEXT and SSL (a test CA and a broker
certificate for 127.0.0.1 made with ``openssl``, PEM on both sides: odradek's
``ssl.keystore.location``, Kafka's ``ssl.keystore.type=PEM``). Kafka's own Java tools are
the load (ProducerPerformance acks=1, then ConsumerPerformance reading it back), with
1 KiB records so the cipher, not the per-record work, is what the listener adds. Each
repeat runs every (system, protocol) pair, the order alternating between repeats.

Rows: ``tls.produce.plaintext`` / ``.ssl`` and ``tls.consume.plaintext`` / ``.ssl`` (run,
median and odradek-over-Kafka comparison rows, as every series), then per system
``tls.produce.ssl_over_plaintext`` / ``tls.consume.ssl_over_plaintext``: the fraction of
its PLAINTEXT rate a system keeps over SSL, reported beside Apache Kafka's same fraction.
Python's ``ssl`` module encrypts on the broker's event loop, where Kafka spreads TLS over
its network threads; these rows say how much that costs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from bench import kafka_tools as tools
from bench.common import Context
from bench.series import Comparison, Series, alternate, measured
from bench.systems import (
    APACHE_KAFKA,
    BROKER_SETTINGS,
    ODRADEK,
    START_TIMEOUT,
    create_topic,
    zookeeper,
)
from odradek.local_cluster import BrokerProcess, free_port, wait_until
from tests.harness.apache_kafka import ApacheKafka, broker_serving
from tests.harness.certs import CertSet, make_certs

RECORD = 1024
PARTITIONS = 6
PROTOCOLS = ("PLAINTEXT", "SSL")


@contextlib.contextmanager
def _broker(system: str, kafka: ApacheKafka, scratch: Path, zk_connect: str,
            certs: CertSet) -> Iterator[tuple[dict[str, str], int]]:
    """One broker of ``system`` with a PLAINTEXT and an SSL listener: the bootstrap address
    per protocol and the broker's PID."""
    plain, secure = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure}"
    settings = {**BROKER_SETTINGS, "listeners": listeners,
                "ssl.keystore.location": str(certs.broker_keystore),
                "ssl.truststore.location": str(certs.ca)}
    if system == ODRADEK:
        broker = BrokerProcess(0, plain, scratch / "odradek", zk_connect, settings)
        broker.start()
        try:
            wait_until(lambda: broker_serving("127.0.0.1", plain), START_TIMEOUT,
                       "odradek broker serving", interval=0.2)
            assert broker.pid is not None
            yield {"PLAINTEXT": f"127.0.0.1:{plain}", "SSL": f"127.0.0.1:{secure}"}, broker.pid
        finally:
            broker.stop()
        return
    settings.update({"advertised.listeners": listeners, "inter.broker.listener.name": "PLAINTEXT",
                     "ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM"})
    kafka_broker = kafka.broker(zk_connect, plain, scratch / "kafka", 0, settings)
    kafka_broker.start(START_TIMEOUT)
    try:
        assert kafka_broker.pid is not None
        yield {"PLAINTEXT": f"127.0.0.1:{plain}", "SSL": f"127.0.0.1:{secure}"}, kafka_broker.pid
    finally:
        kafka_broker.stop()


def _client_props(protocol: str, certs: CertSet) -> dict[str, str]:
    if protocol == "PLAINTEXT":
        return {}
    return {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(certs.ca)}


def run(ctx: Context) -> None:
    kafka = ApacheKafka()
    kafka.require()
    records = ctx.pick(300_000, 100_000, 5_000)
    repeats = ctx.pick(3, 1, 1)
    scratch = ctx.scratch_dir("tls")
    certs = make_certs(scratch / "certs")
    params = {"brokers": 1, "partitions": PARTITIONS, "replication": 1, "record_bytes": RECORD,
              "records": records, "client": f"Apache Kafka {kafka.version} tools (Java)"}
    series = {
        (kind, protocol): Series(ctx, f"tls.{kind}.{protocol.lower()}",
                                 {**params, "security_protocol": protocol,
                                  **({"acks": "1"} if kind == "produce" else {})},
                                 comparisons=[Comparison("msgs_per_s"), Comparison("cpu_s")])
        for kind in ("produce", "consume") for protocol in PROTOCOLS
    }
    with zookeeper(scratch) as zk, contextlib.ExitStack() as stack:
        brokers = {system: stack.enter_context(
            _broker(system, kafka, scratch / system, f"{zk.connect}/{system}", certs))
            for system in (APACHE_KAFKA, ODRADEK)}
        counter = iter(range(1_000_000))
        for bootstrap, _pid in brokers.values():  # warm-up, not reported
            warm = f"tls-warmup-{next(counter)}"
            create_topic(bootstrap["PLAINTEXT"], warm, PARTITIONS, 1)
            for protocol in PROTOCOLS:
                tools.producer_performance(kafka, bootstrap[protocol], warm, records // 4,
                                           RECORD, {"acks": "1", **_client_props(protocol,
                                                                                 certs)})
        for repeat in range(repeats):
            for system in alternate([APACHE_KAFKA, ODRADEK], repeat):
                bootstrap, pid = brokers[system]
                for protocol in alternate(PROTOCOLS, repeat):
                    topic = f"tls-{protocol.lower()}-{next(counter)}"
                    create_topic(bootstrap["PLAINTEXT"], topic, PARTITIONS, 1)
                    client = _client_props(protocol, certs)
                    series["produce", protocol].run_once(system, partial(
                        measured, [pid], tools.producer_performance, kafka,
                        bootstrap[protocol], topic, records, RECORD, {"acks": "1", **client}),
                        repeat)
                    consume = partial(tools.consumer_performance, consumer_props=client)
                    series["consume", protocol].run_once(system, partial(
                        measured, [pid], consume, kafka, bootstrap[protocol], topic, records,
                        RECORD), repeat)
    medians = {key: s.finish() for key, s in series.items()}
    for kind in ("produce", "consume"):
        kept = {}
        for system in (APACHE_KAFKA, ODRADEK):
            plain = medians[kind, "PLAINTEXT"].get(system, {}).get("msgs_per_s")
            secure = medians[kind, "SSL"].get(system, {}).get("msgs_per_s")
            kept[system] = secure / plain if plain and secure else None
            ctx.report(f"tls.{kind}.ssl_over_plaintext.{system}", kept[system], "ratio",
                       system=system, test=f"tls.{kind}.ssl_over_plaintext", params=params,
                       kind="ratio")
        ctx.report(f"tls.{kind}.ssl_over_plaintext", kept[ODRADEK], "ratio",
                   reference=kept[APACHE_KAFKA], reference_name=APACHE_KAFKA, goal="higher",
                   system=ODRADEK, test=f"tls.{kind}.ssl_over_plaintext", params=params,
                   metric="ssl_over_plaintext", kind="comparison", has_goal=False)
