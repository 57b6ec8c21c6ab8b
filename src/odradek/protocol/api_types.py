"""Per-API unions of kio's request classes, for the versions this broker advertises.

kio generates one class per (API, version); a handler receives whichever version the client
sent. ``ProduceRequest`` here is the union of ``kio.schema.produce.v3.ProduceRequest`` to
``v9`` — the range :data:`.api_versions.ADVERTISED` lists — so mypy checks a handler's field
reads against every version it may be given (a field only some versions have must be read
behind a version check or with a default). A few entities nested in requests, which
handlers pass to helpers, have unions too (at the end). ``tests/protocol/test_api_types.py``
checks every union against ``ADVERTISED``: change both together.

The unions are for annotations: handlers import this module under ``TYPE_CHECKING`` so that
a broker does not import every kio message class at start (they load on first use).
ControlledShutdown is odradek's own codec (:mod:`.controlled_shutdown`), one version.
"""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.add_offsets_to_txn import v0 as add_offsets_to_txn_v0
from kio.schema.add_offsets_to_txn import v1 as add_offsets_to_txn_v1
from kio.schema.add_offsets_to_txn import v2 as add_offsets_to_txn_v2
from kio.schema.add_offsets_to_txn import v3 as add_offsets_to_txn_v3
from kio.schema.add_partitions_to_txn import v0 as add_partitions_to_txn_v0
from kio.schema.add_partitions_to_txn import v1 as add_partitions_to_txn_v1
from kio.schema.add_partitions_to_txn import v2 as add_partitions_to_txn_v2
from kio.schema.add_partitions_to_txn import v3 as add_partitions_to_txn_v3
from kio.schema.alter_client_quotas import v0 as alter_client_quotas_v0
from kio.schema.alter_client_quotas import v1 as alter_client_quotas_v1
from kio.schema.alter_configs import v0 as alter_configs_v0
from kio.schema.alter_configs import v1 as alter_configs_v1
from kio.schema.alter_configs import v2 as alter_configs_v2
from kio.schema.alter_partition_reassignments import v0 as alter_partition_reassignments_v0
from kio.schema.alter_user_scram_credentials import v0 as alter_user_scram_credentials_v0
from kio.schema.api_versions import v0 as api_versions_v0
from kio.schema.api_versions import v1 as api_versions_v1
from kio.schema.api_versions import v2 as api_versions_v2
from kio.schema.api_versions import v3 as api_versions_v3
from kio.schema.consumer_group_describe import v0 as consumer_group_describe_v0
from kio.schema.consumer_group_describe import v1 as consumer_group_describe_v1
from kio.schema.consumer_group_heartbeat import v0 as consumer_group_heartbeat_v0
from kio.schema.consumer_group_heartbeat import v1 as consumer_group_heartbeat_v1
from kio.schema.create_acls import v1 as create_acls_v1
from kio.schema.create_acls import v2 as create_acls_v2
from kio.schema.create_acls import v3 as create_acls_v3
from kio.schema.create_partitions import v0 as create_partitions_v0
from kio.schema.create_partitions import v1 as create_partitions_v1
from kio.schema.create_partitions import v2 as create_partitions_v2
from kio.schema.create_partitions import v3 as create_partitions_v3
from kio.schema.create_topics import v2 as create_topics_v2
from kio.schema.create_topics import v3 as create_topics_v3
from kio.schema.create_topics import v4 as create_topics_v4
from kio.schema.create_topics import v5 as create_topics_v5
from kio.schema.create_topics import v6 as create_topics_v6
from kio.schema.create_topics import v7 as create_topics_v7
from kio.schema.delete_acls import v1 as delete_acls_v1
from kio.schema.delete_acls import v2 as delete_acls_v2
from kio.schema.delete_acls import v3 as delete_acls_v3
from kio.schema.delete_groups import v0 as delete_groups_v0
from kio.schema.delete_groups import v1 as delete_groups_v1
from kio.schema.delete_groups import v2 as delete_groups_v2
from kio.schema.delete_records import v0 as delete_records_v0
from kio.schema.delete_records import v1 as delete_records_v1
from kio.schema.delete_records import v2 as delete_records_v2
from kio.schema.delete_topics import v1 as delete_topics_v1
from kio.schema.delete_topics import v2 as delete_topics_v2
from kio.schema.delete_topics import v3 as delete_topics_v3
from kio.schema.delete_topics import v4 as delete_topics_v4
from kio.schema.delete_topics import v5 as delete_topics_v5
from kio.schema.delete_topics import v6 as delete_topics_v6
from kio.schema.describe_acls import v1 as describe_acls_v1
from kio.schema.describe_acls import v2 as describe_acls_v2
from kio.schema.describe_acls import v3 as describe_acls_v3
from kio.schema.describe_client_quotas import v0 as describe_client_quotas_v0
from kio.schema.describe_client_quotas import v1 as describe_client_quotas_v1
from kio.schema.describe_cluster import v0 as describe_cluster_v0
from kio.schema.describe_cluster import v1 as describe_cluster_v1
from kio.schema.describe_configs import v1 as describe_configs_v1
from kio.schema.describe_configs import v2 as describe_configs_v2
from kio.schema.describe_configs import v3 as describe_configs_v3
from kio.schema.describe_configs import v4 as describe_configs_v4
from kio.schema.describe_groups import v0 as describe_groups_v0
from kio.schema.describe_groups import v1 as describe_groups_v1
from kio.schema.describe_groups import v2 as describe_groups_v2
from kio.schema.describe_groups import v3 as describe_groups_v3
from kio.schema.describe_groups import v4 as describe_groups_v4
from kio.schema.describe_groups import v5 as describe_groups_v5
from kio.schema.describe_log_dirs import v1 as describe_log_dirs_v1
from kio.schema.describe_log_dirs import v2 as describe_log_dirs_v2
from kio.schema.describe_log_dirs import v3 as describe_log_dirs_v3
from kio.schema.describe_log_dirs import v4 as describe_log_dirs_v4
from kio.schema.describe_producers import v0 as describe_producers_v0
from kio.schema.describe_transactions import v0 as describe_transactions_v0
from kio.schema.describe_user_scram_credentials import v0 as describe_user_scram_credentials_v0
from kio.schema.elect_leaders import v0 as elect_leaders_v0
from kio.schema.elect_leaders import v1 as elect_leaders_v1
from kio.schema.elect_leaders import v2 as elect_leaders_v2
from kio.schema.end_txn import v0 as end_txn_v0
from kio.schema.end_txn import v1 as end_txn_v1
from kio.schema.end_txn import v2 as end_txn_v2
from kio.schema.end_txn import v3 as end_txn_v3
from kio.schema.fetch import v4 as fetch_v4
from kio.schema.fetch import v5 as fetch_v5
from kio.schema.fetch import v6 as fetch_v6
from kio.schema.fetch import v7 as fetch_v7
from kio.schema.fetch import v8 as fetch_v8
from kio.schema.fetch import v9 as fetch_v9
from kio.schema.fetch import v10 as fetch_v10
from kio.schema.fetch import v11 as fetch_v11
from kio.schema.fetch import v12 as fetch_v12
from kio.schema.find_coordinator import v0 as find_coordinator_v0
from kio.schema.find_coordinator import v1 as find_coordinator_v1
from kio.schema.find_coordinator import v2 as find_coordinator_v2
from kio.schema.find_coordinator import v3 as find_coordinator_v3
from kio.schema.find_coordinator import v4 as find_coordinator_v4
from kio.schema.heartbeat import v0 as heartbeat_v0
from kio.schema.heartbeat import v1 as heartbeat_v1
from kio.schema.heartbeat import v2 as heartbeat_v2
from kio.schema.heartbeat import v3 as heartbeat_v3
from kio.schema.heartbeat import v4 as heartbeat_v4
from kio.schema.incremental_alter_configs import v0 as incremental_alter_configs_v0
from kio.schema.incremental_alter_configs import v1 as incremental_alter_configs_v1
from kio.schema.init_producer_id import v0 as init_producer_id_v0
from kio.schema.init_producer_id import v1 as init_producer_id_v1
from kio.schema.init_producer_id import v2 as init_producer_id_v2
from kio.schema.init_producer_id import v3 as init_producer_id_v3
from kio.schema.init_producer_id import v4 as init_producer_id_v4
from kio.schema.join_group import v0 as join_group_v0
from kio.schema.join_group import v1 as join_group_v1
from kio.schema.join_group import v2 as join_group_v2
from kio.schema.join_group import v3 as join_group_v3
from kio.schema.join_group import v4 as join_group_v4
from kio.schema.join_group import v5 as join_group_v5
from kio.schema.join_group import v6 as join_group_v6
from kio.schema.join_group import v7 as join_group_v7
from kio.schema.leave_group import v0 as leave_group_v0
from kio.schema.leave_group import v1 as leave_group_v1
from kio.schema.leave_group import v2 as leave_group_v2
from kio.schema.leave_group import v3 as leave_group_v3
from kio.schema.leave_group import v4 as leave_group_v4
from kio.schema.list_groups import v0 as list_groups_v0
from kio.schema.list_groups import v1 as list_groups_v1
from kio.schema.list_groups import v2 as list_groups_v2
from kio.schema.list_groups import v3 as list_groups_v3
from kio.schema.list_groups import v4 as list_groups_v4
from kio.schema.list_groups import v5 as list_groups_v5
from kio.schema.list_offsets import v1 as list_offsets_v1
from kio.schema.list_offsets import v2 as list_offsets_v2
from kio.schema.list_offsets import v3 as list_offsets_v3
from kio.schema.list_offsets import v4 as list_offsets_v4
from kio.schema.list_offsets import v5 as list_offsets_v5
from kio.schema.list_offsets import v6 as list_offsets_v6
from kio.schema.list_offsets import v7 as list_offsets_v7
from kio.schema.list_partition_reassignments import v0 as list_partition_reassignments_v0
from kio.schema.list_transactions import v0 as list_transactions_v0
from kio.schema.list_transactions import v1 as list_transactions_v1
from kio.schema.metadata import v0 as metadata_v0
from kio.schema.metadata import v1 as metadata_v1
from kio.schema.metadata import v2 as metadata_v2
from kio.schema.metadata import v3 as metadata_v3
from kio.schema.metadata import v4 as metadata_v4
from kio.schema.metadata import v5 as metadata_v5
from kio.schema.metadata import v6 as metadata_v6
from kio.schema.metadata import v7 as metadata_v7
from kio.schema.metadata import v8 as metadata_v8
from kio.schema.metadata import v9 as metadata_v9
from kio.schema.metadata import v10 as metadata_v10
from kio.schema.metadata import v11 as metadata_v11
from kio.schema.metadata import v12 as metadata_v12
from kio.schema.offset_commit import v2 as offset_commit_v2
from kio.schema.offset_commit import v3 as offset_commit_v3
from kio.schema.offset_commit import v4 as offset_commit_v4
from kio.schema.offset_commit import v5 as offset_commit_v5
from kio.schema.offset_commit import v6 as offset_commit_v6
from kio.schema.offset_commit import v7 as offset_commit_v7
from kio.schema.offset_commit import v8 as offset_commit_v8
from kio.schema.offset_commit import v9 as offset_commit_v9
from kio.schema.offset_delete import v0 as offset_delete_v0
from kio.schema.offset_fetch import v1 as offset_fetch_v1
from kio.schema.offset_fetch import v2 as offset_fetch_v2
from kio.schema.offset_fetch import v3 as offset_fetch_v3
from kio.schema.offset_fetch import v4 as offset_fetch_v4
from kio.schema.offset_fetch import v5 as offset_fetch_v5
from kio.schema.offset_fetch import v6 as offset_fetch_v6
from kio.schema.offset_fetch import v7 as offset_fetch_v7
from kio.schema.offset_fetch import v8 as offset_fetch_v8
from kio.schema.offset_fetch import v9 as offset_fetch_v9
from kio.schema.offset_fetch import v10 as offset_fetch_v10
from kio.schema.offset_for_leader_epoch import v2 as offset_for_leader_epoch_v2
from kio.schema.offset_for_leader_epoch import v3 as offset_for_leader_epoch_v3
from kio.schema.offset_for_leader_epoch import v4 as offset_for_leader_epoch_v4
from kio.schema.produce import v3 as produce_v3
from kio.schema.produce import v4 as produce_v4
from kio.schema.produce import v5 as produce_v5
from kio.schema.produce import v6 as produce_v6
from kio.schema.produce import v7 as produce_v7
from kio.schema.produce import v8 as produce_v8
from kio.schema.produce import v9 as produce_v9
from kio.schema.sasl_authenticate import v0 as sasl_authenticate_v0
from kio.schema.sasl_authenticate import v1 as sasl_authenticate_v1
from kio.schema.sasl_authenticate import v2 as sasl_authenticate_v2
from kio.schema.sasl_handshake import v0 as sasl_handshake_v0
from kio.schema.sasl_handshake import v1 as sasl_handshake_v1
from kio.schema.sync_group import v0 as sync_group_v0
from kio.schema.sync_group import v1 as sync_group_v1
from kio.schema.sync_group import v2 as sync_group_v2
from kio.schema.sync_group import v3 as sync_group_v3
from kio.schema.sync_group import v4 as sync_group_v4
from kio.schema.sync_group import v5 as sync_group_v5
from kio.schema.txn_offset_commit import v0 as txn_offset_commit_v0
from kio.schema.txn_offset_commit import v1 as txn_offset_commit_v1
from kio.schema.txn_offset_commit import v2 as txn_offset_commit_v2
from kio.schema.txn_offset_commit import v3 as txn_offset_commit_v3
from kio.schema.write_txn_markers import v1 as write_txn_markers_v1

