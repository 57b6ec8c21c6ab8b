"""Every broker metric, defined once.

Names follow Prometheus conventions: prefix ``odradek_``, base units in the name
(``_bytes``, ``_seconds``, ``_records``), counters end in ``_total``. Broker-wide aggregates
are ``odradek_broker_*``; per-topic traffic is ``odradek_topic_*`` and exists only when
per-topic labels are switched on (:class:`~odradek.metrics.options.MetricsOptions`), so the
default label cardinality does not grow with the number of topics.

Per-partition state (``odradek_log_*``, ``odradek_partition_*``) is Kafka's own granularity;
partition-level replication series are exported only by the partition's leader, so summing
them over brokers counts each partition once.

Which labels identify the *target* (``namespace``, ``cluster``, ``broker``) is not decided
here: they are attached by the scrape configuration (see
:mod:`odradek_monitoring.prometheus`), as Prometheus recommends, so the same broker exports
the same series in every deployment.
"""

from __future__ import annotations

from .catalog_types import Feed, Kind, MetricSpec

__all__ = ["BROKER_METRICS", "BY_NAME"]

C, G, H = Kind.COUNTER, Kind.GAUGE, Kind.HISTOGRAM
SCRAPED = Feed.SCRAPED

REQUEST_SECONDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                   0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
DISK_SECONDS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 2.5, 5.0, 10.0)
LOOP_LAG_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
CLEANER_SECONDS = (0.01, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
COORDINATION_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                        1.0, 2.5, 5.0, 10.0)

TOPIC = ("topic",)
PARTITION = ("topic", "partition")

# --- identity -------------------------------------------------------------------------
BROKER_INFO = MetricSpec(
    "odradek_broker_info", G, "Always 1; labels describe the broker build and cluster.",
    ("version", "cluster_id", "rack"), SCRAPED, "BrokerInfo")

# --- client traffic ----------------------------------------------------------------------
BYTES_IN = MetricSpec(
    "odradek_broker_bytes_in_total", C,
    "Record batch bytes appended from Produce requests (client traffic, replication excluded).",
    source="traffic.produced")
MESSAGES_IN = MetricSpec(
    "odradek_broker_messages_in_total", C, "Records appended from Produce requests.",
    source="traffic.produced")
BYTES_OUT = MetricSpec(
    "odradek_broker_bytes_out_total", C,
    "Record bytes sent in Fetch responses to consumers (replication excluded).",
    source="traffic.fetched")
REPLICATION_BYTES_IN = MetricSpec(
    "odradek_broker_replication_bytes_in_total", C,
    "Record bytes appended by this broker's replica fetchers.", source="traffic.replicated_in")
REPLICATION_BYTES_OUT = MetricSpec(
    "odradek_broker_replication_bytes_out_total", C,
    "Record bytes sent in Fetch responses to follower replicas.",
    source="traffic.replicated_out")
TOPIC_BYTES_IN = MetricSpec(
    "odradek_topic_bytes_in_total", C,
    "Per-topic odradek_broker_bytes_in_total (only with per-topic labels on).", TOPIC,
    source="traffic.produced")
TOPIC_MESSAGES_IN = MetricSpec(
    "odradek_topic_messages_in_total", C,
    "Per-topic odradek_broker_messages_in_total (only with per-topic labels on).", TOPIC,
    source="traffic.produced")
TOPIC_BYTES_OUT = MetricSpec(
    "odradek_topic_bytes_out_total", C,
    "Per-topic odradek_broker_bytes_out_total (only with per-topic labels on).", TOPIC,
    source="traffic.fetched")

# --- requests ----------------------------------------------------------------------------
REQUESTS = MetricSpec(
    "odradek_requests_total", C, "Requests handled, by API.", ("api",),
    source="requests.observe")
REQUEST_ERRORS = MetricSpec(
    "odradek_request_errors_total", C,
    "Error codes returned, by API and Kafka error name (one per partition or resource in error).",
    ("api", "error"), source="requests.error")
REQUEST_DURATION = MetricSpec(
    "odradek_request_duration_seconds", H,
    "Time from a request's frame being read to its response written, by API.", ("api",),
    source="requests.observe", buckets=REQUEST_SECONDS)
