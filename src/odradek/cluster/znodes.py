"""Kafka's ZooKeeper layout: every path we touch and the exact JSON stored there.

This module is the single place that knows znode formats, so tools that read Kafka's
ZooKeeper data (``zookeeper-shell``, Kafka's own admin tools in ZK mode, monitoring that
scrapes ZooKeeper) understand what odradek writes. JSON is compact (no spaces), as
Kafka's Jackson encoder writes it. Formats, as of Kafka 3.x in ZK mode:

``/cluster/id``                 ``{"version":"1","id":"<base64 uuid>"}`` (version is a string)
``/brokers/ids/<id>``           ephemeral, version 5::

    {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
     "endpoints":["PLAINTEXT://host:9092"],"jmx_port":-1,"port":9092,"host":"host",
     "version":5,"timestamp":"<ms>","rack":"r1"}      (rack only when set)

``/controller``                 ephemeral ``{"version":2,"brokerid":N,"timestamp":"<ms>",
                                "kraftControllerEpoch":-1}`` (3.4+; version 1 lacks the last key)
``/controller_epoch``           the epoch as decimal text, e.g. ``3``
``/brokers/topics/<t>``         ``{"version":3,"partitions":{"0":[1,2]},"topic_id":"<b64>",
                                "adding_replicas":{},"removing_replicas":{}}``
``/brokers/topics/<t>/partitions/<p>/state``
                                ``{"controller_epoch":E,"leader":L,"version":1,
                                "leader_epoch":N,"isr":[...]}``
``/config/topics/<t>``          ``{"version":1,"config":{"retention.ms":"1000"}}``
``/config/brokers/<id>``        the same, dynamic configs of one broker; ``<default>``: all
``/config/changes/config_change_<seq>``  ``{"version":2,"entity_path":"topics/<t>"}`` (or
                                ``brokers/<id>``, ``brokers/<default>``)
``/admin/delete_topics/<t>``    no data; its existence is the request
``/admin/reassign_partitions``  ``{"version":1,"partitions":[{"topic":"t","partition":0,
                                "replicas":[1,2]}]}`` (Kafka's tools may add ``log_dirs``)
``/admin/preferred_replica_election``  ``{"version":1,"partitions":[{"topic":"t","partition":0}]}``
``/latest_producer_id_block``   ``{"version":1,"broker":N,"block_start":"0","block_end":"999"}``
``/isr_change_notification/isr_change_<seq>``  ``{"version":1,"partitions":[{"topic":"t",
                                "partition":0}]}`` (a leader changed these partitions' ISR)
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from odradek.clock import wall_ms
from odradek.cluster.model import BrokerInfo, Endpoint, PartitionRegistration

CLUSTER_ID = "/cluster/id"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"

# The persistent parents every Kafka broker creates at startup (KafkaZkClient.createTopLevelPaths).
PERSISTENT_PATHS = (
    "/consumers",
    BROKER_IDS,
    BROKER_TOPICS,
    "/brokers/seqid",
    CONFIG_CHANGES,
    CONFIG_TOPICS,
    "/config/clients",
    "/config/users",
    CONFIG_BROKERS,
    "/admin/delete_topics",
    ISR_CHANGE_NOTIFICATION,
    PRODUCER_ID_BLOCK,
    "/log_dir_event_notification",
)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def broker_config_path(entity: str) -> str:
    """``entity`` is a broker id or ``<default>`` (the cluster-wide default)."""
    return f"{CONFIG_BROKERS}/{entity}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _loads(data: bytes | None) -> Any:
    if not data:
        return None
    return json.loads(data.decode())


def timestamp_now() -> str:
    """Kafka's znode ``timestamp`` field: wall-clock milliseconds, as a string."""
    return str(wall_ms())


