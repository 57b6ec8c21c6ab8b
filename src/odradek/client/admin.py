"""The asyncio admin client: topics, partitions, configs, cluster, log dirs, records, groups.

Topic changes go to the controller (Metadata's ``controller_id``), as Kafka requires; group
operations go to the group's coordinator (FindCoordinator); DeleteRecords goes to each
partition's leader. Every method raises :class:`~.errors.BrokerResponseError` when the broker
refuses (the message names every failed entity), so a script can simply call and catch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey
from odradek.security.acl import AclBinding, AclFilter

from .acls import create_acls, delete_acls, describe_acls
from .assignors import decode_assignment, decode_subscription
from .client_quotas import alter_user_quotas, describe_user_quotas
from .cluster_client import ClusterClient
from .consumer_groups import ConsumerGroupDescription, describe_consumer_groups
from .errors import BrokerResponseError, KafkaClientError
from .metadata import ClusterMetadata, TopicInfo, TopicPartition
from .offsets import OffsetAndTimestamp, list_offsets
from .scram_users import UserCredential, alter_user_scram, describe_user_scram
from .security import ClientSecurity

__all__ = [
    "RESOURCE_BROKER",
    "RESOURCE_TOPIC",
    "AsyncAdminClient",
    "ConfigEntry",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "NewTopic",
    "PartitionReassignment",
]

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
_OPS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}
_CONFIG_SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                   3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG",
                   5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                   7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}


@dataclass(frozen=True)
class NewTopic:
    name: str
    num_partitions: int = -1  # -1: the broker's num.partitions
    replication_factor: int = -1  # -1: the broker's default.replication.factor
    config: Mapping[str, str] = field(default_factory=dict)
    replica_assignment: Mapping[int, Sequence[int]] | None = None


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartition, ...]


class GroupListing(NamedTuple):
    group_id: str
    protocol_type: str
    state: str
    group_type: str  # classic, or consumer (KIP-848)


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: int


@dataclass(frozen=True)
class PartitionReassignment:
    """An ongoing reassignment (ListPartitionReassignments): the full replica set while it
    runs, and which of them are being added or removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def _check(errors: list[str], what: str) -> None:
    if errors:
        raise KafkaClientError(f"{what} failed: " + "; ".join(errors))


