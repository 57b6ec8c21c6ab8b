"""Controller features end to end: real ZooKeeper, 3-4 broker processes, real clients."""

from __future__ import annotations

import json
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kio.schema.alter_partition_reassignments.v0 import request as alter
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0 import request as listing
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from tests.controller.support import (
    FAST,
    controller_id,
    controller_request,
    has_log,
    produce_all,
    producer,
    read_all,
    state,
    wait_for_state,
    write_topic,
)
from tests.harness import wait_until
from tests.harness.zk import read_json, zk_client


def test_controller_kill_9_elects_successor_with_next_epoch(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **FAST)
    with zk_client(cluster.zookeeper_connect) as zk:
        first = wait_until(lambda: controller_id(zk) is not None, 30, "a controller")
        old = controller_id(zk)
        assert first and old is not None
        old_epoch = int(zk.get("/controller_epoch")[0])
        cluster.brokers[old].kill()
        wait_until(lambda: controller_id(zk) not in (None, old), 30, "a new controller")
        assert int(zk.get("/controller_epoch")[0]) == old_epoch + 1
        survivors = ",".join(b.bootstrap for b in cluster.brokers if b.running)
        admin = AdminClient({"bootstrap.servers": survivors})
        admin.create_topics([NewTopic("after", 2, 2)])["after"].result(60)
        for p in range(2):
            wait_for_state(zk, "after", p, "a live leader", lambda s: s["leader"] not in (-1, old))
        produce_all(survivors, "after", [b"x%d" % i for i in range(20)], partition=1)
        assert len(read_all(survivors, "after", partitions=2)) == 20


def _reassign(cluster: Any, zk: Any, topic: str, partition: int, replicas: list[int] | None) -> Any:
    body = alter.AlterPartitionReassignmentsRequest(
        timeout=i32Timedelta.parse(__import__("datetime").timedelta(seconds=30)),
        topics=(alter.ReassignableTopic(name=TopicName(topic), partitions=(
            alter.ReassignablePartition(
                partition_index=i32(partition),
                replicas=None if replicas is None else tuple(BrokerId(r) for r in replicas),
            ),
        )),),
    )
    return controller_request(cluster, zk, body)


def _ongoing(cluster: Any, zk: Any) -> Any:
    return controller_request(cluster, zk, listing.ListPartitionReassignmentsRequest(topics=None))