# -- ids ---------------------------------------------------------------------------------


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding (22 chars)."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def uuid_from_base64(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def random_kafka_uuid() -> uuid.UUID:
    """Kafka's ``Uuid.randomUuid``: never the zero/metadata ids, never starting with ``-``
    (a leading dash would read as an option on command lines)."""
    while True:
        value = uuid.uuid4()
        if value.int > 1 and not uuid_to_base64(value).startswith("-"):
            return value


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(_loads(data)["id"])


# -- brokers ------------------------------------------------------------------------------


def encode_broker(info: BrokerInfo, *, jmx_port: int = -1, timestamp: str | None = None) -> bytes:
    plaintext = next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), None)
    obj: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {e.listener: e.security_protocol for e in info.endpoints},
        "endpoints": [e.connection_string for e in info.endpoints],
        "jmx_port": jmx_port,
        "port": plaintext.port if plaintext else -1,
        "host": plaintext.host if plaintext else None,
        "version": 5,
        "timestamp": timestamp or timestamp_now(),
    }
    if info.rack is not None:
        obj["rack"] = info.rack
    return _dumps(obj)


_ENDPOINT = re.compile(r"^(?P<listener>[^:]+)://\[?(?P<host>[^\]]*)\]?:(?P<port>-?\d+)$")


def parse_endpoint(text: str, protocol_map: Mapping[str, str] | None = None) -> Endpoint:
    match = _ENDPOINT.match(text)
    if match is None:
        raise ValueError(f"unparseable endpoint {text!r}")
    listener = match["listener"]
    protocol = (protocol_map or {}).get(listener, listener)
    return Endpoint(listener, match["host"], int(match["port"]), protocol)


def decode_broker(broker_id: int, data: bytes) -> BrokerInfo:
    obj = _loads(data)
    protocol_map = obj.get("listener_security_protocol_map") or {}
    if int(obj.get("version", 1)) <= 1:
        endpoints: tuple[Endpoint, ...] = (Endpoint("PLAINTEXT", obj["host"], int(obj["port"])),)
    else:
        endpoints = tuple(parse_endpoint(e, protocol_map) for e in obj.get("endpoints", []))
    plaintext = next((e for e in endpoints if e.security_protocol == "PLAINTEXT"), None)
    first = plaintext or (endpoints[0] if endpoints else None)
    return BrokerInfo(
        id=broker_id,
        host=first.host if first else "",
        port=first.port if first else -1,
        rack=obj.get("rack"),
        endpoints=endpoints,
    )


# -- controller ---------------------------------------------------------------------------


def encode_controller(broker_id: int, *, timestamp: str | None = None) -> bytes:
    return _dumps(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": timestamp or timestamp_now(),
            "kraftControllerEpoch": -1,
        }
    )


def decode_controller(data: bytes) -> int:
    return int(_loads(data)["brokerid"])


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode())


# -- topics -------------------------------------------------------------------------------


def encode_topic_assignment(
    topic_id: uuid.UUID,
    assignment: Mapping[int, Sequence[int]],
    adding: Mapping[int, Sequence[int]] | None = None,
    removing: Mapping[int, Sequence[int]] | None = None,
) -> bytes:
    """``adding``/``removing`` hold the replicas of ongoing reassignments (only non-empty
    entries are written, as Kafka does)."""
    return _dumps(
        {
            "version": 3,
            "partitions": {str(p): list(r) for p, r in sorted(assignment.items())},
            "topic_id": uuid_to_base64(topic_id),
            "adding_replicas": {str(p): list(r) for p, r in sorted((adding or {}).items()) if r},
            "removing_replicas": {
                str(p): list(r) for p, r in sorted((removing or {}).items()) if r
            },
        }
    )


def decode_ongoing_reassignment(
    data: bytes,
) -> tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]]:
    """``(adding_replicas, removing_replicas)`` of a topic znode, by partition."""
    obj = _loads(data) or {}

    def read(key: str) -> dict[int, tuple[int, ...]]:
        raw = obj.get(key) or {}
        return {int(p): tuple(int(b) for b in r) for p, r in raw.items() if r}

    return read("adding_replicas"), read("removing_replicas")


