"""What a default install of the chart exports: per-topic traffic series are on (the Topics
dashboard draws them), under the cardinality cap; and the harnesses that draw the dashboards
(``make dashboards``, the demo brokers) run with exactly those defaults."""

from __future__ import annotations

from odradek_operator.manifests.brokers import broker_config
from odradek_operator.spec import BrokerClusterSpec

from tests.charts.test_chart import by_kind, needs_helm, render
from tests.harness import render_demo
from tests.harness.chart_defaults import default_broker_config, default_metrics_options

DEFAULT_INSTALL = ("cluster.enabled=true", "cluster.zookeeper.connect=zk-0:2181/odr")


@needs_helm
def test_a_default_install_turns_per_topic_series_on_under_the_cap() -> None:
    (cluster,) = by_kind(render(set_=DEFAULT_INSTALL), "BrokerCluster")
    spec = BrokerClusterSpec.parse(cluster["spec"])
    properties = broker_config(spec, "zk-0:2181/odr")  # the brokers' server.properties
    assert properties["metrics.topic.labels.enable"] == "true"
    assert properties["metrics.topic.labels.max"] == "500"


@needs_helm
def test_the_harnesses_read_the_config_a_default_install_renders() -> None:
    (cluster,) = by_kind(render(set_=DEFAULT_INSTALL), "BrokerCluster")
    assert default_broker_config() == cluster["spec"]["config"]


def test_make_dashboards_runs_brokers_with_the_default_metrics_options() -> None:
    assert not any(key.startswith("metrics.") for key in render_demo.LIVE_OVERRIDES)
    options = default_metrics_options()
    assert options.topic_labels and options.max_topics == 500