from .controlled_shutdown import ControlledShutdownRequest

__all__ = [
    "AclCreation",
    "AddOffsetsToTxnRequest",
    "AddPartitionsToTxnRequest",
    "AlterClientQuotasRequest",
    "AlterConfigsRequest",
    "AlterConfigsResource",
    "AlterPartitionReassignmentsRequest",
    "AlterUserScramCredentialsRequest",
    "AlterableConfig",
    "ApiVersionsRequest",
    "ComponentData",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupHeartbeatRequest",
    "ControlledShutdownRequest",
    "CreateAclsRequest",
    "CreatePartitionsRequest",
    "CreateTopicsRequest",
    "DeleteAclsFilter",
    "DeleteAclsRequest",
    "DeleteGroupsRequest",
    "DeleteRecordsRequest",
    "DeleteTopicsRequest",
    "DescribeAclsRequest",
    "DescribeClientQuotasRequest",
    "DescribeClusterRequest",
    "DescribeConfigsRequest",
    "DescribeConfigsResource",
    "DescribeGroupsRequest",
    "DescribeLogDirsRequest",
    "DescribeProducersRequest",
    "DescribeTransactionsRequest",
    "DescribeUserScramCredentialsRequest",
    "ElectLeadersRequest",
    "EndTxnRequest",
    "EntryData",
    "FetchRequest",
    "FindCoordinatorRequest",
    "HeartbeatRequest",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResource",
    "InitProducerIdRequest",
    "JoinGroupRequest",
    "LeaveGroupRequest",
    "ListGroupsRequest",
    "ListOffsetsRequest",
    "ListPartitionReassignmentsRequest",
    "ListTransactionsRequest",
    "MetadataRequest",
    "OffsetCommitRequest",
    "OffsetDeleteRequest",
    "OffsetFetchRequest",
    "OffsetForLeaderEpochRequest",
    "OpData",
    "ProduceRequest",
    "SaslAuthenticateRequest",
    "SaslHandshakeRequest",
    "ScramCredentialUpsertion",
    "SyncGroupRequest",
    "TxnOffsetCommitRequest",
    "WriteTxnMarkersRequest",
]