REQUEST_PHASE_DURATION = MetricSpec(
    "odradek_request_phase_duration_seconds", H,
    "Request time split as Kafka does: queue (read to handler start), local (handler until "
    "it returns), remote (waiting in purgatory or on ZooKeeper), send (response ready until "
    "written, including waiting behind earlier responses on the connection).",
    ("api", "phase"), source="requests.observe", buckets=REQUEST_SECONDS)
PURGATORY_SIZE = MetricSpec(
    "odradek_purgatory_size", G, "Delayed operations waiting, by operation.", ("operation",),
    SCRAPED, "PurgatorySource.purgatory_sizes")
PURGATORY_EXPIRATIONS = MetricSpec(
    "odradek_purgatory_expirations_total", C,
    "Delayed operations completed by their timeout, by operation.", ("operation",),
    source="purgatory.expired")

# --- incremental fetch sessions (KIP-227; Kafka's FetchSessionCache metrics) ------------
FETCH_SESSIONS = MetricSpec(
    "odradek_fetch_sessions", G, "Incremental fetch sessions cached by this broker.",
    source="fetch_sessions.changed")
FETCH_SESSION_PARTITIONS = MetricSpec(
    "odradek_fetch_session_partitions", G,
    "Partitions held by this broker's incremental fetch sessions.",
    source="fetch_sessions.changed")
FETCH_SESSION_EVICTIONS = MetricSpec(
    "odradek_fetch_session_evictions_total", C,
    "Fetch sessions evicted to make room for another (the cache is full: "
    "max.incremental.fetch.session.cache.slots).", source="fetch_sessions.evicted")

# --- client quotas (only while some quota is configured; one series per quota sharer) -----
QUOTA_LABELS = ("user", "client_id")
QUOTA_PRODUCE_RATE = MetricSpec(
    "odradek_quota_produce_bytes_per_second", G,
    "Produce request bytes per second of a quota entity, over the quota windows (Kafka's "
    "Produce byte-rate); user or client_id is empty where the quota is shared by all.",
    QUOTA_LABELS, SCRAPED, "QuotaSource.quota_states")
QUOTA_FETCH_RATE = MetricSpec(
    "odradek_quota_fetch_bytes_per_second", G,
    "Fetch response bytes per second of a quota entity (Kafka's Fetch byte-rate).",
    QUOTA_LABELS, SCRAPED, "QuotaSource.quota_states")
QUOTA_REQUEST_TIME = MetricSpec(
    "odradek_quota_request_time_ratio", G,
    "Share of one request-handling thread a quota entity used, over the quota windows "
    "(Kafka's request-time percentage / 100).", QUOTA_LABELS, SCRAPED,
    "QuotaSource.quota_states")
QUOTA_THROTTLE_TIME = MetricSpec(
    "odradek_quota_throttle_time_seconds_total", C,
    "Time responses told a quota entity to wait (throttle_time_ms) while its connection was "
    "muted, by quota (produce, fetch, request).", ("quota", *QUOTA_LABELS), SCRAPED,
    "QuotaSource.quota_states")
QUOTA_THROTTLED = MetricSpec(
    "odradek_quota_throttled_responses_total", C,
    "Responses that throttled a quota entity, by quota (produce, fetch, request).",
    ("quota", *QUOTA_LABELS), SCRAPED, "QuotaSource.quota_states")

# --- network and event loop ----------------------------------------------------------------
CONNECTIONS_OPENED = MetricSpec(
    "odradek_connections_opened_total", C, "Client connections accepted, by listener.",
    ("listener",), source="connections.opened")
CONNECTIONS_CLOSED = MetricSpec(
    "odradek_connections_closed_total", C, "Client connections closed, by listener.",
    ("listener",), source="connections.closed")
CONNECTIONS = MetricSpec(
    "odradek_connections", G, "Open client connections, by listener.", ("listener",),
    source="connections (opened - closed)")
AUTHENTICATIONS = MetricSpec(
    "odradek_authentications_total", C,
    "SASL logins (and re-authentications) on SASL listeners, by listener and result "
    "(success, failure): failures are wrong passwords, unknown users or broken exchanges.",
    ("listener", "result"), source="connections.authenticated")
AUTHORIZATION_DENIALS = MetricSpec(
    "odradek_authorization_denials_total", C,
    "Actions the ACL authorizer denied, by API, resource type and operation (a request "
    "denied on several topics counts once per topic).",
    ("api", "resource_type", "operation"), source="connections.denied")
