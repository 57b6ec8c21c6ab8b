"""DynamicBrokerConfig hands each component its section whole, and only when it changed."""

from __future__ import annotations

from typing import Any

from odradek.broker.reconfigure import (
    ConfigUpdate,
    DynamicBrokerConfig,
    SectionFollower,
    ThrottleRates,
)
from odradek.config import BrokerConfig
from odradek.config_sections import LogManagerConfig, ReplicationConfig
from odradek.replication.throttles import UNLIMITED, ReplicationQuotas


def _dynamic() -> tuple[DynamicBrokerConfig, dict[str, list[Any]]]:
    dynamic = DynamicBrokerConfig(BrokerConfig.from_properties({"broker.id": "1"}), 1)
    received: dict[str, list[Any]] = {"log": [], "replication": [], "updates": []}
    dynamic.add_listener(SectionFollower("log", received["log"].append))
    dynamic.add_listener(SectionFollower("replication", received["replication"].append))

    class Recorder:
        def reconfigure(self, update: ConfigUpdate) -> None:
            received["updates"].append(update)

    dynamic.add_listener(Recorder())
    return dynamic, received


def test_a_changed_section_is_handed_over_whole_and_the_others_are_not() -> None:
    dynamic, received = _dynamic()
    before = dynamic.sections
    changed = dynamic.update({"log.cleaner.dedupe.buffer.size": "4096"}, {})
    assert changed == frozenset({"log.cleaner.dedupe.buffer.size"})
    [log_section] = received["log"]
    assert isinstance(log_section, LogManagerConfig)
    assert log_section.cleaner_dedupe_buffer_size == 4096
    assert log_section is dynamic.sections.log
    assert received["replication"] == []
    [update] = received["updates"]
    assert update.previous is before and update.sections is dynamic.sections
    assert update.config is dynamic.current
    assert update.config["log.cleaner.dedupe.buffer.size"] == 4096


def test_the_broker_layer_beats_the_default_and_an_unchanged_update_is_silent() -> None:
    dynamic, received = _dynamic()
    dynamic.update({"num.replica.fetchers": "2"}, {"num.replica.fetchers": "4"})
    [replication] = received["replication"]
    assert isinstance(replication, ReplicationConfig)
    assert replication.num_replica_fetchers == 4
    assert dynamic.update({"num.replica.fetchers": "2"}, {"num.replica.fetchers": "4"}) == set()
    # Only the default changes, under the broker's own value: the effective config does not.
    assert dynamic.update({"num.replica.fetchers": "3"}, {"num.replica.fetchers": "4"}) == set()
    assert len(received["replication"]) == 1 and len(received["updates"]) == 1
    assert received["log"] == []


def test_the_replication_throttle_rates_change_live_and_fall_back_to_unlimited() -> None:
    dynamic = DynamicBrokerConfig(BrokerConfig.from_properties({"broker.id": "1"}), 1)
    throttles = ReplicationQuotas(11, 1)
    dynamic.add_listener(ThrottleRates(throttles))
    dynamic.update({"leader.replication.throttled.rate": "1000"},
                   {"follower.replication.throttled.rate": "2000"})
    assert (throttles.leader.bound, throttles.follower.bound) == (1000, 2000)
    dynamic.update({}, {"follower.replication.throttled.rate": "2000"})
    assert (throttles.leader.bound, throttles.follower.bound) == (UNLIMITED, 2000)