AddOffsetsToTxnRequest: TypeAlias = (
    add_offsets_to_txn_v0.AddOffsetsToTxnRequest | add_offsets_to_txn_v1.AddOffsetsToTxnRequest
    | add_offsets_to_txn_v2.AddOffsetsToTxnRequest | add_offsets_to_txn_v3.AddOffsetsToTxnRequest
)
AddPartitionsToTxnRequest: TypeAlias = (
    add_partitions_to_txn_v0.AddPartitionsToTxnRequest
    | add_partitions_to_txn_v1.AddPartitionsToTxnRequest
    | add_partitions_to_txn_v2.AddPartitionsToTxnRequest
    | add_partitions_to_txn_v3.AddPartitionsToTxnRequest
)
AlterClientQuotasRequest: TypeAlias = (
    alter_client_quotas_v0.AlterClientQuotasRequest
    | alter_client_quotas_v1.AlterClientQuotasRequest
)
AlterConfigsRequest: TypeAlias = (
    alter_configs_v0.AlterConfigsRequest | alter_configs_v1.AlterConfigsRequest
    | alter_configs_v2.AlterConfigsRequest
)
AlterPartitionReassignmentsRequest: TypeAlias = (
    alter_partition_reassignments_v0.AlterPartitionReassignmentsRequest
)
AlterUserScramCredentialsRequest: TypeAlias = (
    alter_user_scram_credentials_v0.AlterUserScramCredentialsRequest
)
ApiVersionsRequest: TypeAlias = (
    api_versions_v0.ApiVersionsRequest | api_versions_v1.ApiVersionsRequest
    | api_versions_v2.ApiVersionsRequest | api_versions_v3.ApiVersionsRequest
)
ConsumerGroupDescribeRequest: TypeAlias = (
    consumer_group_describe_v0.ConsumerGroupDescribeRequest
    | consumer_group_describe_v1.ConsumerGroupDescribeRequest
)
ConsumerGroupHeartbeatRequest: TypeAlias = (
    consumer_group_heartbeat_v0.ConsumerGroupHeartbeatRequest
    | consumer_group_heartbeat_v1.ConsumerGroupHeartbeatRequest
)
CreateAclsRequest: TypeAlias = (
    create_acls_v1.CreateAclsRequest | create_acls_v2.CreateAclsRequest
    | create_acls_v3.CreateAclsRequest
)
CreatePartitionsRequest: TypeAlias = (
    create_partitions_v0.CreatePartitionsRequest | create_partitions_v1.CreatePartitionsRequest
    | create_partitions_v2.CreatePartitionsRequest | create_partitions_v3.CreatePartitionsRequest
)
CreateTopicsRequest: TypeAlias = (
    create_topics_v2.CreateTopicsRequest | create_topics_v3.CreateTopicsRequest
    | create_topics_v4.CreateTopicsRequest | create_topics_v5.CreateTopicsRequest
    | create_topics_v6.CreateTopicsRequest | create_topics_v7.CreateTopicsRequest
)
DeleteAclsRequest: TypeAlias = (
    delete_acls_v1.DeleteAclsRequest | delete_acls_v2.DeleteAclsRequest
    | delete_acls_v3.DeleteAclsRequest
)
DeleteGroupsRequest: TypeAlias = (
    delete_groups_v0.DeleteGroupsRequest | delete_groups_v1.DeleteGroupsRequest
    | delete_groups_v2.DeleteGroupsRequest
)
DeleteRecordsRequest: TypeAlias = (
    delete_records_v0.DeleteRecordsRequest | delete_records_v1.DeleteRecordsRequest
    | delete_records_v2.DeleteRecordsRequest
)
DeleteTopicsRequest: TypeAlias = (
    delete_topics_v1.DeleteTopicsRequest | delete_topics_v2.DeleteTopicsRequest
    | delete_topics_v3.DeleteTopicsRequest | delete_topics_v4.DeleteTopicsRequest
    | delete_topics_v5.DeleteTopicsRequest | delete_topics_v6.DeleteTopicsRequest
)
DescribeAclsRequest: TypeAlias = (
    describe_acls_v1.DescribeAclsRequest | describe_acls_v2.DescribeAclsRequest
    | describe_acls_v3.DescribeAclsRequest
)
DescribeClientQuotasRequest: TypeAlias = (
    describe_client_quotas_v0.DescribeClientQuotasRequest
    | describe_client_quotas_v1.DescribeClientQuotasRequest
)
DescribeClusterRequest: TypeAlias = (
    describe_cluster_v0.DescribeClusterRequest | describe_cluster_v1.DescribeClusterRequest
)
DescribeConfigsRequest: TypeAlias = (
    describe_configs_v1.DescribeConfigsRequest | describe_configs_v2.DescribeConfigsRequest
    | describe_configs_v3.DescribeConfigsRequest | describe_configs_v4.DescribeConfigsRequest
)
DescribeGroupsRequest: TypeAlias = (
    describe_groups_v0.DescribeGroupsRequest | describe_groups_v1.DescribeGroupsRequest
    | describe_groups_v2.DescribeGroupsRequest | describe_groups_v3.DescribeGroupsRequest
    | describe_groups_v4.DescribeGroupsRequest | describe_groups_v5.DescribeGroupsRequest
)
DescribeLogDirsRequest: TypeAlias = (
    describe_log_dirs_v1.DescribeLogDirsRequest | describe_log_dirs_v2.DescribeLogDirsRequest
    | describe_log_dirs_v3.DescribeLogDirsRequest | describe_log_dirs_v4.DescribeLogDirsRequest
)
DescribeProducersRequest: TypeAlias = describe_producers_v0.DescribeProducersRequest
DescribeTransactionsRequest: TypeAlias = describe_transactions_v0.DescribeTransactionsRequest
DescribeUserScramCredentialsRequest: TypeAlias = (
    describe_user_scram_credentials_v0.DescribeUserScramCredentialsRequest
)
ElectLeadersRequest: TypeAlias = (
    elect_leaders_v0.ElectLeadersRequest | elect_leaders_v1.ElectLeadersRequest
    | elect_leaders_v2.ElectLeadersRequest
)
EndTxnRequest: TypeAlias = (
    end_txn_v0.EndTxnRequest | end_txn_v1.EndTxnRequest | end_txn_v2.EndTxnRequest
    | end_txn_v3.EndTxnRequest
)
FetchRequest: TypeAlias = (
    fetch_v4.FetchRequest | fetch_v5.FetchRequest | fetch_v6.FetchRequest | fetch_v7.FetchRequest
    | fetch_v8.FetchRequest | fetch_v9.FetchRequest | fetch_v10.FetchRequest
    | fetch_v11.FetchRequest | fetch_v12.FetchRequest
)
FindCoordinatorRequest: TypeAlias = (
    find_coordinator_v0.FindCoordinatorRequest | find_coordinator_v1.FindCoordinatorRequest
    | find_coordinator_v2.FindCoordinatorRequest | find_coordinator_v3.FindCoordinatorRequest
    | find_coordinator_v4.FindCoordinatorRequest
)
HeartbeatRequest: TypeAlias = (
    heartbeat_v0.HeartbeatRequest | heartbeat_v1.HeartbeatRequest | heartbeat_v2.HeartbeatRequest
    | heartbeat_v3.HeartbeatRequest | heartbeat_v4.HeartbeatRequest
)
IncrementalAlterConfigsRequest: TypeAlias = (
    incremental_alter_configs_v0.IncrementalAlterConfigsRequest
    | incremental_alter_configs_v1.IncrementalAlterConfigsRequest
)
InitProducerIdRequest: TypeAlias = (
    init_producer_id_v0.InitProducerIdRequest | init_producer_id_v1.InitProducerIdRequest
    | init_producer_id_v2.InitProducerIdRequest | init_producer_id_v3.InitProducerIdRequest
    | init_producer_id_v4.InitProducerIdRequest
)
JoinGroupRequest: TypeAlias = (
    join_group_v0.JoinGroupRequest | join_group_v1.JoinGroupRequest
    | join_group_v2.JoinGroupRequest | join_group_v3.JoinGroupRequest
    | join_group_v4.JoinGroupRequest | join_group_v5.JoinGroupRequest
    | join_group_v6.JoinGroupRequest | join_group_v7.JoinGroupRequest
)
LeaveGroupRequest: TypeAlias = (
    leave_group_v0.LeaveGroupRequest | leave_group_v1.LeaveGroupRequest
    | leave_group_v2.LeaveGroupRequest | leave_group_v3.LeaveGroupRequest
    | leave_group_v4.LeaveGroupRequest
)
ListGroupsRequest: TypeAlias = (
    list_groups_v0.ListGroupsRequest | list_groups_v1.ListGroupsRequest
    | list_groups_v2.ListGroupsRequest | list_groups_v3.ListGroupsRequest
    | list_groups_v4.ListGroupsRequest | list_groups_v5.ListGroupsRequest
)
ListOffsetsRequest: TypeAlias = (
    list_offsets_v1.ListOffsetsRequest | list_offsets_v2.ListOffsetsRequest
    | list_offsets_v3.ListOffsetsRequest | list_offsets_v4.ListOffsetsRequest
    | list_offsets_v5.ListOffsetsRequest | list_offsets_v6.ListOffsetsRequest
    | list_offsets_v7.ListOffsetsRequest
)
ListPartitionReassignmentsRequest: TypeAlias = (
    list_partition_reassignments_v0.ListPartitionReassignmentsRequest
)
ListTransactionsRequest: TypeAlias = (
    list_transactions_v0.ListTransactionsRequest | list_transactions_v1.ListTransactionsRequest
)
MetadataRequest: TypeAlias = (
    metadata_v0.MetadataRequest | metadata_v1.MetadataRequest | metadata_v2.MetadataRequest
    | metadata_v3.MetadataRequest | metadata_v4.MetadataRequest | metadata_v5.MetadataRequest
    | metadata_v6.MetadataRequest | metadata_v7.MetadataRequest | metadata_v8.MetadataRequest
    | metadata_v9.MetadataRequest | metadata_v10.MetadataRequest | metadata_v11.MetadataRequest
    | metadata_v12.MetadataRequest
)
OffsetCommitRequest: TypeAlias = (
    offset_commit_v2.OffsetCommitRequest | offset_commit_v3.OffsetCommitRequest
    | offset_commit_v4.OffsetCommitRequest | offset_commit_v5.OffsetCommitRequest
    | offset_commit_v6.OffsetCommitRequest | offset_commit_v7.OffsetCommitRequest
    | offset_commit_v8.OffsetCommitRequest | offset_commit_v9.OffsetCommitRequest
)
OffsetDeleteRequest: TypeAlias = offset_delete_v0.OffsetDeleteRequest
OffsetFetchRequest: TypeAlias = (
    offset_fetch_v1.OffsetFetchRequest | offset_fetch_v2.OffsetFetchRequest
    | offset_fetch_v3.OffsetFetchRequest | offset_fetch_v4.OffsetFetchRequest
    | offset_fetch_v5.OffsetFetchRequest | offset_fetch_v6.OffsetFetchRequest
    | offset_fetch_v7.OffsetFetchRequest | offset_fetch_v8.OffsetFetchRequest
    | offset_fetch_v9.OffsetFetchRequest | offset_fetch_v10.OffsetFetchRequest
)
OffsetForLeaderEpochRequest: TypeAlias = (
    offset_for_leader_epoch_v2.OffsetForLeaderEpochRequest
    | offset_for_leader_epoch_v3.OffsetForLeaderEpochRequest
    | offset_for_leader_epoch_v4.OffsetForLeaderEpochRequest
)
ProduceRequest: TypeAlias = (
    produce_v3.ProduceRequest | produce_v4.ProduceRequest | produce_v5.ProduceRequest
    | produce_v6.ProduceRequest | produce_v7.ProduceRequest | produce_v8.ProduceRequest
    | produce_v9.ProduceRequest
)
SaslAuthenticateRequest: TypeAlias = (
    sasl_authenticate_v0.SaslAuthenticateRequest | sasl_authenticate_v1.SaslAuthenticateRequest
    | sasl_authenticate_v2.SaslAuthenticateRequest
)
SaslHandshakeRequest: TypeAlias = (
    sasl_handshake_v0.SaslHandshakeRequest | sasl_handshake_v1.SaslHandshakeRequest
)
SyncGroupRequest: TypeAlias = (
    sync_group_v0.SyncGroupRequest | sync_group_v1.SyncGroupRequest
    | sync_group_v2.SyncGroupRequest | sync_group_v3.SyncGroupRequest
    | sync_group_v4.SyncGroupRequest | sync_group_v5.SyncGroupRequest
)
TxnOffsetCommitRequest: TypeAlias = (
    txn_offset_commit_v0.TxnOffsetCommitRequest | txn_offset_commit_v1.TxnOffsetCommitRequest
    | txn_offset_commit_v2.TxnOffsetCommitRequest | txn_offset_commit_v3.TxnOffsetCommitRequest
)
WriteTxnMarkersRequest: TypeAlias = write_txn_markers_v1.WriteTxnMarkersRequest