EVENT_LOOP_LAG = MetricSpec(
    "odradek_event_loop_lag_seconds", H,
    "How late the event loop ran a timer: the saturation of odradek's single network and "
    "request-handler thread.", source="EventLoopLagProbe", buckets=LOOP_LAG_SECONDS)
EVENT_LOOP_TASKS = MetricSpec(
    "odradek_event_loop_tasks", G, "Tasks alive on the broker's event loop.", (), SCRAPED,
    "the broker's event loop")

# --- log storage ---------------------------------------------------------------------------
LOG_SIZE = MetricSpec(
    "odradek_log_size_bytes", G, "Bytes of all segments of a partition's log.", PARTITION,
    SCRAPED, "PartitionSource.partitions")
LOG_SEGMENTS = MetricSpec(
    "odradek_log_segments", G, "Segments in a partition's log.", PARTITION, SCRAPED,
    "PartitionSource.partitions")
LOG_START_OFFSET = MetricSpec(
    "odradek_log_start_offset", G, "First offset still in a partition's log.", PARTITION,
    SCRAPED, "PartitionSource.partitions")
LOG_END_OFFSET = MetricSpec(
    "odradek_log_end_offset", G, "Offset the next record appended to a partition will get.",
    PARTITION, SCRAPED, "PartitionSource.partitions")
LOG_FLUSH_DURATION = MetricSpec(
    "odradek_log_flush_duration_seconds", H,
    "Time to write a log's buffered data to the OS (flush), per flush.",
    source="storage.flushed", buckets=DISK_SECONDS)
LOG_FSYNC_DURATION = MetricSpec(
    "odradek_log_fsync_duration_seconds", H, "Time of one fsync of a segment or index file.",
    source="storage.fsynced", buckets=DISK_SECONDS)
LOG_RECOVERY_DURATION = MetricSpec(
    "odradek_log_recovery_duration_seconds", G,
    "How long loading and recovering the logs took at the last start.",
    source="storage.recovered")
LOG_RECOVERED_PARTITIONS = MetricSpec(
    "odradek_log_recovery_partitions", G,
    "Partitions loaded at the last start, by whether they needed recovery (clean=false).",
    ("clean",), source="storage.recovered")
LOG_DIR_CAPACITY = MetricSpec(
    "odradek_log_dir_capacity_bytes", G, "Size of the filesystem holding a log dir.",
    ("log_dir",), SCRAPED, "log.dirs (statvfs)")
LOG_DIR_FREE = MetricSpec(
    "odradek_log_dir_free_bytes", G, "Bytes available to odradek on a log dir's filesystem.",
    ("log_dir",), SCRAPED, "log.dirs (statvfs)")
CLEANER_RUNS = MetricSpec(
    "odradek_log_cleaner_runs_total", C, "Compaction passes of the log cleaner.",
    source="cleaner.ran")
CLEANER_ERRORS = MetricSpec(
    "odradek_log_cleaner_errors_total", C, "Compaction passes that failed.",
    source="cleaner.failed")
CLEANER_DURATION = MetricSpec(
    "odradek_log_cleaner_run_duration_seconds", H, "Duration of one compaction pass.",
    source="cleaner.ran", buckets=CLEANER_SECONDS)
CLEANER_READ = MetricSpec(
    "odradek_log_cleaner_read_bytes_total", C, "Bytes read by the log cleaner.",
    source="cleaner.ran")
CLEANER_WRITTEN = MetricSpec(
    "odradek_log_cleaner_written_bytes_total", C, "Bytes written by the log cleaner.",
    source="cleaner.ran")
CLEANER_LAST_RUN = MetricSpec(
    "odradek_log_cleaner_last_run_timestamp_seconds", G,
    "Unix time the last compaction pass ended (0 = never).", source="cleaner.ran")

# --- replication (this broker's replicas) ---------------------------------------------------
PARTITIONS = MetricSpec(
    "odradek_broker_partitions", G, "Partition replicas hosted by this broker.", (), SCRAPED,
    "PartitionSource.partitions")
LEADER_PARTITIONS = MetricSpec(
    "odradek_broker_leader_partitions", G, "Partitions this broker leads.", (), SCRAPED,
    "PartitionSource.partitions")
UNDER_REPLICATED = MetricSpec(
    "odradek_broker_under_replicated_partitions", G,
    "Partitions led here whose ISR is smaller than their replica set.", (), SCRAPED,
    "PartitionSource.partitions")