def test_reassignment_copies_data_to_new_replicas_before_old_ones_drop(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(4, **FAST)
    with zk_client(cluster.zookeeper_connect) as zk:
        write_topic(zk, "moved", {0: [0, 1]})
        wait_for_state(zk, "moved", 0, "ISR [0, 1]", lambda s: sorted(s["isr"]) == [0, 1])
        values = [b"value-%d" % i for i in range(300)]
        produce_all(cluster.bootstrap, "moved", values)
        response = _reassign(cluster, zk, "moved", 0, [2, 3])
        assert response.error_code == ErrorCode.none, response
        assert response.responses[0].partitions[0].error_code == ErrorCode.none, response
        wait_until(
            lambda: read_json(zk, "/brokers/topics/moved")["partitions"]["0"] == [2, 3],
            60, "reassignment of moved-0 to [2, 3] completing",
        )
        topic = read_json(zk, "/brokers/topics/moved")
        assert topic["adding_replicas"] == {} and topic["removing_replicas"] == {}
        final = state(zk, "moved", 0)
        assert final is not None and final["leader"] in (2, 3)
        assert sorted(final["isr"]) == [2, 3]
        assert _ongoing(cluster, zk).topics == ()
        cluster.brokers[0].stop()
        cluster.brokers[1].stop()
        new_replicas = ",".join(b.bootstrap for b in cluster.brokers[2:])
        assert read_all(new_replicas, "moved") == values


def test_old_replicas_delete_their_logs_after_reassignment(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **FAST)
    with zk_client(cluster.zookeeper_connect) as zk:
        write_topic(zk, "away", {0: [0]})
        wait_for_state(zk, "away", 0, "leader 0", lambda s: s["leader"] == 0)
        produce_all(cluster.bootstrap, "away", [b"a", b"b"])
        zk.create("/admin/reassign_partitions",
                  b'{"version":1,"partitions":[{"topic":"away","partition":0,"replicas":[1]}]}')
        wait_until(lambda: zk.exists("/admin/reassign_partitions") is None, 60,
                   "/admin/reassign_partitions deleted when done")
        assert read_json(zk, "/brokers/topics/away")["partitions"]["0"] == [1]
        wait_until(lambda: not has_log(cluster.brokers[0].data_dir, "away", 0), 15,
                   "broker 0 deleting its log of away-0")


def test_reassignment_through_znode_completes_and_cancel_reverts(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **FAST)
    with zk_client(cluster.zookeeper_connect) as zk:
        write_topic(zk, "zk-moved", {0: [0, 1]})
        wait_for_state(zk, "zk-moved", 0, "ISR [0, 1]", lambda s: sorted(s["isr"]) == [0, 1])
        produce_all(cluster.bootstrap, "zk-moved", [b"v%d" % i for i in range(50)])
        zk.create("/admin/reassign_partitions", b'{"version":1,"partitions":'
                  b'[{"topic":"zk-moved","partition":0,"replicas":[2,1]}]}')
        wait_until(lambda: zk.exists("/admin/reassign_partitions") is None, 60,
                   "/admin/reassign_partitions deleted when done")
        assert read_json(zk, "/brokers/topics/zk-moved")["partitions"]["0"] == [2, 1]
        assert sorted(state(zk, "zk-moved", 0)["isr"]) == [1, 2]  # type: ignore[index]
        # Cancelling with nothing in flight is Kafka's NO_REASSIGNMENT_IN_PROGRESS.
        response = _reassign(cluster, zk, "zk-moved", 0, None)
        assert response.responses[0].partitions[0].error_code == \
            ErrorCode.no_reassignment_in_progress
        # A reassignment to a broker that is not alive is refused.
        response = _reassign(cluster, zk, "zk-moved", 0, [7])
        assert response.responses[0].partitions[0].error_code == \
            ErrorCode.invalid_replica_assignment


def test_partition_increase_under_load_gets_leaders_and_traffic(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **FAST)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("growing", 2, 2)])["growing"].result(60)
    errors: list[Any] = []
    delivered: dict[int, int] = {}
    stop = threading.Event()

    def on_delivery(err: Any, message: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered[message.partition()] = delivered.get(message.partition(), 0) + 1

    p = producer(cluster.bootstrap)

    def load() -> None:
        i = 0
        while not stop.is_set():
            p.produce("growing", b"m%d" % i, on_delivery=on_delivery)
            p.poll(0.005)
            i += 1

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    try:
        wait_until(lambda: sum(delivered.values()) > 50, 30, "traffic before the increase")
        admin.create_partitions([NewPartitions("growing", 6)])["growing"].result(60)
        with zk_client(cluster.zookeeper_connect) as zk:
            for partition in range(6):
                wait_for_state(zk, "growing", partition, "a leader", lambda s: s["leader"] >= 0)
        wait_until(lambda: all(delivered.get(q, 0) > 0 for q in range(6)), 60,
                   "messages delivered to all six partitions")
    finally:
        stop.set()
        thread.join(10)
        assert p.flush(60) == 0
    assert not errors, f"failed deliveries: {errors[:3]}"


def _preferred_leaders_restored(zk: Any, topic: str, partitions: int) -> bool:
    assignment = read_json(zk, f"/brokers/topics/{topic}")["partitions"]
    for p in range(partitions):
        current = state(zk, topic, p)
        if current is None or current["leader"] != assignment[str(p)][0]:
            return False
    return True


def _bounce_broker_zero(cluster: Any, zk: Any, topic: str, *, auto: bool = False) -> None:
    """Stop broker 0 (its leadership moves), bring it back and wait until it is in sync."""
    cluster.brokers[0].stop()
    wait_for_state(zk, topic, 0, "leadership moved off broker 0", lambda s: s["leader"] != 0)
    cluster.restart(0)
    for p in range(3):
        wait_for_state(zk, topic, p, "broker 0 back in the ISR", lambda s: 0 in s["isr"], 60)
    if not auto:  # with auto rebalance on, the controller may already have moved it back
        assert not _preferred_leaders_restored(zk, topic, 3)


def test_preferred_leader_election_via_api_after_broker_returns(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **FAST)
    with zk_client(cluster.zookeeper_connect) as zk:
        write_topic(zk, "pref", {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]})
        for p in range(3):
            wait_for_state(zk, "pref", p, "full ISR", lambda s: len(s["isr"]) == 3)
        _bounce_broker_zero(cluster, zk, "pref")
        from confluent_kafka import ElectionType

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        partitions = [KafkaTopicPartition("pref", p) for p in range(3)]
        results = admin.elect_leaders(ElectionType.PREFERRED, partitions).result(60)
        codes = {tp.partition: (err.code() if err else 0) for tp, err in results.items()}
        assert codes[0] == 0, codes  # elected
        assert _preferred_leaders_restored(zk, "pref", 3)


