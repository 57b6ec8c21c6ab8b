"""A live 3-broker cluster (real processes, real clients) scraped by a real Prometheus.

One cluster and one Prometheus for the module: a bounded background workload (a producer and
a consumer group) keeps traffic flowing while the tests, in file order, check what the
brokers export, script a consumer-lag scenario, kill and restore a broker, freeze the
controller, and finally evaluate every dashboard panel over the whole run.

Alert *timing* (``for:``) is promtool's business (``test_alert_rules.py``); here the rules
are loaded with ``for: 0s`` so the live test checks the wiring: each expression over the
series the brokers really export fires when the cluster is broken and resolves when healed.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from odradek.local_cluster import LocalCluster, ZooKeeperProcess, free_port
from odradek.metrics.operator import OPERATOR_METRICS
from odradek_monitoring.alerts import ALL_ALERTS, rules_document
from odradek_monitoring.dashboards import DASHBOARDS, dashboard_json
from odradek_monitoring.prometheus import LocalPrometheus, ScrapeTarget
from odradek_monitoring.render import evaluate_panels
from tests.harness.metrics_workload import FLUSHED_TOPIC_CONFIG, Workload, create_compacted_topic
from tests.harness.prometheus import metric_names, prometheus_server, to_promql

pytestmark = pytest.mark.slow  # minutes: a cluster, a failover, a frozen controller

LABELS = {"namespace": "live", "cluster": "live"}
WORKLOAD_TOPIC = "events"
WORKLOAD_GROUP = "dashboards"
WORKLOAD_LIMIT_S = 600.0  # the workload stops by itself even if teardown never comes
OPERATOR_DASHBOARD = "odradek-operator"  # the operator is not part of a broker cluster


@dataclass
class Live:
    cluster: LocalCluster
    prometheus: LocalPrometheus
    started: float

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def controller(self) -> int:
        found = self.prometheus.query('odradek_controller_active{cluster="live"} == 1')
        assert len(found) == 1, found
        return int(found[0]["metric"]["broker"])

    def firing(self, alert: str) -> bool:
        return any(a["labels"]["alertname"] == alert and a["state"] == "firing"
                   for a in self.prometheus.alerts())

    def wait(self, what: str, condition: Callable[[], bool], timeout: float = 90,
             show: str | None = None) -> None:
        """Wait for ``condition``; on a timeout, the failure shows what ``show`` selects."""
        try:
            self.prometheus.wait_for(what, condition, timeout=timeout)
        except Exception as exc:
            if show is None:
                raise
            raise AssertionError(f"{exc}; {show} = {self.prometheus.query(show)}") from exc


def _rules_without_delays(path: Path) -> Path:
    document = rules_document()
    for group in document["groups"]:
        for rule in group["rules"]:
            rule["for"] = "0s"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture(scope="module")
def live(zookeeper: ZooKeeperProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data = tmp_path_factory.mktemp("live")
    cluster = LocalCluster(
        3, data / "cluster",
        overrides={
            "zookeeper.session.timeout.ms": "6000",
            "controller.fast.failover.enable": "false",  # a frozen controller is seen late
            "replica.lag.time.max.ms": "5000",
            "default.replication.factor": "3",
            "min.insync.replicas": "2",
            "offsets.topic.num.partitions": "3",
            "offsets.topic.replication.factor": "3",
            "transaction.state.log.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            "log.retention.check.interval.ms": "1000",
            "metrics.topic.labels.enable": "true",
            "log.cleaner.backoff.ms": "1000",
        },
        chroot=f"/t-{uuid.uuid4().hex[:12]}", external_zookeeper=zookeeper.connect,
        ports=[free_port() for _ in range(3)], metrics_ports=[free_port() for _ in range(3)])
    cluster.start()
    try:
        targets = [ScrapeTarget(f"127.0.0.1:{broker.metrics_port}",
                                {**LABELS, "broker": str(i)})
                   for i, broker in enumerate(cluster.brokers)]
        servers = prometheus_server(data, targets,
                                    rule_files=(_rules_without_delays(data / "rules.yaml"),))
        prometheus = next(servers)
        live = Live(cluster, prometheus, time.time())
        admin = live.admin()
        admin.create_topics([NewTopic(WORKLOAD_TOPIC, 3, 3, config=FLUSHED_TOPIC_CONFIG)]
                            )[WORKLOAD_TOPIC].result(30)
        create_compacted_topic(live.bootstrap)
        workload = Workload(live.bootstrap, WORKLOAD_TOPIC, WORKLOAD_GROUP,
                            WORKLOAD_LIMIT_S).start()
        live.wait("every target up", lambda: len(prometheus.active_targets()) == 3 and all(
            t["health"] == "up" for t in prometheus.active_targets()), timeout=60)
        try:
            yield live
        finally:
            workload.stop()
            servers.close()
    finally:
        cluster.stop()


def _scrape_names(live: Live) -> set[str]:
    names: set[str] = set()
    for broker in live.cluster.brokers:
        with urllib.request.urlopen(broker.metrics_url or "", timeout=30) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            names.update(sample.name for sample in family.samples)
    return names


NOT_FROM_BROKERS = {"up", *(name for spec in OPERATOR_METRICS for name in spec.exposed_names)}
"""Prometheus's own per-target series, and the operator's (this cluster runs no operator)."""


def _used_names() -> set[str]:
    used = set()
    for name in DASHBOARDS:
        if name == OPERATOR_DASHBOARD:
            continue
        model = dashboard_json(name)
        for panel in model["panels"]:
            for target in panel.get("targets", ()):
                used |= metric_names(to_promql(target["expr"]))
    for rule in ALL_ALERTS:
        used |= metric_names(rule.expr) - NOT_FROM_BROKERS
    return used


def test_every_metric_a_dashboard_or_alert_uses_is_exported(live: Live) -> None:
    # Waits for a few workload rounds (requests of every kind, a transaction ended); a name
    # still missing after a minute is not exported.
    deadline = time.monotonic() + 60
    while (missing := _used_names() - _scrape_names(live)) and time.monotonic() < deadline:
        time.sleep(2)
    assert not missing, f"queried by a dashboard or an alert, not exported: {sorted(missing)}"


def test_lag_is_produced_minus_committed_and_never_negative(live: Live) -> None:
    topic, group = "lag-scripted", "scripted"
    admin = live.admin()
    admin.create_topics([NewTopic(topic, 1, 3, config={
        "segment.bytes": "4096"})])[topic].result(30)
    failed: list[object] = []

    def record_failure(error: KafkaError | None, _msg: Message) -> None:
        if error is not None:
            failed.append(error)

    producer = Producer({"bootstrap.servers": live.bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 1000})  # batches well under a segment
    for i in range(400):
        producer.produce(topic, f"record-{i:04d}".encode() * 4,
                         on_delivery=record_failure)
    assert producer.flush(30) == 0 and not failed, failed
    consumer = Consumer({"bootstrap.servers": live.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 100)], asynchronous=False)
    consumer.close()  # every member left: the group is Empty, and still reported

    selector = f'{{cluster="live", group="{group}", topic="{topic}"}}'
    lag = f"sum(odradek_consumer_group_lag_records{selector})"
    live.wait("lag = 400 produced - 100 committed", lambda: live.prometheus.value(lag) == 300,
              show=f'{{__name__=~"odradek_consumer_group_.*", group="{group}"}}')
    assert live.prometheus.value(
        f"sum(odradek_consumer_group_committed_offset{selector})") == 100
    assert live.prometheus.value(
        f'sum(odradek_consumer_group_state{{group="{group}", state="Empty"}})') == 1
    assert live.prometheus.value(
        f'sum(odradek_consumer_group_members{{group="{group}"}})') == 0

    # Retention deletes the segments holding the committed position: the group can read
    # only what is left, so lag = end - log start; never negative, never end - committed.
    resource = ConfigResource("topic", topic, set_config={"retention.bytes": "4096"})
    for future in admin.alter_configs([resource]).values():
        future.result(30)
    start = f'max(odradek_log_start_offset{{cluster="live", topic="{topic}"}})'
    live.wait("retention moved the log start past the commit",
              lambda: (live.prometheus.value(start) or 0) > 100)
    live.wait("lag = end - log start", lambda: live.prometheus.value(lag) == 400 - (
        live.prometheus.value(start) or 0), timeout=30)
    lowest = live.prometheus.value(
        f"min(min_over_time(odradek_consumer_group_lag_records{selector}[10m]))")
    assert lowest is not None and lowest >= 0


# Tables listing what is broken: empty on a healthy cluster, so the every-panel test leaves
# them to the fault tests, which read them while the fault lasts.
PROBLEM_TABLES = {("odradek-replication", "Partitions with a short ISR")}


def _problem_rows(live: Live, dashboard: str, title: str) -> list[dict[str, str]]:
    """The rows (series labels) a problem table shows now."""
    model = dashboard_json(dashboard)
    model["panels"] = [p for p in model["panels"]
                       if p.get("type") == "table" and p["title"] == title]
    assert (dashboard, title) in PROBLEM_TABLES and len(model["panels"]) == 1
    [panel] = evaluate_panels(model, live.prometheus, start=live.started, end=time.time(),
                              step=2.0, variables=dict(LABELS), rate_interval="15s")
    return [series["metric"] for _, found in panel.results for series in found]


def _victim(live: Live) -> int:
    return next(i for i in range(3) if i != live.controller())


def test_killed_broker_under_replicates_and_offlines_partitions_until_it_rejoins(
        live: Live) -> None:
    victim = _victim(live)
    admin = live.admin()
    admin.create_topics([NewTopic("solo", 1, replica_assignment=[[victim]])])["solo"].result(30)
    under = 'sum(odradek_broker_under_replicated_partitions{cluster="live"})'
    offline = 'sum(odradek_controller_offline_partitions{cluster="live"})'
    live.wait("a healthy start", lambda: live.prometheus.value(under) == 0
              and live.prometheus.value(offline) == 0,
              show='{__name__=~"odradek_(broker_under_replicated|controller_offline)_'
                   'partitions", cluster="live"}')

    live.cluster.brokers[victim].kill()
    live.wait("under-replicated partitions", lambda: (live.prometheus.value(under) or 0) > 0)

    def listed_with_surviving_leaders() -> bool:
        rows = _problem_rows(live, "odradek-replication", "Partitions with a short ISR")
        return bool(rows) and all(row["broker"] != str(victim) for row in rows)

    live.wait("the replication dashboard lists them", listed_with_surviving_leaders)
    live.wait("offline partitions", lambda: (live.prometheus.value(offline) or 0) > 0)
    live.wait("OdradekOfflinePartitions firing", lambda: live.firing("OdradekOfflinePartitions"))
    live.wait("OdradekUnderReplicatedPartitions firing",
              lambda: live.firing("OdradekUnderReplicatedPartitions"))

    live.cluster.restart(victim)
    live.wait("no under-replicated partition", lambda: live.prometheus.value(under) == 0,
              timeout=120)
    live.wait("no offline partition", lambda: live.prometheus.value(offline) == 0)
    live.wait("OdradekOfflinePartitions resolved",
              lambda: not live.firing("OdradekOfflinePartitions"))


def test_no_active_controller_fires_while_the_controller_is_frozen(live: Live) -> None:
    controller = live.controller()
    process = live.cluster.brokers[controller]
    assert process.pid is not None
    os.kill(process.pid, signal.SIGSTOP)  # a hung controller: alive for ZooKeeper, unscraped
    try:
        live.wait("OdradekNoActiveController firing",
                  lambda: live.firing("OdradekNoActiveController"), timeout=30)
        live.wait("another broker took over",
                  lambda: not live.firing("OdradekNoActiveController"), timeout=60)
        assert live.controller() != controller
    finally:
        os.kill(process.pid, signal.SIGCONT)
    live.wait("the old controller is scraped again and is not active", lambda: all(
        t["health"] == "up" for t in live.prometheus.active_targets())
        and live.prometheus.value('sum(odradek_controller_active{cluster="live"})') == 1,
        timeout=60)


@pytest.mark.parametrize("name", sorted(set(DASHBOARDS) - {OPERATOR_DASHBOARD}))
def test_every_dashboard_panel_returns_data(live: Live, name: str) -> None:
    panels = evaluate_panels(dashboard_json(name), live.prometheus, start=live.started,
                             end=time.time(), step=2.0, variables=dict(LABELS),
                             rate_interval="15s")
    empty = [p.panel["title"] for p in panels if not p.has_data and not (
        p.panel["type"] == "table" and (name, p.panel["title"]) in PROBLEM_TABLES)]
    assert not empty, f"{name}: panels without data on a live cluster: {empty}"
