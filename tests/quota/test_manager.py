"""The quota manager on a fake clock: sensors shared as Kafka shares them, live changes,
request quotas, fetch caps, expiry and the numbers the metrics read."""

from __future__ import annotations

import pytest

from odradek.quota import QuotaEntity, QuotaManager, QuotaType
from odradek.quota.entities import DEFAULT

PRODUCE, FETCH, REQUEST = QuotaType.PRODUCE, QuotaType.FETCH, QuotaType.REQUEST


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_without_quotas_nothing_is_recorded(clock: Clock) -> None:
    manager = QuotaManager(11, 1, clock)
    assert manager.record(PRODUCE, "ANONYMOUS", "app", 1e12) == 0
    assert manager.quota_states() == []


def test_a_client_id_quota_throttles_that_client_only(clock: Clock) -> None:
    manager = QuotaManager(11, 1, clock)
    manager.configure({QuotaEntity(None, "slow"): {"producer_byte_rate": 1000.0}})
    assert manager.record(PRODUCE, "ANONYMOUS", "slow", 10_000.0) == 0  # 1000/s over 10 s
    assert manager.record(PRODUCE, "ANONYMOUS", "slow", 10_000.0) == 1000  # capped: 1 window
    assert manager.record(PRODUCE, "ANONYMOUS", "fast", 1e9) == 0
    assert manager.record(FETCH, "ANONYMOUS", "slow", 1e9) == 0  # only the produce quota
    rows = {(s.kind, s.user, s.client_id): s for s in manager.quota_states()}
    assert rows[(PRODUCE, "", "slow")].quota == 1000.0
    assert rows[(PRODUCE, "", "slow")].rate == pytest.approx(2000.0)
    assert rows[(PRODUCE, "", "fast")].quota is None


def test_user_quota_is_shared_by_its_client_ids_and_default_is_per_client(clock: Clock) -> None:
    manager = QuotaManager(2, 1, clock)
    manager.configure({
        QuotaEntity("alice"): {"producer_byte_rate": 100.0},
        QuotaEntity(None, DEFAULT): {"producer_byte_rate": 100.0},
    })
    assert manager.record(PRODUCE, "alice", "a", 100.0) == 0
    assert manager.record(PRODUCE, "alice", "b", 100.0) > 0  # same sensor (alice, "")
    assert manager.record(PRODUCE, "bob", "a", 100.0) == 0  # clients/<default>: per client
    assert manager.record(PRODUCE, "bob", "b", 100.0) == 0
    assert manager.record(PRODUCE, "carol", "b", 100.0) > 0  # ("", "b") shared by users
    tags = {(s.user, s.client_id) for s in manager.quota_states()}
    assert tags == {("alice", ""), ("", "a"), ("", "b")}


def test_changes_apply_to_running_sensors_and_removal_lifts_the_throttle(clock: Clock) -> None:
    manager = QuotaManager(2, 1, clock)
    entity = QuotaEntity(None, "app")
    manager.configure({entity: {"producer_byte_rate": 100.0}})
    assert manager.record(PRODUCE, "u", "app", 500.0) > 0
    manager.configure({entity: {"producer_byte_rate": 1000.0}})
    assert manager.record(PRODUCE, "u", "app", 0.0) == 0  # the same rate, a higher quota
    manager.configure({entity: {"producer_byte_rate": 10.0}})
    assert manager.record(PRODUCE, "u", "app", 0.0) > 0
    manager.configure({})
    assert manager.record(PRODUCE, "u", "app", 1e9) == 0


def test_request_percentage(clock: Clock) -> None:
    """Request time is recorded in percent-seconds: 10 % of a thread is 0.1 s per second."""
    manager = QuotaManager(2, 1, clock)
    manager.configure({QuotaEntity(DEFAULT): {"request_percentage": 10.0}})
    for _ in range(9):
        assert manager.record(REQUEST, "u", "c", 0.01 * 100) == 0  # 10 ms each
    clock.now = 500.0
    assert manager.record(REQUEST, "u", "c", 0.5 * 100) == 1000  # 0.59 s in 1 s: capped
    assert manager.quota(REQUEST, "u", "other") == 10.0


def test_fetch_unrecord_and_window_cap(clock: Clock) -> None:
    manager = QuotaManager(3, 1, clock)
    manager.configure({QuotaEntity(None, "c"): {"consumer_byte_rate": 1000.0}})
    assert manager.max_bytes_in_window(FETCH, "u", "c") == 2000
    assert manager.max_bytes_in_window(FETCH, "u", "d") is None
    assert manager.record(FETCH, "u", "c", 4000.0) == 1000  # 2000/s against 1000/s: capped
    manager.unrecord(FETCH, "u", "c", 4000.0)
    assert manager.record(FETCH, "u", "c", 0.0) == 0
    (state,) = manager.quota_states()
    assert (state.throttle_seconds_total, state.throttled_total) == (1.0, 1)


def test_idle_sensors_expire_after_an_hour(clock: Clock) -> None:
    manager = QuotaManager(2, 1, clock)
    manager.configure({QuotaEntity(None, DEFAULT): {"producer_byte_rate": 1e6}})
    for i in range(100):
        manager.record(PRODUCE, "u", f"c{i}", 1.0)
    assert len(manager.quota_states()) == 100
    clock.now = 3_600_001.0 + 1000
    manager.record(PRODUCE, "u", "c0", 1.0)
    assert [s.client_id for s in manager.quota_states()] == ["c0"]
