"""Leader elections on the active controller: unclean ones counted apart from clean ones.

Kafka exports ``kafka_controller_ControllerStats_UncleanLeaderElectionsPerSec`` beside the
election rate; odradek's ``odradek_controller_unclean_leader_elections_total`` is its
counter. Three in-process brokers on a real ZooKeeper; the partition's two replicas live on
brokers 1 and 2, and broker 0 is the controller that counts.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.metrics import BrokerMetrics
from tests.broker.conftest import wait_until_true
from tests.broker.inprocess import InProcessBroker
from tests.harness.kafka import partition_state
from tests.harness.zk import zk_client

ELECTIONS = "odradek_controller_leader_elections_total"
UNCLEAN = "odradek_controller_unclean_leader_elections_total"


def _metrics(broker: InProcessBroker) -> BrokerMetrics:
    assert broker.broker is not None
    return broker.broker.metrics


def _produce(bootstrap: str, topic: str, count: int, acks: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks,
                         "enable.idempotence": False})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0


def test_unclean_election_is_counted_apart_from_clean_ones(
        start_broker: Callable[..., InProcessBroker], zk_connect: str,
        topic_name: str) -> None:
    fast = {"replica_lag_time_max_ms": "3000", "replica_fetch_wait_max_ms": "200"}
    controller = start_broker(0, **fast)
    wait_until_true(lambda: _metrics(controller).sample("odradek_controller_active") == 1, 30,
                    "broker 0 to be the controller")
    brokers = {b: start_broker(b, **fast) for b in (1, 2)}
    admin = AdminClient({"bootstrap.servers": controller.bootstrap})
    admin.create_topics([NewTopic(topic_name, 1, replica_assignment=[[1, 2]], config={
        "unclean.leader.election.enable": "true"})])[topic_name].result(30)
    metrics = _metrics(controller)
    with zk_client(zk_connect) as zk:
        def state() -> dict[str, object]:
            found = partition_state(zk, topic_name)
            assert found is not None
            return found

        wait_until_true(lambda: partition_state(zk, topic_name) is not None
                        and state()["isr"] == [1, 2], 30, "both replicas in sync")
        _produce(controller.bootstrap, topic_name, 10, "all")

        # The follower stops: the ISR shrinks to the leader, which takes more writes.
        brokers[2].stop()
        wait_until_true(lambda: state()["isr"] == [1], 30, "the ISR to shrink to broker 1")
        _produce(brokers[1].bootstrap, topic_name, 5, "1")
        elections = metrics.sample(ELECTIONS)
        assert elections is not None and elections >= 1  # creation and the ISR change
        assert metrics.sample(UNCLEAN) == 0

        # The ISR's only member dies while the other replica is out of sync: offline...
        brokers[1].stop()
        wait_until_true(lambda: state()["leader"] == -1, 30, "the partition to go offline")
        assert metrics.sample(UNCLEAN) == 0
        # ...until the out-of-sync replica returns and is elected, uncleanly.
        start_broker(2, **fast)
        wait_until_true(lambda: state()["leader"] == 2, 30, "broker 2 to lead, uncleanly")
        assert state()["isr"] == [2]
        wait_until_true(lambda: metrics.sample(UNCLEAN) == 1, 10, "the unclean election")
        total = metrics.sample(ELECTIONS)
        assert total is not None and total >= elections + 2  # offline, then the new leader
