"""AdminClient against both targets: configs, partitions, records, log dirs, cluster."""

from __future__ import annotations

import pytest

from odradek.client import (
    AdminClient,
    BrokerResponseError,
    KafkaClientError,
    NewTopic,
    Producer,
    TopicPartition,
)
from odradek.client.admin import RESOURCE_TOPIC
from odradek.local_cluster import wait_until

from .conftest import Target


def test_admin_operations(target: Target, topic_name: str) -> None:
    admin = AdminClient(target.bootstrap)
    try:
        cluster = admin.describe_cluster()
        assert cluster.brokers and cluster.controller_id in cluster.brokers
        admin.create_topics([NewTopic(topic_name, 2, 1, {"retention.ms": "123456"})])
        with pytest.raises(KafkaClientError, match="TOPIC_ALREADY_EXISTS"):
            admin.create_topics([NewTopic(topic_name, 2, 1)])
        assert len(admin.describe_topics([topic_name])[topic_name].partitions) == 2
        configs = admin.describe_configs(RESOURCE_TOPIC, topic_name)
        assert configs["retention.ms"].value == "123456"
        admin.incremental_alter_configs(RESOURCE_TOPIC, topic_name,
                                        [("retention.ms", "set", "654321")])
        # Config changes propagate through ZooKeeper: wait (bounded) until visible.
        wait_until(lambda: admin.describe_configs(RESOURCE_TOPIC, topic_name)[
            "retention.ms"].value == "654321", 15, "retention.ms=654321 visible")
        admin.create_partitions({topic_name: 4})
        assert len(admin.describe_topics([topic_name])[topic_name].partitions) == 4
        with Producer(target.bootstrap) as producer:
            producer.send(topic_name, [b"x"] * 10, partition=0)
        tp = TopicPartition(topic_name, 0)
        assert admin.delete_records({tp: 4}) == {tp: 4}
        assert admin.list_offsets({tp: -2})[tp].offset == 4
        dirs = admin.describe_log_dirs()
        assert any(tp in parts for d in dirs.values() for parts in d.values())
        admin.delete_topics([topic_name])
        assert topic_name not in admin.list_topics()
        with pytest.raises(BrokerResponseError):
            admin.describe_topics([topic_name])
    finally:
        admin.close()
