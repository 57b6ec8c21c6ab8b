"""Every alert rule under ``promtool test rules``: fires after its ``for``, not before, and
resolves. The rules file is the generated one (the chart's), so these test what ships."""

from __future__ import annotations

import re
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from odradek_monitoring.alerts import ALL_ALERTS, RUNBOOK_BASE, AlertRule
from odradek_monitoring.generate import RULES_FILE
from tests.harness.prometheus import promtool_binary

ROOT = Path(__file__).resolve().parents[2]
BY_NAME = {rule.name: rule for rule in ALL_ALERTS}
CLUSTER = {"namespace": "prod", "cluster": "events"}


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    rendered = ",".join(f'{key}="{value}"' for key, value in labels.items())
    return {"series": f"{name}{{{rendered}}}", "values": values}


def _annotations(rule: AlertRule, labels: dict[str, str], value: str) -> dict[str, str]:
    """The rule's templates expanded the way Prometheus does for these labels and value."""

    def expand(template: str) -> str:
        template = re.sub(r"\{\{ \$value \| humanizePercentage \}\}", value, template)
        template = template.replace("{{ $value }}", value)
        return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], template)

    return {"summary": expand(rule.summary), "description": expand(rule.description),
            "runbook_url": f"{RUNBOOK_BASE}/{rule.name}.md"}


def _alert(name: str, labels: dict[str, str], value: str) -> dict[str, Any]:
    rule = BY_NAME[name]
    return {"exp_labels": {**labels, "severity": rule.severity},
            "exp_annotations": _annotations(rule, labels, value)}


def _case(name: str, series: list[dict[str, str]], firing_at: str, labels: dict[str, str],
          value: str, quiet_at: tuple[str, ...]) -> dict[str, Any]:
    """One promtool test: the alert fires at ``firing_at`` and is silent at ``quiet_at``."""
    checks: list[dict[str, Any]] = [
        {"eval_time": t, "alertname": name, "exp_alerts": []} for t in quiet_at]
    checks.append({"eval_time": firing_at, "alertname": name,
                   "exp_alerts": [_alert(name, labels, value)]})
    return {"interval": "1m", "input_series": series, "alert_rule_test": checks}


BROKER0 = {**CLUSTER, "broker": "0"}
BROKER1 = {**CLUSTER, "broker": "1"}

OPERATOR_ONLY = [
    _series("up", {"namespace": "kafka", "job": "kafka/odradek-operator"}, "1x10"),
    _series("odradek_operator_brokercluster_under_replicated_partitions",
            {"namespace": "kafka", "exported_namespace": "prod", "name": "events",
             "job": "kafka/odradek-operator"}, "0x10")]

