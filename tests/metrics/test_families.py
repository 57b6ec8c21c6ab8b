"""The fast families: what they expose must be exactly what prometheus-client would."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from odradek.metrics import catalog
from odradek.metrics.catalog_types import Feed, Kind, MetricSpec
from odradek.metrics.families import MetricFamily

SPEC = MetricSpec("odradek_test_duration_seconds", Kind.HISTOGRAM, "test", ("api",),
                  buckets=(0.001, 0.01, 0.1, 1.0))


class _One:
    def __init__(self, family: MetricFamily) -> None:
        self.family = family

    def collect(self):
        yield self.family.collect()


def test_histogram_exposition_matches_prometheus_client() -> None:
    values = [0.0005, 0.001, 0.002, 0.01, 0.5, 1.0, 3.0]
    ours = MetricFamily(SPEC)
    theirs_registry = CollectorRegistry()
    theirs = Histogram("odradek_test_duration_seconds", "test", ["api"],
                       buckets=SPEC.buckets, registry=theirs_registry)
    for value in values:
        ours.labels("Produce").observe(value)
        theirs.labels("Produce").observe(value)
    registry = CollectorRegistry()
    registry.register(_One(ours))
    expected = [line for line in generate_latest(theirs_registry).decode().splitlines()
                if "_created" not in line]
    assert generate_latest(registry).decode().splitlines() == expected


def test_plus_inf_bucket_equals_count_and_boundaries_are_inclusive() -> None:
    family = MetricFamily(SPEC)
    child = family.labels("Fetch")
    for value in (0.001, 0.001, 1.0, 7.0):
        child.observe(value)
    samples = {(s.name, s.labels.get("le")): s.value for s in family.collect().samples}
    assert samples[("odradek_test_duration_seconds_bucket", "0.001")] == 2
    assert samples[("odradek_test_duration_seconds_bucket", "1.0")] == 3
    assert samples[("odradek_test_duration_seconds_bucket", "+Inf")] == 4
    assert samples[("odradek_test_duration_seconds_count", None)] == 4


def test_wrong_label_count_is_refused() -> None:
    with pytest.raises(ValueError, match="takes labels"):
        MetricFamily(SPEC).labels("a", "b")


def test_thread_safe_family_loses_no_observation() -> None:
    family = MetricFamily(SPEC, thread_safe=True)
    child = family.labels("x")

    def work() -> None:
        for _ in range(20_000):
            child.observe(0.005)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts, _ = child.snapshot()
    assert sum(counts) == 80_000


def test_scrape_while_children_are_created_never_fails() -> None:
    family = MetricFamily(MetricSpec("odradek_test_total", Kind.COUNTER, "t", ("k",)))
    stop = threading.Event()
    errors: list[BaseException] = []

    def scrape() -> None:
        while not stop.is_set():
            try:
                family.collect()
            except BaseException as exc:
                errors.append(exc)
                return

    thread = threading.Thread(target=scrape)
    thread.start()
    for index in range(50_000):
        family.labels(str(index)).inc()
    stop.set()
    thread.join()
    assert errors == []


@pytest.mark.parametrize("bad", [
    dict(name="kafka_x_total", kind=Kind.COUNTER),
    dict(name="odradek_x", kind=Kind.COUNTER),
    dict(name="odradek_x_total", kind=Kind.GAUGE),
    dict(name="odradek_latency", kind=Kind.HISTOGRAM, buckets=(1.0,)),
    dict(name="odradek_x_seconds", kind=Kind.HISTOGRAM, buckets=(2.0, 1.0)),
    dict(name="odradek_x", kind=Kind.GAUGE, labels=("le",)),
])
def test_spec_enforces_prometheus_naming(bad: dict) -> None:
    with pytest.raises(ValueError):
        MetricSpec(help="h", **bad)


def test_catalog_names_are_unique_and_scraped_specs_name_their_source() -> None:
    names = [spec.name for spec in catalog.BROKER_METRICS]
    assert len(names) == len(set(names))
    assert all(spec.source for spec in catalog.BROKER_METRICS)
    assert {spec.feed for spec in catalog.BROKER_METRICS} == {Feed.RECORDED, Feed.SCRAPED}
