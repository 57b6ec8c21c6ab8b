"""Alerting rules, defined once and rendered for plain Prometheus and for a PrometheusRule.

The rules below are the source of truth. ``python -m odradek_monitoring.generate`` writes them
as a Prometheus rules file (``charts/odradek/rules/odradek.rules.yaml``); the same document
is the ``spec`` of a ``PrometheusRule`` (prometheus-operator), which the chart embeds with
``.Files.Get`` and the operator can build with :func:`prometheus_rule`. Each rule has a
runbook in ``docs/runbooks/<alert>.md`` (the test suite checks that every one exists), and a
``promtool test rules`` case in ``tests/metrics/test_alert_rules.py``.

Every expression aggregates ``by (namespace, cluster, ...)``: those target labels come from
the scrape configuration (:mod:`odradek_monitoring.prometheus`), so one Prometheus can watch
many clusters and an alert names the one in trouble.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from odradek.metrics import catalog as m
from odradek.metrics.lag import LAG
from odradek.metrics.operator import UNDER_REPLICATED as OPERATOR_UNDER_REPLICATED

__all__ = ["ALERT_GROUPS", "AlertRule", "prometheus_rule", "rules_document", "rules_yaml"]

REPOSITORY_URL = "https://github.com/odradek/odradek"
"""Where odradek's sources (and so its runbooks) are published: the one place to change it."""
RUNBOOK_DIR = "docs/runbooks"
RUNBOOK_BASE = f"{REPOSITORY_URL}/blob/main/{RUNBOOK_DIR}"
"""``runbook_url`` is absolute: a pager opens it as a link, outside any checkout."""
BROKER_TARGETS = 'up{cluster!="", broker!=""}'
"""Prometheus's own ``up`` of every odradek broker target, whatever the scrape job is called
(``odradek`` in the dev cluster's Prometheus, ``<namespace>/<PodMonitor>`` under
prometheus-operator): every broker target carries the ``cluster`` and ``broker`` target
labels (:data:`odradek_monitoring.prometheus.TARGET_LABELS`), nothing else is expected to."""


@dataclass(frozen=True)
class AlertRule:
    name: str
    expr: str
    duration: str
    severity: str
    summary: str
    description: str

    @property
    def runbook(self) -> str:
        """The runbook's path in the repository."""
        return f"{RUNBOOK_DIR}/{self.name}.md"

    def as_rule(self, runbook_base: str | None = None) -> dict[str, Any]:
        base = RUNBOOK_BASE if runbook_base is None else runbook_base.rstrip("/")
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.duration,
            "labels": {"severity": self.severity},
            "annotations": {
                "summary": self.summary,
                "description": self.description,
                "runbook_url": f"{base}/{self.name}.md",
            },
        }


CLUSTER = "namespace, cluster"
BROKER = "namespace, cluster, broker"

AVAILABILITY = (
    AlertRule(
        "OdradekBrokersDown",
        f"sum by ({CLUSTER}) ({BROKER_TARGETS}) == 0",
        "1m", "critical",
        "Every broker of {{ $labels.cluster }} is down",
        "Prometheus has failed to scrape every broker of cluster "
        "{{ $labels.namespace }}/{{ $labels.cluster }} for a minute: the brokers are down or "
        "unreachable, and every other odradek alert for this cluster is blind.",
    ),
    # Brokers without targets: pods without an address (Pending), or a PodMonitor that
    # selects nothing. Only where the operator manages a BrokerCluster, so an install with
    # the operator alone (the chart's default) does not page.
    AlertRule(
        "OdradekBrokersAbsent",
        f"count({OPERATOR_UNDER_REPLICATED.name}) unless count({BROKER_TARGETS})",
        "5m", "critical",
        "Prometheus scrapes no odradek broker",
        "The operator manages {{ $value }} BrokerCluster(s), but Prometheus has had no "
        "odradek broker target for 5 minutes: the brokers' pods have no address, or their "
        "PodMonitor (or scrape configuration) selects none. No other odradek alert can fire.",
    ),
    AlertRule(
        "OdradekOfflinePartitions",
        f"sum by ({CLUSTER}) ({m.OFFLINE_PARTITIONS.name}) > 0",
        "1m", "critical",
        "Partitions without a leader in {{ $labels.cluster }}",
        "{{ $value }} partitions of cluster {{ $labels.namespace }}/{{ $labels.cluster }} have "
        "no live leader: producing to and consuming from them fails.",
    ),
    AlertRule(
        "OdradekNoActiveController",
        f"sum by ({CLUSTER}) ({m.CONTROLLER_ACTIVE.name}) == 0",
        "1m", "critical",
        "No active controller in {{ $labels.cluster }}",
        "No broker of {{ $labels.namespace }}/{{ $labels.cluster }} is the active controller: "
        "leader elections, topic changes and ISR updates are not processed.",
    ),
    AlertRule(
        "OdradekMultipleActiveControllers",
        f"sum by ({CLUSTER}) ({m.CONTROLLER_ACTIVE.name}) > 1",
        "2m", "critical",
        "{{ $value }} active controllers in {{ $labels.cluster }}",
        "More than one broker of {{ $labels.namespace }}/{{ $labels.cluster }} believes it is "
        "the controller for longer than a failover takes.",
    ),
)