UNDER_MIN_ISR = MetricSpec(
    "odradek_broker_under_min_isr_partitions", G,
    "Partitions led here whose ISR is below min.insync.replicas (acks=all produce fails).",
    (), SCRAPED, "PartitionSource.partitions")
AT_MIN_ISR = MetricSpec(
    "odradek_broker_at_min_isr_partitions", G,
    "Partitions led here whose ISR equals min.insync.replicas (one more loss stops acks=all).",
    (), SCRAPED, "PartitionSource.partitions")
PARTITION_REPLICAS = MetricSpec(
    "odradek_partition_replicas", G, "Assigned replicas of a partition (exported by its leader).",
    PARTITION, SCRAPED, "PartitionSource.partitions")
PARTITION_ISR = MetricSpec(
    "odradek_partition_in_sync_replicas", G, "In-sync replicas of a partition (by its leader).",
    PARTITION, SCRAPED, "PartitionSource.partitions")
PARTITION_UNDER_REPLICATED = MetricSpec(
    "odradek_partition_under_replicated", G, "1 if the partition's ISR is short (by its leader).",
    PARTITION, SCRAPED, "PartitionSource.partitions")
FETCHER_MAX_LAG = MetricSpec(
    "odradek_replica_fetcher_max_lag_records", G,
    "Largest gap, over the partitions this broker follows, between the leader's log end "
    "offset (as last seen) and the local one.", (), SCRAPED, "PartitionSource.partitions")
ISR_SHRINKS = MetricSpec(
    "odradek_isr_shrinks_total", C, "Replicas removed from an ISR by this broker as leader.",
    source="replication.isr_shrunk")
ISR_EXPANDS = MetricSpec(
    "odradek_isr_expands_total", C, "Replicas added back to an ISR by this broker as leader.",
    source="replication.isr_expanded")
FETCHER_FAILURES = MetricSpec(
    "odradek_replica_fetcher_failures_total", C,
    "Unexpected errors (bugs, not network or Kafka errors) that interrupted a replica "
    "fetcher; each is logged with its traceback and the fetcher resumes after a backoff.",
    source="replication.fetcher_failed")
LEADER_THROTTLED_BYTES = MetricSpec(
    "odradek_leader_replication_throttled_bytes_total", C,
    "Record bytes this broker sent as leader to followers of throttled replicas "
    "(leader.replication.throttled.replicas), counted against "
    "leader.replication.throttled.rate.", source="replication.leader_throttled")
FOLLOWER_THROTTLED_BYTES = MetricSpec(
    "odradek_follower_replication_throttled_bytes_total", C,
    "Record bytes this broker fetched as follower for throttled replicas "
    "(follower.replication.throttled.replicas), counted against "
    "follower.replication.throttled.rate.", source="replication.follower_throttled")

# --- controller --------------------------------------------------------------------------
CONTROLLER_ACTIVE = MetricSpec(
    "odradek_controller_active", G,
    "1 on the active controller, else 0 (the cluster-wide sum must be exactly 1).", (),
    SCRAPED, "ControllerSource.controller_state")
OFFLINE_PARTITIONS = MetricSpec(
    "odradek_controller_offline_partitions", G,
    "Partitions without a live leader (reported by the active controller; 0 elsewhere).", (),
    SCRAPED, "ControllerSource.controller_state")
CONTROLLER_TOPICS = MetricSpec(
    "odradek_controller_topics", G, "Topics in the cluster (active controller only; 0 elsewhere).",
    (), SCRAPED, "ControllerSource.controller_state")
CONTROLLER_PARTITIONS = MetricSpec(
    "odradek_controller_partitions", G,
    "Partitions in the cluster (active controller only; 0 elsewhere).", (), SCRAPED,
    "ControllerSource.controller_state")
CONTROLLER_QUEUE_SIZE = MetricSpec(
    "odradek_controller_event_queue_size", G, "Controller events waiting to be processed.", (),
    SCRAPED, "ControllerSource.controller_state")
CONTROLLER_QUEUE_TIME = MetricSpec(
    "odradek_controller_event_queue_time_seconds", H,
    "Time a controller event waited before processing.", source="controller.event_dequeued",
    buckets=COORDINATION_SECONDS)
CONTROLLER_ACTIVATIONS = MetricSpec(
    "odradek_controller_activations_total", C, "Times this broker became the active controller.",
    source="controller.activated")
