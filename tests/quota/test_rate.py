"""Kafka's windowed Rate and the throttle time it implies, on a fake clock."""

from __future__ import annotations

import pytest

from odradek.quota.rate import SampledRate


def test_a_new_rate_is_measured_over_at_least_samples_minus_one_windows() -> None:
    rate = SampledRate(11, 1000)
    rate.record(1000.0, 0.0)
    assert rate.window_ms(0.0) == 10_000
    assert rate.per_second(0.0) == pytest.approx(100.0)
    assert rate.per_second(5_500.0) == pytest.approx(1000.0 / 10.5)  # 5 full windows + 5 assumed


def test_samples_roll_over_and_expire() -> None:
    rate = SampledRate(2, 1000)
    rate.record(100.0, 0.0)
    rate.record(100.0, 500.0)  # same sample
    rate.record(300.0, 1000.0)  # second sample
    assert rate.total(1500.0) == 500.0
    rate.record(50.0, 2100.0)  # reuses the oldest slot
    assert rate.total(2100.0) == 350.0
    assert rate.total(10_000.0) == 0.0  # everything older than 2 windows is gone


def test_throttle_is_kafkas_excess_over_quota_times_window() -> None:
    rate = SampledRate(3, 1000)
    rate.record(4000.0, 0.0)  # 4000 over the 2 s minimum window: 2000/s against 1000/s
    assert rate.per_second(0.0) == 2000.0
    assert rate.throttle_ms(1000.0, 0.0, max_ms=10_000) == 2000  # (2000-1000)/1000 * 2 s
    assert rate.throttle_ms(1000.0, 0.0, max_ms=1000) == 1000  # capped
    assert rate.throttle_ms(3000.0, 0.0, max_ms=1000) == 0
    assert rate.throttle_ms(0.0, 0.0, max_ms=1000) == 1000


@pytest.mark.parametrize("samples", [2, 3, 11])
def test_a_client_obeying_throttles_averages_the_quota(samples: int) -> None:
    """A client sending as fast as it can and waiting out each throttle: over many sample
    cycles its average rate is the quota (bursts included), as with Kafka's defaults."""
    quota, chunk, speed = 1e6, 64e3, 50e6  # bytes/s, bytes per request, bytes/s unthrottled
    rate = SampledRate(samples, 1000)
    now, sent, horizon = 0.0, 0.0, 120_000.0
    while now < horizon:
        rate.record(chunk, now)
        sent += chunk
        now += chunk / speed * 1000 + rate.throttle_ms(quota, now, max_ms=1000)
    assert sent / (now / 1000) == pytest.approx(quota, rel=0.15)


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError):
        SampledRate(0, 1000)
    with pytest.raises(ValueError):
        SampledRate(2, 0)
