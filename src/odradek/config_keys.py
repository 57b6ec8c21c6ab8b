"""Every broker property odradek accepts, declared once: name, type, default, doc.

Kafka's names and defaults (``server.properties`` of a Kafka broker in ZooKeeper mode works
unchanged), plus odradek's own ``metrics.*``. An unknown key is an error
(:class:`~odradek.config.BrokerConfig`), the docs tables are rendered from here
(:mod:`odradek.reference_docs`), and :mod:`odradek.config_sections` names which component
reads which. A property with a ``topic_name`` is the broker-wide default of that topic
config, which storage owns (:mod:`odradek.storage.log_config`).
"""

from __future__ import annotations

from odradek.config_types import (
    BOOL,
    DOUBLE,
    INT,
    LIST,
    LISTENERS,
    LONG,
    LONG_MAX,
    OPTIONAL_STR,
    STR,
    ConfigDef,
)

__all__ = ["BROKER_CONFIGS", "broker_default_name"]


def _defs(*defs: ConfigDef) -> dict[str, ConfigDef]:
    return {definition.name: definition for definition in defs}


BROKER_CONFIGS: dict[str, ConfigDef] = _defs(
    # Identity and network
    ConfigDef("broker.id", INT, 0, "This broker's id, unique in the cluster.", at_least=0),
    ConfigDef("broker.rack", OPTIONAL_STR, None, "Rack of this broker (placement)."),
    ConfigDef("listeners", LISTENERS, LISTENERS("PLAINTEXT://127.0.0.1:9092"),
              "Addresses the broker listens on."),
    ConfigDef("advertised.listeners", LISTENERS, None,
              "Addresses published to clients; defaults to listeners."),
    ConfigDef("listener.security.protocol.map", LIST,
              ["PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT",
               "SASL_SSL:SASL_SSL"],
              "Listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), "
              "as NAME:PROTOCOL pairs."),
    ConfigDef("inter.broker.listener.name", OPTIONAL_STR, None,
              "Listener used between brokers; defaults to the first listener."),
    ConfigDef("security.inter.broker.protocol", OPTIONAL_STR, None,
              "Kafka's older way to choose it: the listener named after this protocol "
              "(e.g. SASL_PLAINTEXT); not together with inter.broker.listener.name."),
    ConfigDef("socket.request.max.bytes", INT, 104857600, "Largest request frame accepted.",
              at_least=1),
    ConfigDef("socket.send.buffer.bytes", INT, 102400, "SO_SNDBUF; -1 for the OS default."),
    ConfigDef("socket.receive.buffer.bytes", INT, 102400, "SO_RCVBUF; -1 for the OS default."),
    ConfigDef("connections.max.idle.ms", LONG, 600000, "Idle connections are closed after this."),
    ConfigDef("request.timeout.ms", INT, 30000, "Upper bound for delayed operations."),
    # Security (docs/security.md)
    ConfigDef("ssl.keystore.type", STR, "PEM", "Format of the key store; only PEM."),
    ConfigDef("ssl.keystore.location", OPTIONAL_STR, None,
              "PEM file with the broker's private key and certificate chain."),
    ConfigDef("ssl.keystore.password", OPTIONAL_STR, None,
              "Password of an encrypted private key in ssl.keystore.location.", sensitive=True),
    ConfigDef("ssl.key.password", OPTIONAL_STR, None,
              "Password of the private key (used when ssl.keystore.password is unset).",
              sensitive=True),
    ConfigDef("ssl.keystore.certificate.chain", OPTIONAL_STR, None,
              "The certificate chain as PEM text (instead of ssl.keystore.location)."),
    ConfigDef("ssl.keystore.key", OPTIONAL_STR, None,
              "The private key as PEM text (instead of ssl.keystore.location).",
              sensitive=True),
    ConfigDef("ssl.truststore.type", STR, "PEM", "Format of the trust store; only PEM."),
    ConfigDef("ssl.truststore.location", OPTIONAL_STR, None,
              "PEM bundle of the CAs trusted for client certificates and, between brokers, "
              "for the other brokers' certificates."),
    ConfigDef("ssl.truststore.certificates", OPTIONAL_STR, None,
              "Trusted CA certificates as PEM text (instead of ssl.truststore.location)."),
    ConfigDef("ssl.client.auth", STR, "none",
              "Client certificates on SSL listeners: none, requested or required. A client "
              "that presents one is User:<subject DN> unless it also authenticates by SASL."),
    ConfigDef("ssl.endpoint.identification.algorithm", STR, "https",
              "https: brokers verify the host name in each other's certificates; empty: not."),
    ConfigDef("sasl.enabled.mechanisms", LIST, ["SCRAM-SHA-256", "SCRAM-SHA-512"],
              "SASL mechanisms of SASL_* listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 "
              "(Kafka's default, GSSAPI, is not supported). PLAIN is checked against the "
              "user's stored SCRAM credential."),
    ConfigDef("sasl.mechanism.inter.broker.protocol", STR, "SCRAM-SHA-256",
              "Mechanism brokers use with each other on a SASL inter-broker listener."),
    ConfigDef("sasl.jaas.config", OPTIONAL_STR, None,
              "The broker's own credentials on a SASL inter-broker listener, in JAAS form: "
              "org.apache.kafka.common.security.scram.ScramLoginModule required "
              "username=\"admin\" password=\"...\";", sensitive=True),
    ConfigDef("connections.max.reauth.ms", LONG, 0,
              "Lifetime of a SASL session: clients must re-authenticate (KIP-368) within it, "
              "or their connection is closed at their next request. 0: sessions never expire.",
              at_least=0),
    ConfigDef("sasl.server.max.receive.size", INT, 524288,
              "Largest request accepted on a SASL listener before the client authenticated.",
              at_least=1),
    ConfigDef("connection.failed.authentication.delay.ms", INT, 100,
              "Delay before answering a failed authentication (slows password guessing).",
              at_least=0),
    # Authorization (docs/security.md)
    ConfigDef("authorizer.class.name", STR, "",
              "Turns ACL authorization on: kafka.security.authorizer.AclAuthorizer (or "
              "kafka.security.auth.SimpleAclAuthorizer, or odradek's alias acl); ACLs are "
              "kept in ZooKeeper as Kafka keeps them. Empty: every request is allowed."),
    ConfigDef("super.users", STR, "",
              "Principals allowed everything whatever the ACLs, separated by semicolons: "
              "User:admin;User:broker."),
    ConfigDef("allow.everyone.if.no.acl.found", BOOL, False,
              "With an authorizer: whether a resource no ACL matches is open to everyone "
              "(false: denied to all but super.users)."),
    # ZooKeeper
    ConfigDef("zookeeper.connect", STR, "127.0.0.1:2181",
              "ZooKeeper connect string, optionally with a chroot (host:port/path)."),
    ConfigDef("zookeeper.session.timeout.ms", INT, 18000, "ZooKeeper session timeout.",
              at_least=1),
    ConfigDef("zookeeper.connection.timeout.ms", INT, 18000,
              "How long to wait for the first ZooKeeper connection."),
    # Topics
    ConfigDef("num.partitions", INT, 1, "Partitions of an auto-created topic.", at_least=1),
    ConfigDef("default.replication.factor", INT, 1, "Replication factor of auto-created topics.",
              at_least=1),
    ConfigDef("auto.create.topics.enable", BOOL, True,
              "Create a topic when a client asks for its metadata."),
    ConfigDef("delete.topic.enable", BOOL, True, "Allow deleting topics."),
    ConfigDef("auto.leader.rebalance.enable", BOOL, True, "Move leadership back to preferred."),
    ConfigDef("leader.imbalance.check.interval.seconds", LONG, 300, "Rebalance check period."),
    ConfigDef("controlled.shutdown.enable", BOOL, True, "Move leadership away before stopping."),
    ConfigDef("controlled.shutdown.max.retries", INT, 3,
              "ControlledShutdown attempts before stopping anyway.", at_least=0),
    ConfigDef("controlled.shutdown.retry.backoff.ms", LONG, 5000,
              "Pause between ControlledShutdown attempts.", at_least=0),
    ConfigDef("leader.imbalance.per.broker.percentage", INT, 10,
              "Imbalance (% of a broker's preferred partitions led elsewhere) that triggers "
              "a rebalance.", at_least=0),
    ConfigDef("controller.fast.failover.enable", BOOL, True,
              "odradek: fail a broker (and depose a controller) as soon as its connections "
              "are refused, instead of waiting for its ZooKeeper session to expire."),
    # Replication
    ConfigDef("min.insync.replicas", INT, 1, "Replicas that must have a write for acks=all.",
              topic_name="min.insync.replicas", at_least=1),
    ConfigDef("unclean.leader.election.enable", BOOL, False,
              "Allow an out-of-sync replica to become leader (may lose data).",
              topic_name="unclean.leader.election.enable"),
    ConfigDef("replica.lag.time.max.ms", LONG, 30000,
              "A follower that has not caught up for this long leaves the ISR."),
    ConfigDef("replica.fetch.max.bytes", INT, 1048576, "Bytes per partition a follower fetches."),
    ConfigDef("replica.fetch.wait.max.ms", INT, 500, "Follower long-poll wait."),
    ConfigDef("replica.fetch.min.bytes", INT, 1, "Follower fetch min bytes."),
    ConfigDef("num.replica.fetchers", INT, 1, "Fetcher tasks per source broker.", at_least=1),
    ConfigDef("replica.fetch.response.max.bytes", INT, 10485760,
              "Bytes one follower fetch response may hold.", at_least=0),
    ConfigDef("replica.fetch.backoff.ms", INT, 1000,
              "Follower pause after a fetch error.", at_least=0),
    ConfigDef("replica.socket.timeout.ms", INT, 30000,
              "Follower request timeout towards the leader.", at_least=1),
    ConfigDef("replication.quota.window.num", INT, 11,
              "Samples the replication throttles' rates are measured over (the leader's and "
              "the follower's *.replication.throttled.rate).", at_least=1),
    ConfigDef("replication.quota.window.size.seconds", INT, 1,
              "Length of one replication throttle sample.", at_least=1),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", LONG, 5000,
              "How often high watermarks are checkpointed."),
    ConfigDef("max.incremental.fetch.session.cache.slots", INT, 1000,
              "Incremental fetch sessions (KIP-227) the broker keeps; 0 turns them off.",
              at_least=0),
    # Messages
    ConfigDef("message.max.bytes", INT, 1048588, "Largest record batch accepted.",
              topic_name="max.message.bytes", at_least=0),
    ConfigDef("compression.type", STR, "producer", "Topic compression (producer keeps the codec).",
              topic_name="compression.type"),
    ConfigDef("log.message.timestamp.type", STR, "CreateTime", "CreateTime or LogAppendTime.",
              topic_name="message.timestamp.type"),
    # Log
    ConfigDef("log.dirs", LIST, None, "Directories holding partition logs."),
    ConfigDef("log.dir", STR, "/tmp/odradek-logs", "Single log directory (when log.dirs unset)."),
    ConfigDef("log.segment.bytes", INT, 1073741824, "Segment size before a roll.",
              topic_name="segment.bytes", at_least=14),
    ConfigDef("log.roll.ms", LONG, None, "Segment age before a roll (overrides hours)."),
    ConfigDef("log.roll.hours", INT, 168, "Segment age before a roll.", at_least=1),
    ConfigDef("log.index.size.max.bytes", INT, 10485760, "Preallocated offset index size.",
              topic_name="segment.index.bytes", at_least=4),
    ConfigDef("log.index.interval.bytes", INT, 4096, "Bytes between offset index entries.",
              topic_name="index.interval.bytes", at_least=0),
    ConfigDef("log.flush.interval.messages", LONG, LONG_MAX, "Messages between fsyncs.",
              topic_name="flush.messages", at_least=1),
    ConfigDef("log.flush.interval.ms", LONG, None, "Milliseconds between fsyncs.",
              topic_name="flush.ms"),
    ConfigDef("log.flush.scheduler.interval.ms", LONG, LONG_MAX, "Flusher check period."),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", INT, 60000,
              "Recovery-point checkpoint period."),
    ConfigDef("log.retention.ms", LONG, None, "Retention by age (overrides minutes/hours)."),
    ConfigDef("log.retention.minutes", INT, None, "Retention by age in minutes."),
    ConfigDef("log.retention.hours", INT, 168, "Retention by age in hours."),
    ConfigDef("log.retention.bytes", LONG, -1, "Retention by partition size.",
              topic_name="retention.bytes"),
    ConfigDef("log.retention.check.interval.ms", LONG, 300000, "Retention check period.",
              at_least=1),
    ConfigDef("log.segment.delete.delay.ms", LONG, 60000, "Delay before deleting a segment file.",
              topic_name="file.delete.delay.ms", at_least=0),
    ConfigDef("log.cleanup.policy", LIST, ["delete"], "delete, compact or both.",
              topic_name="cleanup.policy"),
    ConfigDef("log.cleaner.enable", BOOL, True, "Run the compaction thread."),
    ConfigDef("log.cleaner.threads", INT, 1, "Compaction threads.", at_least=0),
    ConfigDef("log.cleaner.dedupe.buffer.size", LONG, 134217728, "Compaction key-map memory."),
    ConfigDef("log.cleaner.backoff.ms", LONG, 15000, "Sleep when nothing is cleanable."),
    ConfigDef("log.cleaner.min.cleanable.ratio", DOUBLE, 0.5,
              "Dirty ratio that makes a log cleanable.", topic_name="min.cleanable.dirty.ratio"),
    ConfigDef("log.cleaner.delete.retention.ms", LONG, 86400000, "How long tombstones stay.",
              topic_name="delete.retention.ms"),
    ConfigDef("log.cleaner.min.compaction.lag.ms", LONG, 0, "Minimum age before compaction.",
              topic_name="min.compaction.lag.ms"),
    ConfigDef("log.cleaner.max.compaction.lag.ms", LONG, LONG_MAX, "Maximum uncompacted age.",
              topic_name="max.compaction.lag.ms"),
    ConfigDef("log.preallocate", BOOL, False, "Preallocate segment files.",
              topic_name="preallocate"),
    ConfigDef("num.recovery.threads.per.data.dir", INT, 1, "Threads recovering logs at startup."),
    # Consumer groups and transactions (coordinator issue)
    ConfigDef("offsets.topic.num.partitions", INT, 50, "Partitions of __consumer_offsets.",
              at_least=1),
    ConfigDef("offsets.topic.replication.factor", INT, 3, "Replication of __consumer_offsets.",
              at_least=1),
    ConfigDef("offsets.topic.segment.bytes", INT, 104857600, "Segment size of the offsets topic."),
    ConfigDef("offsets.retention.minutes", INT, 10080, "Committed offsets retention."),
    ConfigDef("group.initial.rebalance.delay.ms", INT, 3000, "Wait for more members at first."),
    ConfigDef("group.min.session.timeout.ms", INT, 6000, "Smallest session timeout allowed."),
    ConfigDef("group.max.session.timeout.ms", INT, 1800000, "Largest session timeout allowed."),
    ConfigDef("group.max.size", INT, 2147483647, "Most members one group may have.", at_least=1),
    # KIP-848 consumer groups (group.protocol=consumer)
    ConfigDef("group.consumer.session.timeout.ms", INT, 45000,
              "Session timeout of consumer-protocol members.", at_least=1),
    ConfigDef("group.consumer.heartbeat.interval.ms", INT, 5000,
              "Heartbeat interval told to consumer-protocol members.", at_least=1),
    ConfigDef("group.consumer.max.size", INT, 2147483647,
              "Most members one consumer-protocol group may have.", at_least=1),
    ConfigDef("group.consumer.assignors", LIST, ["uniform", "range"],
              "Server-side assignors (uniform, range); the first is the default."),
    ConfigDef("group.consumer.migration.policy", STR, "bidirectional",
              "Online conversion between classic and consumer groups: bidirectional, "
              "upgrade, downgrade or disabled."),
    ConfigDef("offsets.commit.timeout.ms", INT, 5000, "Wait for an offsets append to commit.",
              at_least=1),
    ConfigDef("offsets.retention.check.interval.ms", LONG, 600000,
              "How often expired offsets are removed.", at_least=1),
    ConfigDef("offset.metadata.max.bytes", INT, 4096, "Largest commit metadata string."),
    ConfigDef("transaction.state.log.num.partitions", INT, 50, "Partitions of the txn log."),
    ConfigDef("transaction.state.log.replication.factor", INT, 3, "Replication of the txn log."),
    ConfigDef("transaction.state.log.min.isr", INT, 2, "min.insync.replicas of the txn log."),
    ConfigDef("transaction.state.log.segment.bytes", INT, 104857600,
              "Segment size of the transaction log.", at_least=1),
    ConfigDef("transaction.max.timeout.ms", INT, 900000,
              "Largest transaction.timeout.ms a producer may ask for.", at_least=1),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000,
              "How often transactions past their timeout are aborted.", at_least=1),
    ConfigDef("transactional.id.expiration.ms", INT, 604800000,
              "How long a transactional id may stay idle (no transaction, no request) before "
              "its coordinator forgets it (tombstone in __transaction_state).", at_least=1),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", INT, 3600000,
              "How often expired transactional ids are removed.", at_least=1),
    ConfigDef("producer.id.expiration.ms", INT, 86400000,
              "How long a partition keeps the state of a producer that wrote nothing (and has "
              "no open transaction) before forgetting it.", at_least=1),
    ConfigDef("producer.id.expiration.check.interval.ms", INT, 600000,
              "How often idle producers are removed from partitions' producer state.",
              at_least=1),
    # Quotas
    ConfigDef("quota.window.num", INT, 11,
              "Samples a client quota's rate is measured over (fewer: smoother, less bursty).",
              at_least=1),
    ConfigDef("quota.window.size.seconds", INT, 1,
              "Length of one quota sample; also the longest single throttle.", at_least=1),
    # odradek's own
    ConfigDef("metrics.port", INT, 0,
              "The port of the Prometheus /metrics endpoint, served on the host of the first "
              "listener. 0 disables the endpoint (the broker still keeps its metrics).",
              at_least=0),
    ConfigDef("metrics.topic.labels.enable", BOOL, False,
              "Export bytes and messages per topic (odradek_topic_*). Off by default: each "
              "topic adds series, and topics are created by users."),
    ConfigDef("metrics.topic.labels.max", INT, 500,
              "The most topics with their own series when per-topic metrics are on; traffic "
              "of further topics is counted in the broker-wide totals only, and each refused "
              "topic in odradek_metrics_series_dropped_total.", at_least=0),
    ConfigDef("metrics.consumer.lag.series.max", INT, 10000,
              "The most group/topic/partition consumer-lag rows a coordinator exports (each "
              "row is four series); further rows are counted as dropped.", at_least=0),
    ConfigDef("metrics.consumer.groups.max", INT, 1000,
              "The most consumer groups with state and member series per coordinator; "
              "further groups are counted as dropped.", at_least=0),
    ConfigDef("metrics.consumer.lag.timestamp.reads.max", INT, 200,
              "Record timestamps a coordinator reads per scrape to compute lag in seconds; "
              "positions beyond it reuse their last reading. Bounds what a scrape costs.",
              at_least=0),
    ConfigDef("metrics.consumer.lag.end.offsets.timeout.ms", INT, 1000,
              "How long a coordinator waits for another broker's ListOffsets answer when it "
              "asks for the end offsets of partitions it does not host (consumer lag); a "
              "scrape waits at most this long for them.", at_least=1),
    ConfigDef("metrics.consumer.lag.end.offsets.refresh.ms", INT, 5000,
              "Least time between two rounds of ListOffsets to the leaders of partitions a "
              "coordinator does not host; scrapes in between use the last answers.",
              at_least=0),
    ConfigDef("metrics.consumer.lag.end.offsets.max.age.ms", INT, 60000,
              "End offsets from other brokers older than this (their leader stopped "
              "answering) are not used: those partitions have no lag series until it "
              "answers again.", at_least=1),
)

# Topic configs whose broker default is computed from several broker keys (the most specific
# one named here); every other topic config has at most one ``ConfigDef.topic_name`` source.
_COMPUTED_TOPIC_DEFAULTS = {"retention.ms": "log.retention.ms", "segment.ms": "log.roll.ms"}


def broker_default_name(topic_config: str) -> str | None:
    """The broker property that supplies the default of topic config ``topic_config``
    (``segment.bytes`` -> ``log.segment.bytes``); None when only Kafka's default applies."""
    if topic_config in _COMPUTED_TOPIC_DEFAULTS:
        return _COMPUTED_TOPIC_DEFAULTS[topic_config]
    for definition in BROKER_CONFIGS.values():
        if definition.topic_name == topic_config:
            return definition.name
    return None