class AsyncAdminClient:
    def __init__(self, bootstrap_servers: str | Iterable[str], *, client_id: str = "odradek-admin",
                 request_timeout_ms: int = 30_000, **security: Any) -> None:
        """``security``: kafka-python's names (``security_protocol``, ``ssl_cafile``,
        ``sasl_mechanism``, ``sasl_plain_username``, ...; :class:`ClientSecurity`)."""
        self.client = ClusterClient(bootstrap_servers, client_id=client_id,
                                    request_timeout_ms=request_timeout_ms,
                                    security=ClientSecurity.create(**security))
        self.timeout_ms = request_timeout_ms

    async def __aenter__(self) -> AsyncAdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.client.close()

    async def _controller(self) -> int:
        metadata = await self.client.refresh_metadata()
        if metadata.controller_id < 0:
            raise KafkaClientError("the cluster reports no controller")
        return metadata.controller_id

    async def _send_controller(self, api_key: int, body: Mapping[str, Any]) -> Any:
        last: Exception | None = None
        for attempt in range(5):
            try:
                response = await self.client.send(await self._controller(), api_key, body)
            except KafkaClientError as exc:
                last = exc
                self.client.invalidate()
                await asyncio.sleep(self.client.retry_backoff * (attempt + 1))
                continue
            return response
        raise last or KafkaClientError("controller unreachable")

    # ------------------------------------------------------------------ cluster

    async def describe_cluster(self) -> ClusterMetadata:
        """Brokers, controller and cluster id (from Metadata, which every broker serves)."""
        self.client.track_all_topics()
        return await self.client.refresh_metadata()

    # ------------------------------------------------------------------ users

    async def alter_user_scram_credentials(
            self, *, upsert: Iterable[tuple[str, str, str]] = (),
            delete: Iterable[tuple[str, str]] = ()) -> None:
        """Add or replace (user, mechanism, password) and delete (user, mechanism)."""
        await alter_user_scram(self.client, upsert=upsert, delete=delete)

    async def describe_user_scram_credentials(
            self, users: Iterable[str] | None = None) -> list[UserCredential]:
        return await describe_user_scram(self.client, users)

    async def describe_user_quotas(self, user: str) -> dict[str, float]:
        """The client quotas set for ``user`` itself (``producer_byte_rate``, ...)."""
        return await describe_user_quotas(self.client, user)

    async def alter_user_quotas(self, user: str, changes: Mapping[str, float | None]) -> None:
        """Set (a value) or remove (None) each of ``user``'s client quotas."""
        await alter_user_quotas(self.client, user, changes)

    # ------------------------------------------------------------------ ACLs

    async def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        await create_acls(self.client, bindings)

    async def describe_acls(self, acl_filter: AclFilter) -> list[AclBinding]:
        return await describe_acls(self.client, acl_filter)

    async def delete_acls(self, filters: Iterable[AclFilter]) -> list[AclBinding]:
        return await delete_acls(self.client, filters)

    # ------------------------------------------------------------------ topics

    async def list_topics(self, include_internal: bool = False) -> dict[str, TopicInfo]:
        self.client.track_all_topics()
        metadata = await self.client.refresh_metadata()
        return {name: info for name, info in sorted(metadata.topics.items())
                if include_internal or not info.is_internal}

    async def describe_topics(self, names: Iterable[str]) -> dict[str, TopicInfo]:
        names = list(names)
        metadata = await self.client.refresh_metadata(names)
        out = {}
        for name in names:
            info = metadata.topics.get(name)
            if info is None or info.error_code:
                raise BrokerResponseError(
                    info.error_code if info else ErrorCode.unknown_topic_or_partition,
                    f"topic {name!r}")
            out[name] = info
        return out

    async def create_topics(self, topics: Sequence[NewTopic], *, validate_only: bool = False,
                            wait: bool = True) -> None:
        """Create ``topics`` (raises if any fails); with ``wait`` returns once every new topic
        has leaders for all partitions, so a producer can use it at once."""
        body = {
            "topics": [{
                "name": t.name, "num_partitions": t.num_partitions if not t.replica_assignment
                else -1,
                "replication_factor": t.replication_factor if not t.replica_assignment else -1,
                "assignments": [{"partition_index": p, "broker_ids": list(b)}
                                for p, b in (t.replica_assignment or {}).items()],
                "configs": [{"name": k, "value": v} for k, v in t.config.items()],
            } for t in topics],
            "timeout": self.timeout_ms, "validate_only": validate_only,
        }
        response = await self._send_controller(ApiKey.CREATE_TOPICS, body)
        errors = [f"{r.name}: {BrokerResponseError(r.error_code, '', r.error_message)}"
                  for r in response.topics if r.error_code]
        _check(errors, "CreateTopics")
        if wait and not validate_only:
            await self._wait_topics({t.name for t in topics}, present=True)

    async def _wait_topics(self, names: set[str], present: bool, timeout: float = 30) -> None:
        deadline = monotonic_s() + timeout
        while monotonic_s() < deadline:
            metadata = await self.client.refresh_metadata(names)
            if present and all(
                    metadata.topics.get(n) and metadata.topics[n].error_code == ErrorCode.none
                    and metadata.topics[n].partitions
                    and all(p.leader >= 0 for p in metadata.topics[n].partitions.values())
                    for n in names):
                return
            if not present and all(
                    n not in metadata.topics
                    or metadata.topics[n].error_code == ErrorCode.unknown_topic_or_partition
                    for n in names):
                return
            await asyncio.sleep(0.05)
        raise KafkaClientError(f"topics {sorted(names)} not {'ready' if present else 'gone'} "
                               f"after {timeout:.0f}s")

    async def delete_topics(self, names: Iterable[str], *, wait: bool = True) -> None:
        names = list(names)
        response = await self._send_controller(
            ApiKey.DELETE_TOPICS, {"topic_names": names, "timeout": self.timeout_ms,
                                   "topics": [{"name": n, "topic_id": None} for n in names]})
        errors = [f"{r.name}: {BrokerResponseError(r.error_code, '', getattr(r, 'error_message', None))}"  # noqa: E501
                  for r in response.responses if r.error_code]
        _check(errors, "DeleteTopics")
        if wait:
            await self._wait_topics(set(names), present=False)

    async def create_partitions(self, new_counts: Mapping[str, int], *,
                                validate_only: bool = False) -> None:
        """Grow each topic to ``new_counts[topic]`` partitions in total."""
        response = await self._send_controller(ApiKey.CREATE_PARTITIONS, {
            "topics": [{"name": t, "count": c, "assignments": None}
                       for t, c in new_counts.items()],
            "timeout": self.timeout_ms, "validate_only": validate_only})
        errors = [f"{r.name}: {BrokerResponseError(r.error_code, '', r.error_message)}"
                  for r in response.results if r.error_code]
        _check(errors, "CreatePartitions")
        if not validate_only:
            deadline = monotonic_s() + 30
            while monotonic_s() < deadline:
                metadata = await self.client.refresh_metadata(list(new_counts))
                if all(len(metadata.available_partitions(t)) >= c
                       for t, c in new_counts.items()):
                    return
                await asyncio.sleep(0.05)

    # ------------------------------------------------------------------ configs

    async def describe_configs(self, resource_type: int, name: str,
                               keys: Sequence[str] | None = None) -> dict[str, ConfigEntry]:
        # A broker's own configs are served by that broker; the cluster default ("") by any.
        node = int(name) if resource_type == RESOURCE_BROKER and name else None
        response = await self.client.send(node, ApiKey.DESCRIBE_CONFIGS, {
            "resources": [{"resource_type": resource_type, "resource_name": name,
                           "configuration_keys": list(keys) if keys else None}],
            "include_synonyms": False, "include_documentation": False})
        out = {}
        for result in response.results:
            if result.error_code:
                raise BrokerResponseError(result.error_code, f"DescribeConfigs {name}",
                                          result.error_message)
            for entry in result.configs:
                source = _CONFIG_SOURCES.get(int(getattr(entry, "config_source", -1)), "UNKNOWN")
                out[entry.name] = ConfigEntry(entry.name, entry.value, source,
                                              bool(entry.read_only), bool(entry.is_sensitive))
        return out

    async def incremental_alter_configs(self, resource_type: int, name: str,
                                        changes: Iterable[tuple[str, str, str | None]],
                                        *, validate_only: bool = False) -> None:
        """``changes``: (key, operation, value) with operation set/delete/append/subtract."""
        node = int(name) if resource_type == RESOURCE_BROKER and name else None
        configs = []
        for key, op, value in changes:
            if op not in _OPS:
                raise ValueError(f"config operation must be one of {', '.join(_OPS)}")
            configs.append({"name": key, "config_operation": _OPS[op], "value": value})
        response = await self.client.send(node, ApiKey.INCREMENTAL_ALTER_CONFIGS, {
            "resources": [{"resource_type": resource_type, "resource_name": name,
                           "configs": configs}], "validate_only": validate_only})
        errors = [f"{r.resource_name}: "
                  f"{BrokerResponseError(r.error_code, '', r.error_message)}"
                  for r in response.responses if r.error_code]
        _check(errors, "IncrementalAlterConfigs")

    async def describe_topic_configs(self, names: Iterable[str],
                                     keys: Sequence[str] | None = None
                                     ) -> dict[str, dict[str, ConfigEntry]]:
        """Configs of many topics in one DescribeConfigs request (any broker serves topic
        configs); a topic that does not exist raises."""
        names = list(names)
        if not names:
            return {}
        response = await self.client.send(None, ApiKey.DESCRIBE_CONFIGS, {
            "resources": [{"resource_type": RESOURCE_TOPIC, "resource_name": name,
                           "configuration_keys": list(keys) if keys else None}
                          for name in names],
            "include_synonyms": False, "include_documentation": False})
        out: dict[str, dict[str, ConfigEntry]] = {}
        for result in response.results:
            if result.error_code:
                raise BrokerResponseError(result.error_code,
                                          f"DescribeConfigs {result.resource_name}",
                                          result.error_message)
            out[result.resource_name] = {
                entry.name: ConfigEntry(
                    entry.name, entry.value,
                    _CONFIG_SOURCES.get(int(getattr(entry, "config_source", -1)), "UNKNOWN"),
                    bool(entry.read_only), bool(entry.is_sensitive))
                for entry in result.configs}
        return out

    # ------------------------------------------------------------------ reassignments

    async def alter_partition_reassignments(
            self, moves: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        """Start moving each partition to its new replica list (None cancels a running
        reassignment of that partition). Returns once the controller accepted the moves;
        :meth:`list_partition_reassignments` shows them until the data has been copied."""
        if not moves:
            return
        grouped: dict[str, list[dict[str, Any]]] = {}
        for tp, replicas in sorted(moves.items()):
            grouped.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition,
                 "replicas": None if replicas is None else [int(r) for r in replicas]})
        response = await self._send_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, {
            "timeout": self.timeout_ms,
            "topics": [{"name": t, "partitions": p} for t, p in grouped.items()]})
        if response.error_code:
            raise BrokerResponseError(response.error_code, "AlterPartitionReassignments",
                                      response.error_message)
        errors = [f"{t.name}-{p.partition_index}: "
                  f"{BrokerResponseError(p.error_code, '', p.error_message)}"
                  for t in response.responses for p in t.partitions if p.error_code]
        _check(errors, "AlterPartitionReassignments")

    async def list_partition_reassignments(
            self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """Reassignments still running (of ``partitions``, or all when None)."""
        topics = None
        if partitions is not None:
            grouped: dict[str, list[int]] = {}
            for tp in partitions:
                grouped.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": sorted(p)} for t, p in grouped.items()]
        response = await self._send_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS, {
            "timeout": self.timeout_ms, "topics": topics})
        if response.error_code:
            raise BrokerResponseError(response.error_code, "ListPartitionReassignments",
                                      response.error_message)
        return {
            TopicPartition(t.name, int(p.partition_index)): PartitionReassignment(
                tuple(int(r) for r in p.replicas), tuple(int(r) for r in p.adding_replicas),
                tuple(int(r) for r in p.removing_replicas))
            for t in response.topics for p in t.partitions}

    # ------------------------------------------------------------------ log dirs, records

    async def describe_log_dirs(self, broker_ids: Iterable[int] | None = None
                                ) -> dict[int, dict[str, dict[TopicPartition, int]]]:
        """{broker: {log_dir: {tp: size_bytes}}}."""
        metadata = await self.client.refresh_metadata()
        ids = list(broker_ids) if broker_ids is not None else sorted(metadata.brokers)
        out: dict[int, dict[str, dict[TopicPartition, int]]] = {}
        for broker in ids:
            response = await self.client.send(broker, ApiKey.DESCRIBE_LOG_DIRS, {"topics": None})
            dirs: dict[str, dict[TopicPartition, int]] = {}
            for result in response.results:
                if result.error_code:
                    continue
                dirs[result.log_dir] = {
                    TopicPartition(t.name, int(p.partition_index)): int(p.partition_size)
                    for t in result.topics for p in t.partitions}
            out[broker] = dirs
        return out

    async def delete_records(self, before: Mapping[TopicPartition, int]
                             ) -> dict[TopicPartition, int]:
        """Move each partition's log start to ``before[tp]`` (-1: the high watermark);
        returns the new low watermarks."""
        metadata = await self.client.refresh_metadata({tp.topic for tp in before})
        by_leader: dict[int, dict[str, list[dict[str, int]]]] = {}
        for tp, offset in before.items():
            leader = metadata.leader_for(tp)
            if leader < 0:
                raise BrokerResponseError(ErrorCode.leader_not_available,
                                          f"{tp.topic}-{tp.partition}")
            by_leader.setdefault(leader, {}).setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "offset": offset})
        out: dict[TopicPartition, int] = {}
        errors = []
        for leader, topics in by_leader.items():
            response = await self.client.send(leader, ApiKey.DELETE_RECORDS, {
                "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
                "timeout": self.timeout_ms})
            for topic in response.topics:
                for part in topic.partitions:
                    tp = TopicPartition(topic.name, int(part.partition_index))
                    if part.error_code:
                        errors.append(f"{tp.topic}-{tp.partition}: "
                                      f"{BrokerResponseError(part.error_code)}")
                    else:
                        out[tp] = int(part.low_watermark)
        _check(errors, "DeleteRecords")
        return out

    async def list_offsets(self, query: Mapping[TopicPartition, int], *,
                           isolation_level: int = 0
                           ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """``isolation_level=1`` (read_committed): latest is the last stable offset."""
        return await list_offsets(self.client, query, isolation_level=isolation_level)

    # ------------------------------------------------------------------ groups

    async def list_groups(self) -> list[GroupListing]:
        """Every group on every broker, with its type (``classic`` from brokers older than
        ListGroups v5, which know no other)."""
        metadata = await self.client.refresh_metadata()
        out = []
        for broker in sorted(metadata.brokers):
            response = await self.client.send(broker, ApiKey.LIST_GROUPS, {"states_filter": []})
            if response.error_code:
                raise BrokerResponseError(response.error_code, f"ListGroups on {broker}")
            out += [GroupListing(g.group_id, g.protocol_type, getattr(g, "group_state", ""),
                                 getattr(g, "group_type", "") or "classic")
                    for g in response.groups]
        return sorted(out)

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        out = {}
        for group in group_ids:
            node = await self.client.find_coordinator(group)
            response = await self.client.send(node, ApiKey.DESCRIBE_GROUPS, {
                "groups": [group], "include_authorized_operations": False})
            for g in response.groups:
                if g.error_code:
                    raise BrokerResponseError(g.error_code, f"DescribeGroups {group!r}")
                members = []
                for m in g.members:
                    assignment: tuple[TopicPartition, ...] = ()
                    if g.protocol_type == "consumer" and m.member_assignment:
                        try:
                            assignment = tuple(decode_assignment(m.member_assignment))
                        except Exception:
                            assignment = ()
                    members.append(MemberDescription(m.member_id, m.client_id, m.client_host,
                                                     getattr(m, "group_instance_id", None),
                                                     assignment))
                out[group] = GroupDescription(g.group_id, g.group_state, g.protocol_type,
                                              g.protocol_data, tuple(members), node)
        return out

    async def describe_consumer_groups(self, group_ids: Iterable[str]
                                       ) -> dict[str, ConsumerGroupDescription | None]:
        """Consumer-type groups (KIP-848); None for a group that is not one."""
        return await describe_consumer_groups(self.client, group_ids)

    async def delete_groups(self, group_ids: Iterable[str]) -> None:
        errors = []
        for group in group_ids:
            node = await self.client.find_coordinator(group)
            response = await self.client.send(node, ApiKey.DELETE_GROUPS,
                                              {"groups_names": [group]})
            errors += [f"{r.group_id}: {BrokerResponseError(r.error_code)}"
                       for r in response.results if r.error_code]
        _check(errors, "DeleteGroups")

    async def list_group_offsets(self, group_id: str,
                                 partitions: Iterable[TopicPartition] | None = None, *,
                                 require_stable: bool = False) -> dict[TopicPartition, int]:
        """Committed offsets of ``group_id`` (all partitions it committed when None).
        ``require_stable``: offsets a transaction has pending answer UNSTABLE_OFFSET_COMMIT
        (raised) instead of the last stable value."""
        node = await self.client.find_coordinator(group_id)
        topics = None
        if partitions is not None:
            grouped: dict[str, list[int]] = {}
            for tp in partitions:
                grouped.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": p} for t, p in grouped.items()]
        response = await self.client.send(node, ApiKey.OFFSET_FETCH, {
            "group_id": group_id, "topics": topics, "require_stable": require_stable})
        if int(getattr(response, "error_code", 0)):
            raise BrokerResponseError(response.error_code, f"OffsetFetch {group_id!r}")
        out = {}
        for topic in response.topics:
            for part in topic.partitions:
                if part.error_code:
                    raise BrokerResponseError(part.error_code, f"OffsetFetch {group_id!r}")
                if int(part.committed_offset) >= 0:
                    out[TopicPartition(topic.name, int(part.partition_index))] = \
                        int(part.committed_offset)
        return out

    async def alter_group_offsets(self, group_id: str,
                                  offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` for an *inactive* group (Kafka refuses while members are
        active: UNKNOWN_MEMBER_ID / REBALANCE_IN_PROGRESS)."""
        node = await self.client.find_coordinator(group_id)
        grouped: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in offsets.items():
            grouped.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": offset,
                "committed_leader_epoch": -1, "committed_metadata": "",
                "commit_timestamp": -1})
        response = await self.client.send(node, ApiKey.OFFSET_COMMIT, {
            "group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": p} for t, p in grouped.items()]})
        errors = [f"{t.name}-{p.partition_index}: {BrokerResponseError(p.error_code)}"
                  for t in response.topics for p in t.partitions if p.error_code]
        _check(errors, f"OffsetCommit for group {group_id!r}")

    async def group_subscriptions(self, group_id: str) -> dict[str, list[str]]:
        """Member id → subscribed topics (decoded from the consumer protocol metadata)."""
        node = await self.client.find_coordinator(group_id)
        response = await self.client.send(node, ApiKey.DESCRIBE_GROUPS, {
            "groups": [group_id], "include_authorized_operations": False})
        out = {}
        for g in response.groups:
            for m in g.members:
                if m.member_metadata:
                    out[m.member_id] = decode_subscription(m.member_metadata).topics
        return out
