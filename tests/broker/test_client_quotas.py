"""AlterClientQuotas and DescribeClientQuotas against a real broker and ZooKeeper: Kafka's
znode layout and change notifications, validation, filters, and live application."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from odradek.local_cluster import ZooKeeperProcess
from odradek.quota import QuotaType
from tests.harness.zk import zk_client

from .conftest import wait_until_true
from .inprocess import InProcessBroker, broker_config
from .quota_wire import alter_quotas, describe_quotas

EXACT, DEFAULT, SPECIFIED = 0, 1, 2


@pytest.fixture
def broker(zookeeper: ZooKeeperProcess, tmp_path: Any) -> Iterator[InProcessBroker]:
    """A broker of its own: quotas are cluster-wide state."""
    connect = f"{zookeeper.connect}/quota-{uuid.uuid4().hex[:10]}"
    started = InProcessBroker(broker_config(connect, tmp_path / "logs"))
    started.start()
    yield started
    started.stop()


def _zk_connect(broker: InProcessBroker) -> str:
    return str(broker.config["zookeeper.connect"])


def test_alter_stores_kafkas_znodes_and_notifications(broker: InProcessBroker) -> None:
    assert alter_quotas(broker.port, {"client-id": "app 1"},
                        {"producer_byte_rate": 1048576.0}) == ("none", None)
    assert alter_quotas(broker.port, {"user": "alice", "client-id": None},
                        {"consumer_byte_rate": 2048.0, "request_percentage": 12.5})[0] == "none"
    with zk_client(_zk_connect(broker)) as zk:
        data, _ = zk.get("/config/clients/app%201")
        assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": "1048576"}}
        data, _ = zk.get("/config/users/alice/clients/<default>")
        assert json.loads(data)["config"] == {"consumer_byte_rate": "2048",
                                              "request_percentage": "12.5"}
        changes = sorted(zk.get_children("/config/changes"))
        paths = [json.loads(zk.get(f"/config/changes/{c}")[0])["entity_path"] for c in changes]
        assert paths[-2:] == ["clients/app%201", "users/alice/clients/<default>"]
    quotas = broker.broker.quotas  # type: ignore[union-attr]
    assert quotas.quota(QuotaType.PRODUCE, "bob", "app 1") == 1048576.0
    assert quotas.quota(QuotaType.FETCH, "alice", "any") == 2048.0
    assert quotas.quota(QuotaType.REQUEST, "alice", "x") == 12.5
    assert quotas.quota(QuotaType.PRODUCE, "alice", "x") is None


def test_describe_filters_as_kafka_does(broker: InProcessBroker) -> None:
    for entity, value in (({"client-id": "a"}, 1.0), ({"client-id": None}, 2.0),
                          ({"user": "u"}, 3.0), ({"user": "u", "client-id": "a"}, 4.0)):
        assert alter_quotas(broker.port, entity, {"producer_byte_rate": value})[0] == "none"
    error, everything = describe_quotas(broker.port, [])
    assert error == "none" and len(everything) == 4
    assert describe_quotas(broker.port, [("client-id", EXACT, "a")], strict=True)[1] == [
        ({"client-id": "a"}, {"producer_byte_rate": 1.0})]
    loose = describe_quotas(broker.port, [("client-id", EXACT, "a")])[1]
    assert {v["producer_byte_rate"] for _, v in loose} == {1.0, 4.0}
    assert describe_quotas(broker.port, [("client-id", DEFAULT, None)], strict=True)[1] == [
        ({"client-id": None}, {"producer_byte_rate": 2.0})]
    named = describe_quotas(broker.port, [("client-id", SPECIFIED, None)], strict=True)[1]
    assert named == [({"client-id": "a"}, {"producer_byte_rate": 1.0})]
    assert describe_quotas(broker.port, [("user", EXACT, "u"), ("client-id", SPECIFIED, None)],
                           strict=True)[1] == [
        ({"user": "u", "client-id": "a"}, {"producer_byte_rate": 4.0})]
    assert describe_quotas(broker.port, [("ip", EXACT, "1.2.3.4")])[0] == "invalid_request"
    assert describe_quotas(broker.port, [("user", EXACT, None)])[0] == "invalid_request"


def test_bad_alters_are_refused_and_store_nothing(broker: InProcessBroker) -> None:
    for entity, ops in (
        ({"client-id": "c"}, {"producer_byte_rate": 1.5}),
        ({"client-id": "c"}, {"producer_byte_rate": -1.0}),
        ({"client-id": "c"}, {"no_such_quota": 1.0}),
        ({"ip": "1.2.3.4"}, {"connection_creation_rate": 1.0}),
        ({}, {"producer_byte_rate": 1.0}),
    ):
        assert alter_quotas(broker.port, entity, ops)[0] == "invalid_request", (entity, ops)
    assert alter_quotas(broker.port, {"client-id": "c"}, {"producer_byte_rate": 5.0},
                        validate_only=True)[0] == "none"
    assert describe_quotas(broker.port, [])[1] == []


def test_removal_and_changes_written_by_others_apply_live(broker: InProcessBroker) -> None:
    quotas = broker.broker.quotas  # type: ignore[union-attr]
    assert alter_quotas(broker.port, {"client-id": "c"}, {"producer_byte_rate": 10.0})[0] == "none"
    assert quotas.quota(QuotaType.PRODUCE, "u", "c") == 10.0
    # A write straight to ZooKeeper plus a notification, as Kafka's own tools in ZK mode do.
    with zk_client(_zk_connect(broker)) as zk:
        zk.set("/config/clients/c", b'{"version":1,"config":{"producer_byte_rate":"20"}}')
        zk.create("/config/changes/config_change_",
                  b'{"version":2,"entity_path":"clients/c"}', sequence=True)
    wait_until_true(lambda: quotas.quota(QuotaType.PRODUCE, "u", "c") == 20.0, 10,
                    "the quota written to ZooKeeper applied")
    assert alter_quotas(broker.port, {"client-id": "c"}, {"producer_byte_rate": None})[0] == "none"
    assert quotas.quota(QuotaType.PRODUCE, "u", "c") is None
    assert not quotas.active
    assert describe_quotas(broker.port, [])[1] == []
