"""The options of ``format("odradek")``: Spark's Kafka source and sink names, checked up front.

Spark passes options case-insensitively (lower-cased keys); errors name them the way the
documentation spells them. Every problem is an :class:`OptionError` naming the option, raised
while the query is analysed, so a typo never becomes a silently ignored setting: unlike Spark's
own connector (which ignores unknown names), an unknown option is an error.

Security is Kafka's client properties with the ``kafka.`` prefix, as with Spark's own
connector: ``kafka.security.protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
``kafka.sasl.mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), ``kafka.sasl.jaas.config`` or
``kafka.sasl.username``/``kafka.sasl.password``, ``kafka.ssl.truststore.location`` (a PEM CA
file), ``kafka.ssl.keystore.location``/``kafka.ssl.key.location`` (PEM client certificate and
key). They are read by odradek's client (:func:`odradek.client.security.
settings_from_properties`) for the driver and every executor, source and sink alike; JKS
stores are refused with the reason (convert them to PEM).

Options that only steer the JVM Kafka client (socket buffers, reconnect backoff, group
session settings) are accepted and have no effect; :data:`INERT_CLIENT_OPTIONS` lists them.
Those Spark itself rejects (``kafka.auto.offset.reset``, deserializers, ...) are rejected here
with Spark's reason.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "INERT_CLIENT_OPTIONS",
    "OptionError",
    "SinkOptions",
    "SourceOptions",
    "check_names",
    "parse_sink",
    "parse_source",
]

EARLIEST = -2
LATEST = -1


class OptionError(ValueError):
    """A bad ``format("odradek")`` option; the message starts with the option's name."""

    def __init__(self, option: str, problem: str) -> None:
        self.option = option
        super().__init__(f"option '{option}': {problem}")


# Spark Kafka source/sink options, canonical spelling by lower-case key.
_SPARK_OPTIONS = [
    "kafka.bootstrap.servers", "bootstrap.servers", "subscribe", "subscribePattern", "assign",
    "startingOffsets", "endingOffsets", "startingTimestamp", "endingTimestamp",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy", "failOnDataLoss", "kafkaConsumer.pollTimeoutMs",
    "fetchOffset.numRetries", "fetchOffset.retryIntervalMs", "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions", "maxRecordsPerPartition",
    "groupIdPrefix", "includeHeaders", "topic",
    # odradek's own: exactly-once streaming writes (see odradek.spark.exactly_once).
    "transactionalIdPrefix",
    # What Spark itself hands a streaming sink along with the user's options:
    "checkpointLocation", "queryName",
]
CANONICAL = {name.lower(): name for name in _SPARK_OPTIONS}

