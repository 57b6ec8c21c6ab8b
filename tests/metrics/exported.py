"""The sample names a fully fed broker actually serves (not what the catalog promises)."""

from __future__ import annotations

import functools
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.harness.metrics_demo import demo_cluster


@functools.cache
def exported_names() -> frozenset[str]:
    """Every sample name scraped over HTTP from the demo brokers (every recorder called,
    every source attached, the event loop running) and from the operator's registry."""
    with demo_cluster(interval=0.05) as cluster:
        time.sleep(0.5)  # a few workload steps
        texts = []
        for port in [*cluster.ports, cluster.operator_port]:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                texts.append(r.read().decode())
    return frozenset(sample.name for text in texts
                     for family in text_string_to_metric_families(text)
                     for sample in family.samples)