def decode_topic_assignment(data: bytes) -> tuple[uuid.UUID | None, dict[int, tuple[int, ...]]]:
    """``(topic_id, {partition: replicas})``; the id is None for pre-2.8 znodes."""
    obj = _loads(data) or {}
    raw_id = obj.get("topic_id")
    partitions = {int(p): tuple(int(b) for b in r) for p, r in obj.get("partitions", {}).items()}
    return (uuid_from_base64(raw_id) if raw_id else None), partitions


def encode_partition_state(
    leader: int, leader_epoch: int, isr: Sequence[int], controller_epoch: int
) -> bytes:
    return _dumps(
        {
            "controller_epoch": controller_epoch,
            "leader": leader,
            "version": 1,
            "leader_epoch": leader_epoch,
            "isr": list(isr),
        }
    )


def decode_partition_state(data: bytes, replicas: Sequence[int],
                           zk_version: int) -> PartitionRegistration:
    obj = _loads(data)
    return PartitionRegistration(
        leader=int(obj["leader"]),
        leader_epoch=int(obj["leader_epoch"]),
        isr=tuple(int(b) for b in obj["isr"]),
        replicas=tuple(replicas),
        controller_epoch=int(obj["controller_epoch"]),
        zk_version=zk_version,
    )


# -- configs ------------------------------------------------------------------------------


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    return _dumps({"version": 1, "config": {k: str(v) for k, v in config.items()}})


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    obj = _loads(data) or {}
    return {str(k): str(v) for k, v in (obj.get("config") or {}).items()}


def encode_config_change(entity_path: str) -> bytes:
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    """The changed entity, e.g. ``topics/orders``. Version 1 notifications named only the
    topic (``entity_name``) and are read as topic changes."""
    obj = _loads(data) or {}
    if "entity_path" in obj:
        return str(obj["entity_path"])
    return f"{obj.get('entity_type', 'topics')}/{obj.get('entity_name', '')}"


# -- producer ids -------------------------------------------------------------------------


def encode_producer_id_block(broker_id: int, block: range) -> bytes:
    return _dumps(
        {
            "version": 1,
            "broker": broker_id,
            "block_start": str(block.start),
            "block_end": str(block.stop - 1),
        }
    )


def decode_producer_id_block(data: bytes) -> range:
    obj = _loads(data)
    return range(int(obj["block_start"]), int(obj["block_end"]) + 1)


# -- ISR change notifications ---------------------------------------------------------------

ISR_CHANGE_PREFIX = "isr_change_"


def encode_isr_change_notification(partitions: Sequence[tuple[str, int]]) -> bytes:
    """``/isr_change_notification/isr_change_<seq>``: the partitions whose ISR a leader
    changed, ``{"version":1,"partitions":[{"topic":"t","partition":0}]}``."""
    return _dumps(
        {
            "version": 1,
            "partitions": [{"topic": topic, "partition": p} for topic, p in partitions],
        }
    )


# -- admin requests and notifications ---------------------------------------------------


def encode_reassignment(targets: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": list(r)}
                for (t, p), r in sorted(targets.items())
            ],
        }
    )


def decode_reassignment(data: bytes | None) -> dict[tuple[str, int], tuple[int, ...]]:
    """``{(topic, partition): target replicas}`` of ``/admin/reassign_partitions``."""
    obj = _loads(data) or {}
    return {
        (str(e["topic"]), int(e["partition"])): tuple(int(b) for b in e.get("replicas") or ())
        for e in obj.get("partitions") or ()
    }


def decode_partition_list(data: bytes | None) -> list[tuple[str, int]]:
    """Partitions of ``/admin/preferred_replica_election`` or an ISR change notification."""
    obj = _loads(data) or {}
    return [(str(e["topic"]), int(e["partition"])) for e in obj.get("partitions") or ()]