#: Kafka client settings (after ``kafka.``) that odradek's client honours.
CONSUMER_SETTINGS = {
    "client.id": "client_id", "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms", "metadata.max.age.ms": "metadata_max_age_ms",
    "max.partition.fetch.bytes": "max_partition_fetch_bytes",
    "fetch.max.wait.ms": "fetch_max_wait_ms", "isolation.level": "isolation_level",
}
PRODUCER_SETTINGS = {
    "client.id": "client_id", "acks": "acks", "compression.type": "compression_type",
    "linger.ms": "linger_ms", "batch.size": "batch_size", "buffer.memory": "buffer_memory",
    "max.request.size": "max_request_size", "enable.idempotence": "enable_idempotence",
    "retries": "retries", "retry.backoff.ms": "retry_backoff_ms",
    "delivery.timeout.ms": "delivery_timeout_ms", "request.timeout.ms": "request_timeout_ms",
    "max.block.ms": "max_block_ms", "metadata.max.age.ms": "metadata_max_age_ms",
    "max.in.flight.requests.per.connection": "max_in_flight_requests_per_connection",
    "transaction.timeout.ms": "transaction_timeout_ms",
}
#: Java-client tuning with no counterpart here: accepted so existing jobs run, no effect.
INERT_CLIENT_OPTIONS = frozenset({
    "group.id", "session.timeout.ms", "heartbeat.interval.ms", "receive.buffer.bytes",
    "send.buffer.bytes", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
    "connections.max.idle.ms", "client.dns.lookup", "fetch.min.bytes", "fetch.max.bytes",
    "max.poll.records", "max.poll.interval.ms", "client.rack", "default.api.timeout.ms",
    "check.crcs", "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms", "metrics.recording.level",
})
#: Kafka client security properties (after ``kafka.``), handed to odradek's client.
SECURITY_SETTINGS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.jaas.config", "sasl.username",
    "sasl.password", "ssl.truststore.location", "ssl.truststore.type",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.key.location",
    "ssl.endpoint.identification.algorithm",
})
_REJECTED = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "key.deserializer": "keys are always read as bytes; cast or use a UDF to deserialize",
    "value.deserializer": "values are always read as bytes; cast or use a UDF to deserialize",
    "key.serializer": "keys are always written as bytes; cast the 'key' column to string or "
                      "binary",
    "value.serializer": "values are always written as bytes; cast the 'value' column to "
                        "string or binary",
    "enable.auto.commit": "Spark keeps the offsets in its checkpoint, never in a group",
    "interceptor.classes": "interceptors are Java classes",
    "partitioner.class": "the 'partition' column chooses a partition; otherwise keys hash "
                         "with murmur2 as in the Java client",
    "ssl.truststore.password": "only PEM trust stores are read (no password): convert the "
                               "JKS/PKCS12 store to a PEM CA file",
    "ssl.keystore.password": "only PEM key stores are read (no password): convert the "
                             "JKS/PKCS12 store to PEM certificate and key files",
    "ssl.key.password": "encrypted private keys are not supported: give an unencrypted PEM "
                        "key file (kafka.ssl.key.location)",
    "sasl.login.callback.handler.class": "login callbacks are Java classes",
}


def check_names(options: Mapping[str, str]) -> None:
    """Every option must be a Spark Kafka option or a ``kafka.*`` client setting."""
    for key in options:
        lower = key.lower()
        if lower in CANONICAL:
            continue
        if lower.startswith("kafka."):
            name = key[len("kafka."):]
            if name in _REJECTED:
                raise OptionError(key, f"not supported: {_REJECTED[name]}")
            if name in CONSUMER_SETTINGS or name in PRODUCER_SETTINGS \
                    or name in INERT_CLIENT_OPTIONS or name in SECURITY_SETTINGS:
                continue
            raise OptionError(key, "unknown Kafka client setting (odradek honours "
                              + ", ".join(f"kafka.{n}" for n in sorted(
                                  {*CONSUMER_SETTINGS, *PRODUCER_SETTINGS,
                                   *SECURITY_SETTINGS})) + ")")
        close = difflib.get_close_matches(lower, CANONICAL, n=1, cutoff=0.8)
        hint = f" (did you mean '{CANONICAL[close[0]]}'?)" if close else ""
        raise OptionError(key, f"unknown option for format(\"odradek\"){hint}")


# ---------------------------------------------------------------------- value parsers

def _get(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name.lower())
    return None if value is None else str(value)


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = _get(options, name)
    if value is None:
        return default
    if value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise OptionError(name, f"expected true or false, got {value!r}")


def _int(options: Mapping[str, str], name: str, default: int | None, minimum: int = 1
         ) -> int | None:
    value = _get(options, name)
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise OptionError(name, f"expected an integer, got {value!r}") from None
    if number < minimum:
        raise OptionError(name, f"must be >= {minimum}, got {number}")
    return number


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h)?\s*$")


def _duration_ms(options: Mapping[str, str], name: str, default: int) -> int:
    value = _get(options, name)
    if value is None:
        return default
    match = _DURATION.match(value)
    if match is None:
        raise OptionError(name, f"expected a duration like 15m, 30s or 500ms, got {value!r}")
    scale = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}[
        match.group(2) or "ms"]
    return int(match.group(1)) * scale