LEADER_ELECTIONS = MetricSpec(
    "odradek_controller_leader_elections_total", C,
    "Partition leader elections made by this broker as controller.",
    source="controller.leader_elected")
UNCLEAN_LEADER_ELECTIONS = MetricSpec(
    "odradek_controller_unclean_leader_elections_total", C,
    "Leader elections that picked a replica outside the ISR (data may be lost).",
    source="controller.leader_elected")

# --- transactions -----------------------------------------------------------------------
TXN_IDS = MetricSpec(
    "odradek_transaction_coordinator_transactional_ids", G,
    "Transactional ids this broker coordinates, by Kafka state (Empty, Ongoing, "
    "PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, ...).", ("state",), SCRAPED,
    "TransactionSource.transaction_states")
TXN_STARTED = MetricSpec(
    "odradek_transactions_started_total", C,
    "Transactions begun at this coordinator (an id's first partition added).",
    source="transactions.started")
TXN_COMMITTED = MetricSpec(
    "odradek_transactions_committed_total", C,
    "Transactions committed at this coordinator (every COMMIT marker written).",
    source="transactions.completed")
TXN_ABORTED = MetricSpec(
    "odradek_transactions_aborted_total", C,
    "Transactions aborted at this coordinator (every ABORT marker written), timed-out and "
    "fenced ones included.", source="transactions.completed")
TXN_TIMED_OUT = MetricSpec(
    "odradek_transactions_timed_out_total", C,
    "Transactions this coordinator aborted because they outlived transaction.timeout.ms.",
    source="transactions.timed_out")
TXN_MARKER_DURATION = MetricSpec(
    "odradek_transaction_marker_write_duration_seconds", H,
    "Time from PrepareCommit/PrepareAbort being written to every partition having its "
    "marker (how long an ending transaction keeps its partitions' LSO back).",
    source="transactions.markers_written", buckets=COORDINATION_SECONDS)
OPEN_TRANSACTIONS = MetricSpec(
    "odradek_broker_open_transactions", G,
    "Open transactions (transactional data without a marker yet) over the partitions led "
    "here; each holds its partition's last stable offset back.", (), SCRAPED,
    "PartitionSource.partitions")
OLDEST_OPEN_TRANSACTION = MetricSpec(
    "odradek_broker_oldest_open_transaction_age_seconds", G,
    "Age of the oldest open transaction on the partitions led here, by its first batch's "
    "timestamp (0 = none). Past transaction.max.timeout.ms its coordinator should have "
    "aborted it: a hanging transaction (kafka-transactions find-hanging).", (), SCRAPED,
    "PartitionSource.partitions")
PARTITION_LSO_LAG = MetricSpec(
    "odradek_partition_last_stable_offset_lag_records", G,
    "Log end offset minus last stable offset of a partition (by its leader; only with "
    "per-topic labels on): what read_committed consumers cannot read yet.", PARTITION,
    SCRAPED, "PartitionSource.partitions")

# --- ZooKeeper ----------------------------------------------------------------------------
ZK_SESSION_STATE = MetricSpec(
    "odradek_zookeeper_session_state", G,
    "1 for the current ZooKeeper session state (connected, suspended, lost), 0 for the others.",
    ("state",), source="zookeeper.state_changed")
ZK_EXPIRATIONS = MetricSpec(
    "odradek_zookeeper_session_expirations_total", C,
    "ZooKeeper sessions lost (expired or closed by the server).",
    source="zookeeper.state_changed")
ZK_REQUEST_DURATION = MetricSpec(
    "odradek_zookeeper_request_duration_seconds", H, "ZooKeeper request latency, by operation.",
    ("operation",), source="zookeeper.request", buckets=COORDINATION_SECONDS)

# --- the metrics system itself -----------------------------------------------------------
SERIES_DROPPED = MetricSpec(
    "odradek_metrics_series_dropped_total", C,
    "Series not exported because a cardinality cap was reached, by metric (counted once per "
    "collection, so it grows while the cap is exceeded).", ("metric",),
    source="cardinality caps")

BROKER_METRICS: tuple[MetricSpec, ...] = tuple(
    value for value in list(globals().values()) if isinstance(value, MetricSpec)
)
"""Every broker metric except consumer-group lag (:data:`odradek.metrics.lag.LAG_METRICS`)."""

BY_NAME: dict[str, MetricSpec] = {spec.name: spec for spec in BROKER_METRICS}