# Entities nested in requests that handlers' helpers take, over the same versions.

AclCreation: TypeAlias = (
    create_acls_v1.request.AclCreation | create_acls_v2.request.AclCreation
    | create_acls_v3.request.AclCreation
)
DeleteAclsFilter: TypeAlias = (
    delete_acls_v1.request.DeleteAclsFilter | delete_acls_v2.request.DeleteAclsFilter
    | delete_acls_v3.request.DeleteAclsFilter
)
ComponentData: TypeAlias = (
    describe_client_quotas_v0.request.ComponentData
    | describe_client_quotas_v1.request.ComponentData
)
EntryData: TypeAlias = (
    alter_client_quotas_v0.request.EntryData | alter_client_quotas_v1.request.EntryData
)
OpData: TypeAlias = alter_client_quotas_v0.request.OpData | alter_client_quotas_v1.request.OpData
DescribeConfigsResource: TypeAlias = (
    describe_configs_v1.request.DescribeConfigsResource
    | describe_configs_v2.request.DescribeConfigsResource
    | describe_configs_v3.request.DescribeConfigsResource
    | describe_configs_v4.request.DescribeConfigsResource
)
AlterConfigsResource: TypeAlias = (
    alter_configs_v0.request.AlterConfigsResource | alter_configs_v1.request.AlterConfigsResource
    | alter_configs_v2.request.AlterConfigsResource
)
IncrementalAlterConfigsResource: TypeAlias = (
    incremental_alter_configs_v0.request.AlterConfigsResource
    | incremental_alter_configs_v1.request.AlterConfigsResource
)
AlterableConfig: TypeAlias = (
    incremental_alter_configs_v0.request.AlterableConfig
    | incremental_alter_configs_v1.request.AlterableConfig
)
ScramCredentialUpsertion: TypeAlias = (
    alter_user_scram_credentials_v0.request.ScramCredentialUpsertion
)