def _json_object(name: str, value: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise OptionError(name, f"invalid JSON ({exc}): {value!r}") from None
    if not isinstance(parsed, dict):
        raise OptionError(name, f"expected a JSON object, got {value!r}")
    return parsed


def _partition_map(name: str, value: str, what: str) -> dict[tuple[str, int], int]:
    """``{"topic": {"0": 23, "1": -1}}`` → {(topic, 0): 23, ...}."""
    out: dict[tuple[str, int], int] = {}
    for topic, parts in _json_object(name, value).items():
        if not isinstance(parts, dict) or not parts:
            raise OptionError(name, f"expected {{\"{topic}\": {{\"0\": {what}, ...}}}}, got "
                              f"{json.dumps(parts)} for topic {topic!r}")
        for part, number in parts.items():
            try:
                partition = int(part)
            except ValueError:
                raise OptionError(name, f"partition {part!r} of topic {topic!r} is not an "
                                  f"integer") from None
            if isinstance(number, bool) or not isinstance(number, int):
                raise OptionError(name, f"{topic}-{partition}: expected an integer {what}, "
                                  f"got {json.dumps(number)}")
            out[(topic, partition)] = number
    return out


# ---------------------------------------------------------------------- offset specs

@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: ``earliest``/``latest``, per-partition offsets (-2 =
    earliest, -1 = latest), a timestamp for every partition, or per-partition timestamps."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    option: str
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int = 0


def _offset_spec(options: Mapping[str, str], prefix: str, default: str | None,
                 streaming: bool) -> OffsetSpec | None:
    """Timestamp options take precedence over offsets, as in Spark."""
    name = f"{prefix}Timestamp"
    value = _get(options, name)
    if value is not None:
        try:
            return OffsetSpec("timestamp", name, timestamp=int(value.strip()))
        except ValueError:
            raise OptionError(name, f"expected milliseconds since the epoch, got "
                              f"{value!r}") from None
    name = f"{prefix}OffsetsByTimestamp"
    value = _get(options, name)
    if value is not None:
        return OffsetSpec("timestamps", name, _partition_map(name, value, "timestamp"))
    name = f"{prefix}Offsets"
    value = _get(options, name)
    if value is None:
        return None if default is None else OffsetSpec(default, name)
    text = value.strip()
    if text.lower() in ("earliest", "latest"):
        kind = text.lower()
        if prefix == "starting" and kind == "latest" and not streaming:
            raise OptionError(name, "'latest' is not allowed for batch queries (use it with "
                              "readStream, or give endingOffsets)")
        if prefix == "ending" and kind == "earliest":
            raise OptionError(name, "'earliest' is not allowed as an ending offset")
        return OffsetSpec(kind, name)
    if not text.startswith("{"):
        raise OptionError(name, f"expected earliest, latest or JSON like "
                          f"{{\"topic\": {{\"0\": 42}}}}, got {value!r}")
    offsets = _partition_map(name, text, "offset")
    for (topic, partition), offset in offsets.items():
        if offset < EARLIEST:
            raise OptionError(name, f"{topic}-{partition}: offset {offset} is invalid (-2 = "
                              f"earliest, -1 = latest)")
        if prefix == "starting" and offset == LATEST and not streaming:
            raise OptionError(name, f"{topic}-{partition}: latest (-1) is not allowed as a "
                              f"starting offset in batch queries")
        if prefix == "ending" and offset == EARLIEST:
            raise OptionError(name, f"{topic}-{partition}: earliest (-2) is not allowed as "
                              f"an ending offset")
    return OffsetSpec("offsets", name, offsets)


# ---------------------------------------------------------------------- source

@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()
    starting: OffsetSpec = OffsetSpec("earliest", "startingOffsets")
    ending: OffsetSpec | None = None
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    poll_timeout_ms: int = 120_000
    fetch_retries: int = 3
    fetch_retry_interval_ms: int = 10
    client: dict[str, Any] = field(default_factory=dict)
    check_crcs: bool = True
    #: TLS/SASL settings of odradek's client (:func:`_security`), for every connection.
    security: dict[str, Any] = field(default_factory=dict)

    @property
    def strategy(self) -> str:
        return ("subscribe" if self.subscribe else
                "subscribePattern" if self.subscribe_pattern is not None else "assign")


def _bootstrap(options: Mapping[str, str]) -> str:
    value = _get(options, "kafka.bootstrap.servers") or _get(options, "bootstrap.servers")
    if not value or not value.strip():
        raise OptionError("kafka.bootstrap.servers", "required: the brokers to connect to, "
                          "e.g. 127.0.0.1:9092")
    for item in value.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise OptionError("kafka.bootstrap.servers", f"expected HOST:PORT[,HOST:PORT...], "
                              f"got {value!r}")
    return value.strip()


def _client_settings(options: Mapping[str, str], table: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in options.items():
        if not key.lower().startswith("kafka."):
            continue
        name = key[len("kafka."):]
        target = table.get(name)
        if target is None:
            continue
        text = str(value).strip()
        if target in ("client_id", "isolation_level", "compression_type", "acks"):
            out[target] = text
        elif target == "enable_idempotence":
            if text.lower() not in ("true", "false"):
                raise OptionError(key, f"expected true or false, got {value!r}")
            out[target] = text.lower() == "true"
        else:
            try:
                out[target] = int(text)
            except ValueError:
                raise OptionError(key, f"expected an integer, got {value!r}") from None
    if out.get("isolation_level", "read_uncommitted") not in ("read_uncommitted",
                                                              "read_committed"):
        raise OptionError("kafka.isolation.level", "expected read_uncommitted or "
                          "read_committed")
    return out


def _security(options: Mapping[str, str]) -> dict[str, Any]:
    """The ``kafka.security.*``/``ssl.*``/``sasl.*`` options as odradek's client settings
    (kafka-python's names: plain values, so the options pickle to every executor), checked
    now: a bad protocol, a missing password or an unreadable CA file fails the query's
    analysis, not its first task."""
    # the client only in steps that talk to the cluster (spark/source.py)
    from odradek.client.security import ClientSecurity, settings_from_properties

    properties = {key[len("kafka."):]: str(value) for key, value in options.items()
                  if key.lower().startswith("kafka.") and key[len("kafka."):] in
                  SECURITY_SETTINGS}
    if not properties:
        return {}
    option = "kafka." + ("sasl.jaas.config" if "sasl.jaas.config" in properties
                         else "security.protocol")
    try:
        settings = settings_from_properties(properties)
        ClientSecurity.create(**settings)  # builds the TLS context: files exist, PEM parses
    except (ValueError, OSError) as exc:
        raise OptionError(option, str(exc)) from None
    return settings


#: How a source names its partitions; exactly one is required. The errors use the wording
#: of Spark's Kafka source (``KafkaSourceProvider``).
_STRATEGIES = ("assign", "subscribe", "subscribePattern")


def parse_source(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate the reader options (batch or streaming) and resolve their defaults."""
    check_names(options)
    bootstrap = _bootstrap(options)
    given = [name for name in _STRATEGIES if _get(options, name) is not None]
    if not given:
        raise OptionError("subscribe", f"One of the following options must be specified "
                          f"for Kafka source: {', '.join(_STRATEGIES)}; none was given")
    if len(given) > 1:
        raise OptionError(given[-1], f"Only one of the following options can be specified "
                          f"for Kafka source: {', '.join(_STRATEGIES)}; got "
                          f"{' and '.join(given)}")
    subscribe: tuple[str, ...] = ()
    pattern = None
    assign: tuple[tuple[str, int], ...] = ()
    if given[0] == "subscribe":
        subscribe = tuple(t.strip() for t in (_get(options, "subscribe") or "").split(",")
                          if t.strip())
        if not subscribe:
            raise OptionError("subscribe", "no topic given (a comma-separated list)")
    elif given[0] == "subscribePattern":
        pattern = _get(options, "subscribePattern") or ""
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError("subscribePattern", f"invalid regular expression: {exc}") \
                from None
        if not pattern.strip():
            raise OptionError("subscribePattern", "empty pattern")
    else:
        raw = _get(options, "assign") or ""
        parsed = _json_object("assign", raw)
        pairs = []
        for topic, parts in parsed.items():
            if not isinstance(parts, list) or not all(
                    isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts):
                raise OptionError("assign", f"expected {{\"topic\": [0, 1, ...]}}, got "
                                  f"{json.dumps(parts)} for topic {topic!r}")
            pairs += [(topic, p) for p in parts]
        if not pairs:
            raise OptionError("assign", "no partition given")
        assign = tuple(sorted(set(pairs)))
    starting = _offset_spec(options, "starting", "latest" if streaming else "earliest",
                            streaming)
    assert starting is not None
    ending = _offset_spec(options, "ending", None if streaming else "latest", streaming)
    if streaming and ending is not None:
        raise OptionError(ending.option, "ending offsets are for batch queries only "
                          "(spark.read), not readStream")
    for spec in (starting, ending):
        if spec is not None and spec.kind in ("offsets", "timestamps"):
            _check_covered(spec, subscribe, assign)
    strategy = (_get(options, "startingOffsetsByTimestampStrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError("startingOffsetsByTimestampStrategy",
                          f"expected error or latest, got {strategy!r}")
    if not streaming:
        for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
            if _get(options, name) is not None:
                raise OptionError(name, "only valid for streaming queries (readStream)")
    client = _client_settings(options, CONSUMER_SETTINGS)
    check_crcs = (_get(options, "kafka.check.crcs") or "true").strip().lower() != "false"
    return SourceOptions(
        bootstrap_servers=bootstrap, subscribe=subscribe, subscribe_pattern=pattern,
        assign=assign, starting=starting, ending=ending, timestamp_strategy=strategy,
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        include_headers=_bool(options, "includeHeaders", False),
        max_offsets_per_trigger=_int(options, "maxOffsetsPerTrigger", None),
        min_offsets_per_trigger=_int(options, "minOffsetsPerTrigger", None),
        max_trigger_delay_ms=_duration_ms(options, "maxTriggerDelay", 15 * 60_000),
        min_partitions=_int(options, "minPartitions", None),
        max_records_per_partition=_int(options, "maxRecordsPerPartition", None),
        poll_timeout_ms=_int(options, "kafkaConsumer.pollTimeoutMs", 120_000) or 120_000,
        fetch_retries=_int(options, "fetchOffset.numRetries", 3, minimum=0) or 0,
        fetch_retry_interval_ms=_int(options, "fetchOffset.retryIntervalMs", 10,
                                     minimum=0) or 0,
        client=client, check_crcs=check_crcs, security=_security(options))


def _check_covered(spec: OffsetSpec, subscribe: tuple[str, ...],
                   assign: tuple[tuple[str, int], ...]) -> None:
    topics = {t for t, _ in spec.offsets}
    if subscribe and not topics <= set(subscribe):
        raise OptionError(spec.option, f"names topics not subscribed: "
                          f"{sorted(topics - set(subscribe))}")
    if assign and set(spec.offsets) != set(assign):
        raise OptionError(spec.option, f"must give every assigned partition, and only those: "
                          f"assigned {_names(assign)}, given {_names(spec.offsets)}")


def _names(pairs: Any) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(pairs))


# ---------------------------------------------------------------------- sink

@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    producer: dict[str, Any] = field(default_factory=dict)
    security: dict[str, Any] = field(default_factory=dict)
    #: ``transactionalIdPrefix``: write each micro-batch exactly once (streaming only).
    transactional_id_prefix: str | None = None


def parse_sink(options: Mapping[str, str]) -> SinkOptions:
    check_names(options)
    topic = _get(options, "topic")
    if topic is not None and not topic.strip():
        raise OptionError("topic", "empty topic name")
    producer = _client_settings(options, PRODUCER_SETTINGS)
    prefix = _get(options, "transactionalIdPrefix")
    if prefix is not None:
        prefix = prefix.strip()
        if not prefix:
            raise OptionError("transactionalIdPrefix", "empty prefix")
        if producer.get("enable_idempotence") is False or producer.get("acks", -1) not in (
                -1, "-1", "all"):
            raise OptionError("transactionalIdPrefix", "exactly-once writes need "
                              "kafka.acks=all and kafka.enable.idempotence=true")
    return SinkOptions(_bootstrap(options), topic.strip() if topic else None, producer,
                       _security(options), prefix)