CASES: dict[str, list[dict[str, Any]]] = {
    # both brokers of prod/events stop answering scrapes from t=2m (broker 0) and t=3m
    # (broker 1); another cluster's broker and the operator's target stay up
    "OdradekBrokersDown": [_case(
        "OdradekBrokersDown",
        [_series("up", {**BROKER0, "job": "odradek"}, "1 1 0 0 0 0 0 1"),
         _series("up", {**BROKER1, "job": "odradek"}, "1 1 1 0 0 0 0 1"),
         _series("up", {"namespace": "prod", "cluster": "logs", "broker": "0",
                        "job": "odradek"}, "1x8"),
         _series("up", {"namespace": "prod", "job": "odradek-operator"}, "0x8")],
        "5m", CLUSTER, "0", quiet_at=("1m", "2m", "3m", "7m"))],
    # the only broker target disappears (stale) at t=2m while the operator manages a
    # BrokerCluster; the operator's own target stays
    "OdradekBrokersAbsent": [
        _case("OdradekBrokersAbsent",
              [_series("up", {**BROKER0, "job": "kafka/odradek"}, "1 1 stale"),
               *OPERATOR_ONLY],
              "8m", {}, "1", quiet_at=("0m", "1m", "6m")),
        # the operator alone, no BrokerCluster (the chart's default install): silent
        {"interval": "1m", "input_series": [OPERATOR_ONLY[0]], "alert_rule_test": [
            {"eval_time": "10m", "alertname": "OdradekBrokersAbsent", "exp_alerts": []}]},
    ],
    # offline for 3 minutes from t=2m: fires once 'for: 1m' has passed, resolves at t=5m
    "OdradekOfflinePartitions": [_case(
        "OdradekOfflinePartitions",
        [_series("odradek_controller_offline_partitions", BROKER0, "0 0 4 4 4 0 0"),
         _series("odradek_controller_offline_partitions", BROKER1, "0x6")],
        "3m", CLUSTER, "4", quiet_at=("1m", "2m", "6m"))],
    # the controller moves from broker 0 to 1 with a one-scrape gap: no alert; then none for 3m
    "OdradekNoActiveController": [_case(
        "OdradekNoActiveController",
        [_series("odradek_controller_active", BROKER0, "1 0 0 0 0 0 0 0 0"),
         _series("odradek_controller_active", BROKER1, "0 0 1 1 0 0 0 1 1")],
        "6m", CLUSTER, "0", quiet_at=("1m", "2m", "3m", "4m", "7m"))],
    "OdradekMultipleActiveControllers": [_case(
        "OdradekMultipleActiveControllers",
        [_series("odradek_controller_active", BROKER0, "1 1 1 1 1 1 1"),
         _series("odradek_controller_active", BROKER1, "0 1 0 1 1 1 0")],
        "5m", CLUSTER, "2", quiet_at=("1m", "3m", "4m", "6m"))],
    "OdradekUnderReplicatedPartitions": [_case(
        "OdradekUnderReplicatedPartitions",
        [_series("odradek_broker_under_replicated_partitions", BROKER0, "0 3x12 0"),
         _series("odradek_broker_under_replicated_partitions", BROKER1, "0x14")],
        "11m", BROKER0, "3", quiet_at=("5m", "10m", "14m"))],
    "OdradekUnderMinIsrPartitions": [_case(
        "OdradekUnderMinIsrPartitions",
        [_series("odradek_broker_under_min_isr_partitions", BROKER1, "0 1x6 0")],
        "6m", BROKER1, "1", quiet_at=("3m", "5m", "8m"))],
    # lag grows by 100/min for 20 minutes, then the consumer catches up
    "OdradekConsumerGroupLagGrowing": [_case(
        "OdradekConsumerGroupLagGrowing",
        [_series("odradek_consumer_group_lag_records",
                 {**BROKER0, "group": "billing", "topic": "events", "partition": "0"},
                 "0 0 0 100+100x20 0x10")],
        "21m", {**CLUSTER, "group": "billing", "topic": "events"}, "500",
        quiet_at=("5m", "17m", "30m"))],
    "OdradekLogDirNearlyFull": [_case(
        "OdradekLogDirNearlyFull",
        [_series("odradek_log_dir_free_bytes", {**BROKER0, "log_dir": "/data"},
                 "500 50x7 500"),
         _series("odradek_log_dir_capacity_bytes", {**BROKER0, "log_dir": "/data"}, "1000x9")],
        "7m", {**BROKER0, "log_dir": "/data"}, "5%", quiet_at=("0m", "5m", "9m"))],
    "OdradekZooKeeperSessionLost": [_case(
        "OdradekZooKeeperSessionLost",
        [_series("odradek_zookeeper_session_state", {**BROKER1, "state": "connected"},
                 "1 0 1 0 0 0 1"),
         _series("odradek_zookeeper_session_state", {**BROKER0, "state": "connected"}, "1x6")],
        "5m", {**BROKER1, "state": "connected"}, "0", quiet_at=("1m", "2m", "3m", "6m"))],
    # a hanging transaction on broker 1: older than 20 minutes from t=2m, fires after 5m;
    # broker 0's transactions come and go
    "OdradekTransactionStuckOpen": [_case(
        "OdradekTransactionStuckOpen",
        [_series("odradek_broker_oldest_open_transaction_age_seconds", BROKER1,
                 "1140+60x10 0"),
         _series("odradek_broker_oldest_open_transaction_age_seconds", BROKER0, "0 30 0x9")],
        "8m", BROKER1, "1620", quiet_at=("0m", "6m", "11m"))],
    "OdradekMetricsSeriesDropped": [_case(
        "OdradekMetricsSeriesDropped",
        [_series("odradek_metrics_series_dropped_total",
                 {**BROKER0, "metric": "odradek_consumer_group_lag_records"},
                 "0x10 2x70")],
        "11m", {**BROKER0, "metric": "odradek_consumer_group_lag_records"}, "2",
        quiet_at=("5m", "80m"))],
}


def test_every_alert_has_a_case_and_a_runbook() -> None:
    assert set(CASES) == set(BY_NAME)
    for rule in ALL_ALERTS:
        runbook = ROOT / rule.runbook
        assert runbook.is_file(), f"{rule.name} has no runbook at {rule.runbook}"
        assert rule.name in runbook.read_text()


def test_every_runbook_url_is_an_absolute_link_to_a_runbook_in_the_repository() -> None:
    rules = [rule for group in yaml.safe_load((ROOT / RULES_FILE).read_text())["groups"]
             for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} == set(BY_NAME)
    for rule in rules:
        url = urllib.parse.urlsplit(rule["annotations"]["runbook_url"])
        assert url.scheme == "https" and url.netloc, f"{rule['alert']}: {url.geturl()}"
        path = url.path.split("/blob/main/", 1)
        assert len(path) == 2, f"{rule['alert']}: not a link into the repository: {url.path}"
        runbook = ROOT / path[1]
        assert runbook.is_file(), f"{rule['alert']}: {url.geturl()} names no file in the tree"
        assert runbook.parent == ROOT / "docs" / "runbooks"
        assert rule["alert"] in runbook.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_alert_rule(name: str, tmp_path: Path) -> None:
    tests = {"rule_files": [str(ROOT / RULES_FILE)], "evaluation_interval": "1m",
             "tests": CASES[name]}
    path = tmp_path / f"{name}.test.yaml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run([promtool_binary(), "test", "rules", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_rules_file_is_valid_for_promtool() -> None:
    result = subprocess.run([promtool_binary(), "check", "rules", str(ROOT / RULES_FILE)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALL_ALERTS)} rules found" in result.stdout
