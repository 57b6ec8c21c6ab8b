"""Topic administration in ZooKeeper — what Kafka's ``AdminZkClient`` does.

Any broker may run these (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs all
arrive at a random broker in ZK mode). They only *write the request* into ZooKeeper; the
controller turns it into partition states and brokers into logs:

* create: ``/config/topics/<t>`` and ``/brokers/topics/<t>`` in one ZooKeeper transaction
  (Kafka writes them one after the other; a transaction never leaves a config without a
  topic). The controller sees the new child of ``/brokers/topics`` and elects leaders.
* delete: ``/admin/delete_topics/<t>``; the controller removes the topic's znodes.
* create partitions: rewrite ``/brokers/topics/<t>`` conditionally on its znode version.
* alter config: rewrite ``/config/topics/<t>`` and add a sequential
  ``/config/changes/config_change_`` notification, again in one transaction.

Blocking kazoo calls happen in ``_sync`` methods that :class:`TopicAdmin` runs in a
worker thread. Errors are the Kafka error classes the responses carry.
"""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Callable, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from odradek.cluster import znodes
from odradek.cluster.assignment import (
    Assignment,
    assign_new_partitions,
    assign_replicas,
    validate_assignment,
)
from odradek.cluster.model import NO_LEADER, PartitionRegistration, TopicMetadata, frozen_mapping
from odradek.cluster.zk import ZkSession
from odradek.protocol.errors import (
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidRequest,
    InvalidTopic,
    KafkaError,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from odradek.topic_name import validate_topic_name

ConfigValidator = Callable[[Mapping[str, str]], object]


def _collision_key(name: str) -> str:
    # '.' and '_' both become '_' in metric names, so Kafka refuses topics that differ
    # only there.
    return name.replace(".", "_")


def _run_validator(validate_config: ConfigValidator | None, config: Mapping[str, str]) -> None:
    if validate_config is None:
        return
    try:
        validate_config(config)
    except KafkaError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidConfig(str(exc)) from exc


def _pending_metadata(
    name: str,
    topic_id: uuid.UUID,
    assignment: Mapping[int, Sequence[int]],
    config: Mapping[str, str],
) -> TopicMetadata:
    partitions = {
        p: PartitionRegistration(NO_LEADER, -1, (), tuple(replicas), -1)
        for p, replicas in sorted(assignment.items())
    }
    return TopicMetadata(name, topic_id, frozen_mapping(partitions), frozen_mapping(config))


def live_brokers_sync(client: KazooClient) -> dict[int, str | None]:
    """``{broker id: rack}`` of every registered broker, read straight from ZooKeeper."""
    result: dict[int, str | None] = {}
    for child in client.get_children(znodes.BROKER_IDS):
        try:
            data, _ = client.get(znodes.broker_path(int(child)))
        except NoNodeError:
            continue
        result[int(child)] = znodes.decode_broker(int(child), data).rack
    return result


class TopicAdmin:
    def __init__(
        self,
        session: ZkSession,
        *,
        validate_config: ConfigValidator | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.session = session
        self.validate_config = validate_config
        self.rng = rng or random.Random()

    @property
    def client(self) -> KazooClient:
        return self.session.client

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        config: Mapping[str, str] | None = None,
        assignment: Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        return await self.session.call(
            self._create_topic_sync,
            name,
            num_partitions,
            replication_factor,
            dict(config or {}),
            assignment,
            validate_only,
        )

    def _create_topic_sync(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        config: dict[str, str],
        assignment: Mapping[int, Sequence[int]] | None,
        validate_only: bool,
    ) -> TopicMetadata:
        validate_topic_name(name)
        client = self.client
        existing = client.get_children(znodes.BROKER_TOPICS)
        if name in existing or client.exists(znodes.delete_topic_path(name)):
            raise TopicAlreadyExists(f"Topic '{name}' already exists.")
        colliding = [t for t in existing if _collision_key(t) == _collision_key(name)]
        if colliding:
            raise InvalidTopic(f"Topic '{name}' collides with existing topics: {colliding[0]}")
        _run_validator(self.validate_config, config)
        brokers = live_brokers_sync(client)
        placement: Assignment
        if assignment is not None:
            first = next(iter(assignment.values()), ())
            if num_partitions not in (-1, len(assignment)) or replication_factor not in (
                -1,
                len(first),
            ):
                raise InvalidRequest(
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time."
                )
            if not assignment:
                raise InvalidReplicaAssignment("The replica assignment has no partitions.")
            placement = validate_assignment(assignment, set(brokers))
        else:
            placement = assign_replicas(brokers, num_partitions, replication_factor, rng=self.rng)
        topic_id = znodes.random_kafka_uuid()
        if not validate_only:
            self._write_new_topic(name, topic_id, placement, config)
        return _pending_metadata(name, topic_id, placement, config)

    def _write_new_topic(
        self, name: str, topic_id: uuid.UUID, placement: Assignment, config: Mapping[str, str]
    ) -> None:
        client = self.client
        config_path = znodes.topic_config_path(name)
        config_data = znodes.encode_entity_config(config)
        txn = client.transaction()
        if client.exists(config_path):  # left over from an earlier topic of this name
            txn.set_data(config_path, config_data)
        else:
            txn.create(config_path, config_data)
        txn.create(znodes.topic_path(name), znodes.encode_topic_assignment(topic_id, placement))
        results = txn.commit()
        if isinstance(results[1], NodeExistsError):
            raise TopicAlreadyExists(f"Topic '{name}' already exists.")
        if isinstance(results[0], NodeExistsError):  # config created concurrently: retry once
            return self._write_new_topic(name, topic_id, placement, config)
        for result in results:
            if isinstance(result, Exception):
                raise result

    async def delete_topic(self, name: str) -> None:
        """Mark ``name`` for deletion; idempotent while the deletion is pending."""
        await self.session.call(self._delete_topic_sync, name)

    def _delete_topic_sync(self, name: str) -> None:
        if not self.client.exists(znodes.topic_path(name)):
            raise UnknownTopicOrPartition(f"Topic '{name}' does not exist.")
        with contextlib.suppress(NodeExistsError):
            self.client.create(znodes.delete_topic_path(name), b"", makepath=True)

    async def create_partitions(
        self,
        name: str,
        total_count: int,
        assignment: Sequence[Sequence[int]] | Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> Assignment:
        """Grow ``name`` to ``total_count`` partitions; returns the new partitions' placement.

        ``assignment`` lists replicas for the new partitions only, either in order (as the
        CreatePartitions request carries them) or keyed by partition id.
        """
        return await self.session.call(
            self._create_partitions_sync, name, total_count, assignment, validate_only
        )

    def _create_partitions_sync(
        self,
        name: str,
        total_count: int,
        assignment: Sequence[Sequence[int]] | Mapping[int, Sequence[int]] | None,
        validate_only: bool,
    ) -> Assignment:
        client = self.client
        while True:
            try:
                data, stat = client.get(znodes.topic_path(name))
            except NoNodeError:
                raise UnknownTopicOrPartition(f"Topic '{name}' does not exist.") from None
            if client.exists(znodes.delete_topic_path(name)):
                raise InvalidTopic(f"Topic '{name}' is queued for deletion.")
            topic_id, existing = znodes.decode_topic_assignment(data)
            current = len(existing)
            if total_count == current:
                raise InvalidPartitions(f"Topic already has {current} partitions.")
            if total_count < current:
                raise InvalidPartitions(
                    f"Topic currently has {current} partitions, which is higher than the "
                    f"requested {total_count}."
                )
            brokers = live_brokers_sync(client)
            if assignment is not None:
                requested = (
                    dict(assignment)
                    if isinstance(assignment, Mapping)
                    else {current + i: replicas for i, replicas in enumerate(assignment)}
                )
                if len(requested) != total_count - current:
                    raise InvalidReplicaAssignment(
                        f"Increasing the number of partitions by {total_count - current} but "
                        f"{len(requested)} assignments provided."
                    )
                added = validate_assignment(
                    requested,
                    set(brokers),
                    first_partition=current,
                    replication_factor=len(existing[0]),
                )
            else:
                added = assign_new_partitions(brokers, existing, total_count)
            if validate_only:
                return added
            new_assignment = {**existing, **added}
            encoded = znodes.encode_topic_assignment(
                topic_id or znodes.random_kafka_uuid(), new_assignment
            )
            try:
                client.set(znodes.topic_path(name), encoded, version=stat.version)
                return added
            except BadVersionError:
                continue  # changed under us (another admin, or the controller): re-read
            except NoNodeError:
                raise UnknownTopicOrPartition(f"Topic '{name}' does not exist.") from None

    async def alter_topic_config(
        self, name: str, config: Mapping[str, str], validate_only: bool = False
    ) -> None:
        """Replace the topic's whole config override set with ``config``."""
        await self.session.call(self._alter_topic_config_sync, name, dict(config), validate_only)

    def _alter_topic_config_sync(
        self, name: str, config: dict[str, str], validate_only: bool
    ) -> None:
        client = self.client
        if not client.exists(znodes.topic_path(name)):
            raise UnknownTopicOrPartition(f"Topic '{name}' does not exist.")
        _run_validator(self.validate_config, config)
        if validate_only:
            return
        config_path = znodes.topic_config_path(name)
        data = znodes.encode_entity_config(config)
        txn = client.transaction()
        if client.exists(config_path):
            txn.set_data(config_path, data)
        else:
            txn.create(config_path, data)
        txn.create(
            f"{znodes.CONFIG_CHANGES}/{znodes.CONFIG_CHANGE_PREFIX}",
            znodes.encode_config_change(f"topics/{name}"),
            sequence=True,
        )
        for result in txn.commit():
            if isinstance(result, Exception):
                raise result
