"""From a decoded request to the bytes of its response: the handler table.

A handler is ``handler(ctx, body) -> HandlerResult``: an :data:`Outcome`, or an awaitable of
the response. Returning a plain value (not a coroutine) is the fast path — no task is
created — and is what Produce and Fetch do whenever they need not wait. Requests parked in
a purgatory (long-poll, acks=-1) return a :class:`Deferred`; handlers that must wait
otherwise (ZooKeeper writes, group joins) return an awaitable. The connection keeps
responses in request order either way.

Side effects happen in request order too: a handler runs synchronously up to its first
``await``, and handlers are called in the order requests arrive, so pipelined Produce
requests append in order (idempotent producers depend on this).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.fetch_response import Chunk
from odradek.protocol.messages import encode_response

from .context import RequestContext
from .outcomes import CLOSE_CONNECTION, NO_RESPONSE, Marker, Outcome, Response

if TYPE_CHECKING:  # annotations only: no runtime dependency on typing_extensions
    from typing_extensions import TypeIs

__all__ = [
    "CLOSE_CONNECTION",
    "NO_RESPONSE",
    "Handler",
    "HandlerResult",
    "Outcome",
    "handler_table",
    "to_chunks",
]


# A handler is annotated with its own API's request union (``odradek.protocol.api_types``:
# ``handle_produce(ctx, request: ProduceRequest)``), which mypy checks inside the handler.
# The table holds handlers of every API side by side and the connection passes each the body
# ``decode_request`` read for that api key, so here the request's type is left open.
HandlerResult: TypeAlias = Outcome | Awaitable[Response | Marker]
Handler: TypeAlias = Callable[[RequestContext, Any], HandlerResult]


def to_chunks(correlation_id: int, outcome: Response | Marker) -> Sequence[Chunk] | Marker:
    """Encode a handler's outcome as the frame to write (or a marker)."""
    if isinstance(outcome, Marker):
        return outcome
    if isinstance(outcome, list):
        return outcome
    return [encode_response(correlation_id, outcome)]


def is_awaitable(value: HandlerResult) -> TypeIs[Awaitable[Response | Marker]]:
    # A pre-encoded response (a list of chunks: Fetch, OffsetCommit) is the hottest
    # outcome and never awaitable: no trip through inspect's ABC check for it.
    return not isinstance(value, list) and inspect.isawaitable(value)


def handler_table() -> dict[int, Handler]:
    """api key → handler for every advertised API (imported here to keep modules acyclic)."""
    # the handlers load with the table, not with dispatch's types
    from .handlers import (
        acls,
        admin,
        api_versions,
        client_quotas,
        cluster_info,
        configs,
        delete_records,
        describe_producers,
        fetch,
        list_offsets,
        metadata,
        offset_for_leader_epoch,
        produce,
        producer_id,
        sasl,
        transactions,
        txn_markers,
        user_scram,
    )

    return {
        ApiKey.PRODUCE: produce.handle_produce,
        ApiKey.FETCH: fetch.handle_fetch,
        ApiKey.LIST_OFFSETS: list_offsets.handle_list_offsets,
        ApiKey.METADATA: metadata.handle_metadata,
        ApiKey.API_VERSIONS: api_versions.handle_api_versions,
        ApiKey.SASL_HANDSHAKE: sasl.handle_sasl_handshake,
        ApiKey.SASL_AUTHENTICATE: sasl.handle_sasl_authenticate,
        ApiKey.CREATE_TOPICS: admin.handle_create_topics,
        ApiKey.DELETE_TOPICS: admin.handle_delete_topics,
        ApiKey.CREATE_PARTITIONS: admin.handle_create_partitions,
        ApiKey.DELETE_RECORDS: delete_records.handle_delete_records,
        ApiKey.DESCRIBE_PRODUCERS: describe_producers.handle_describe_producers,
        ApiKey.INIT_PRODUCER_ID: producer_id.handle_init_producer_id,
        ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle_offset_for_leader_epoch,
        ApiKey.DESCRIBE_CONFIGS: configs.handle_describe_configs,
        ApiKey.ALTER_CONFIGS: configs.handle_alter_configs,
        ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.handle_incremental_alter_configs,
        ApiKey.DESCRIBE_CLUSTER: cluster_info.handle_describe_cluster,
        ApiKey.DESCRIBE_LOG_DIRS: cluster_info.handle_describe_log_dirs,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS:
            user_scram.handle_describe_user_scram_credentials,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: user_scram.handle_alter_user_scram_credentials,
        ApiKey.DESCRIBE_CLIENT_QUOTAS: client_quotas.handle_describe_client_quotas,
        ApiKey.ALTER_CLIENT_QUOTAS: client_quotas.handle_alter_client_quotas,
        ApiKey.WRITE_TXN_MARKERS: txn_markers.handle_write_txn_markers,
        ApiKey.ADD_PARTITIONS_TO_TXN: transactions.handle_add_partitions_to_txn,
        ApiKey.END_TXN: transactions.handle_end_txn,
        ApiKey.ADD_OFFSETS_TO_TXN: transactions.handle_add_offsets_to_txn,
        ApiKey.TXN_OFFSET_COMMIT: transactions.handle_txn_offset_commit,
        ApiKey.DESCRIBE_TRANSACTIONS: transactions.handle_describe_transactions,
        ApiKey.LIST_TRANSACTIONS: transactions.handle_list_transactions,
        ApiKey.CREATE_ACLS: acls.handle_create_acls,
        ApiKey.DESCRIBE_ACLS: acls.handle_describe_acls,
        ApiKey.DELETE_ACLS: acls.handle_delete_acls,
        **_group_handlers(),
        **_controller_handlers(),
    }


def _controller_handlers() -> dict[int, Handler]:
    """Requests only the active controller answers (others: NOT_CONTROLLER)."""
    # the handlers load with the table, not with dispatch's types
    from .handlers import controller_apis

    return {
        ApiKey.CONTROLLED_SHUTDOWN: controller_apis.handle_controlled_shutdown,
        ApiKey.ELECT_LEADERS: controller_apis.handle_elect_leaders,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: controller_apis.handle_alter_partition_reassignments,
        ApiKey.LIST_PARTITION_REASSIGNMENTS: controller_apis.handle_list_partition_reassignments,
    }


def _group_handlers() -> dict[int, Handler]:
    """The consumer-group APIs, served through ``services.group_coordinator``."""
    # the handlers load with the table, not with dispatch's types
    from .handlers import consumer_groups, find_coordinator, group_admin, group_offsets, groups

    return {
        ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_groups.handle_consumer_group_heartbeat,
        ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_groups.handle_consumer_group_describe,
        ApiKey.FIND_COORDINATOR: find_coordinator.handle_find_coordinator,
        ApiKey.JOIN_GROUP: groups.handle_join_group,
        ApiKey.SYNC_GROUP: groups.handle_sync_group,
        ApiKey.HEARTBEAT: groups.handle_heartbeat,
        ApiKey.LEAVE_GROUP: groups.handle_leave_group,
        ApiKey.OFFSET_COMMIT: group_offsets.handle_offset_commit,
        ApiKey.OFFSET_FETCH: group_offsets.handle_offset_fetch,
        ApiKey.OFFSET_DELETE: group_offsets.handle_offset_delete,
        ApiKey.DESCRIBE_GROUPS: group_admin.handle_describe_groups,
        ApiKey.LIST_GROUPS: group_admin.handle_list_groups,
        ApiKey.DELETE_GROUPS: group_admin.handle_delete_groups,
    }