def test_auto_leader_rebalance_moves_leadership_back(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **{**FAST, "auto_leader_rebalance_enable": "true",
                                    "leader_imbalance_check_interval_seconds": "1"})
    with zk_client(cluster.zookeeper_connect) as zk:
        write_topic(zk, "auto", {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]})
        for p in range(3):
            wait_for_state(zk, "auto", p, "full ISR", lambda s: len(s["isr"]) == 3)
        _bounce_broker_zero(cluster, zk, "auto", auto=True)
        wait_until(lambda: _preferred_leaders_restored(zk, "auto", 3), 30,
                   "auto rebalance restoring preferred leaders")


def test_controlled_shutdown_of_leader_loses_no_produce(cluster_factory: Any) -> None:
    cluster = cluster_factory(3, **FAST)
    with zk_client(cluster.zookeeper_connect) as zk:
        write_topic(zk, "rolling", {0: [0, 1, 2]})
        wait_for_state(zk, "rolling", 0, "full ISR", lambda s: len(s["isr"]) == 3)
        errors: list[Any] = []
        acked: list[bytes] = []
        stop = threading.Event()
        p = producer(cluster.bootstrap, **{"message.timeout.ms": 120000})

        def on_delivery(err: Any, message: Any) -> None:
            (errors.append(err) if err is not None else acked.append(message.value()))

        def load() -> None:
            i = 0
            while not stop.is_set():
                p.produce("rolling", b"r%d" % i, partition=0, on_delivery=on_delivery)
                p.poll(0.002)
                i += 1

        thread = threading.Thread(target=load, daemon=True)
        thread.start()
        try:
            wait_until(lambda: len(acked) > 100, 30, "traffic before the shutdown")
            started = time.monotonic()
            assert cluster.brokers[0].stop() == 0
            stopped_in = time.monotonic() - started
            after = state(zk, "rolling", 0)
            assert after is not None and after["leader"] in (1, 2) and 0 not in after["isr"]
            mark = len(acked)
            wait_until(lambda: len(acked) > mark + 100, 30, "traffic on the new leader")
        finally:
            stop.set()
            thread.join(10)
            assert p.flush(60) == 0
        assert not errors, f"failed deliveries: {errors[:3]}"
        assert stopped_in < 20, f"controlled shutdown took {stopped_in:.1f}s"
        log_text = cluster.brokers[0].log_tail(400)
        assert "controlled shutdown of broker 0 succeeded" in log_text
        survivors = ",".join(b.bootstrap for b in cluster.brokers[1:])
        got = read_all(survivors, "rolling")
        assert set(acked) <= set(got), "acknowledged messages missing after the shutdown"


def test_topic_deletion_removes_every_replica_incl_broker_down_at_the_time(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(3, **FAST)
    with zk_client(cluster.zookeeper_connect) as zk:
        write_topic(zk, "doomed", {0: [0, 1, 2]})
        wait_for_state(zk, "doomed", 0, "full ISR", lambda s: len(s["isr"]) == 3)
        produce_all(cluster.bootstrap, "doomed", [b"d%d" % i for i in range(20)])
        for broker in cluster.brokers:
            wait_until(partial(has_log, broker.data_dir, "doomed", 0), 30,
                       f"{broker.name} holding a replica")
        # Kill a replica that is not the controller: right after a controller dies, clients
        # (librdkafka included) keep addressing it until its session expires — Kafka's
        # ZooKeeper mode has the same window, and it is not what this test is about.
        controller = json.loads(zk.get("/controller")[0])["brokerid"]
        down = next(i for i in range(3) if i != controller)
        cluster.brokers[down].kill()
        up = [b for i, b in enumerate(cluster.brokers) if i != down]
        admin = AdminClient({"bootstrap.servers": ",".join(b.bootstrap for b in up)})
        admin.delete_topics(["doomed"], operation_timeout=30)["doomed"].result(60)
        for broker in up:
            wait_until(partial(_no_log, broker.data_dir, "doomed", 0), 30,
                       f"{broker.name} deleting its log")
        assert has_log(cluster.brokers[down].data_dir, "doomed", 0)
        cluster.restart(down)
        wait_until(lambda: not has_log(cluster.brokers[down].data_dir, "doomed", 0), 30,
                   "the returning broker deleting its stray log")


def _no_log(broker_dir: Path, topic: str, partition: int) -> bool:
    return not has_log(broker_dir, topic, partition)