REPLICATION = (
    AlertRule(
        "OdradekUnderReplicatedPartitions",
        f"sum by ({BROKER}) ({m.UNDER_REPLICATED.name}) > 0",
        "10m", "warning",
        "Under-replicated partitions on broker {{ $labels.broker }} of {{ $labels.cluster }}",
        "{{ $value }} partitions led by broker {{ $labels.broker }} have had fewer in-sync "
        "replicas than replicas for 10 minutes: one more failure may lose availability.",
    ),
    AlertRule(
        "OdradekUnderMinIsrPartitions",
        f"sum by ({BROKER}) ({m.UNDER_MIN_ISR.name}) > 0",
        "5m", "critical",
        "Partitions below min.insync.replicas on broker {{ $labels.broker }}",
        "{{ $value }} partitions led by broker {{ $labels.broker }} of "
        "{{ $labels.namespace }}/{{ $labels.cluster }} have fewer in-sync replicas than "
        "min.insync.replicas: producers with acks=all get NOT_ENOUGH_REPLICAS.",
    ),
)

TRANSACTIONS = (
    AlertRule(
        "OdradekTransactionStuckOpen",
        f"max by ({BROKER}) ({m.OLDEST_OPEN_TRANSACTION.name}) > 1200",
        "5m", "warning",
        "A transaction has been open for over 20 minutes on broker {{ $labels.broker }}",
        "A partition led by broker {{ $labels.broker }} of "
        "{{ $labels.namespace }}/{{ $labels.cluster }} has had a transaction open for "
        "{{ $value }} seconds, longer than any coordinator allows (transaction.max.timeout.ms): "
        "its last stable offset does not advance and read_committed consumers are stuck.",
    ),
)

CONSUMERS = (
    AlertRule(
        "OdradekConsumerGroupLagGrowing",
        f"sum by ({CLUSTER}, group, topic) (delta({LAG.name}[5m])) > 0\n"
        f"and sum by ({CLUSTER}, group, topic) ({LAG.name}) > 0",
        "15m", "warning",
        "Lag of group {{ $labels.group }} on {{ $labels.topic }} keeps growing",
        "Consumer group {{ $labels.group }} has fallen further behind on topic "
        "{{ $labels.topic }} in every 5-minute window for 15 minutes "
        "({{ $labels.namespace }}/{{ $labels.cluster }}).",
    ),
)

RESOURCES = (
    AlertRule(
        "OdradekLogDirNearlyFull",
        f"{m.LOG_DIR_FREE.name} / {m.LOG_DIR_CAPACITY.name} < 0.10",
        "5m", "warning",
        "Log dir {{ $labels.log_dir }} on broker {{ $labels.broker }} is over 90% full",
        "Only {{ $value | humanizePercentage }} of the filesystem holding "
        "{{ $labels.log_dir }} is free; a full log dir takes its partitions offline.",
    ),
    AlertRule(
        "OdradekZooKeeperSessionLost",
        f'{m.ZK_SESSION_STATE.name}{{state="connected"}} == 0',
        "1m", "critical",
        "Broker {{ $labels.broker }} has no ZooKeeper session",
        "Broker {{ $labels.broker }} of {{ $labels.namespace }}/{{ $labels.cluster }} has "
        "not been connected to ZooKeeper for a minute: it cannot take part in elections and "
        "its registration may have expired.",
    ),
    AlertRule(
        "OdradekMetricsSeriesDropped",
        f"sum by ({BROKER}, metric) (increase({m.SERIES_DROPPED.name}[1h])) > 0",
        "0m", "warning",
        "Broker {{ $labels.broker }} drops {{ $labels.metric }} series",
        "A cardinality cap of broker {{ $labels.broker }} refused new {{ $labels.metric }} "
        "series in the last hour: dashboards miss some topics or groups.",
    ),
)

ALERT_GROUPS: dict[str, tuple[AlertRule, ...]] = {
    "odradek.availability": AVAILABILITY,
    "odradek.replication": REPLICATION,
    "odradek.transactions": TRANSACTIONS,
    "odradek.consumers": CONSUMERS,
    "odradek.resources": RESOURCES,
}

ALL_ALERTS: tuple[AlertRule, ...] = tuple(rule for group in ALERT_GROUPS.values()
                                          for rule in group)


def rules_document(runbook_base: str | None = None) -> dict[str, Any]:
    """The rules file (``groups:``), which is also a PrometheusRule's ``spec``."""
    return {"groups": [
        {"name": name, "rules": [rule.as_rule(runbook_base) for rule in rules]}
        for name, rules in ALERT_GROUPS.items()
    ]}


HEADER = ("# Generated by `python -m odradek_monitoring.generate` from "
          "src/odradek_monitoring/alerts.py: edit that, not this.\n")


def rules_yaml() -> str:
    """The rules file as Prometheus reads it: block scalars for multi-line text, rule order
    kept, so the committed file reads like a hand-written one."""

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    body = yaml.dump(rules_document(), Dumper=Dumper, sort_keys=False, width=1000,
                     allow_unicode=True)
    return HEADER + body


def prometheus_rule(name: str, namespace: str, labels: dict[str, str] | None = None,
                    runbook_base: str | None = None) -> dict[str, Any]:
    """A prometheus-operator ``PrometheusRule`` holding the same rules (a pure manifest)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": rules_document(runbook_base),
    }
