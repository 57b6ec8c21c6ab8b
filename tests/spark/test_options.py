"""Bad options: one clear error naming the option, before any task runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from odradek.local_cluster import free_port
from odradek.spark.options import OptionError, check_names, parse_sink, parse_source

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def _source(streaming: bool = False, **options: str) -> Any:
    return parse_source({k.lower(): v for k, v in {**BOOT, **options}.items()},
                        streaming=streaming)


@pytest.mark.parametrize("options, option", [
    ({"subscribe": "t", "startingOffset": "earliest"}, "startingoffset"),
    ({"subscribe": "t", "kafka.max.poll.recrods": "5"}, "kafka.max.poll.recrods"),
    ({"subscribe": "t", "assign": '{"t": [0]}'}, "subscribe"),
    ({"subscribe": "t", "subscribePattern": "t.*"}, "subscribePattern"),
    ({}, "subscribe"),
    ({"subscribe": "t", "startingOffsets": '{"t": {"0": 1'}, "startingOffsets"),
    ({"subscribe": "t", "startingOffsets": '{"t": [1, 2]}'}, "startingOffsets"),
    ({"subscribe": "t", "startingOffsets": '{"u": {"0": 1}}'}, "startingOffsets"),
    ({"subscribe": "t", "startingOffsets": "latest"}, "startingOffsets"),
    ({"subscribe": "t", "endingOffsets": "earliest"}, "endingOffsets"),
    ({"subscribe": "t", "endingOffsets": '{"t": {"0": -2}}'}, "endingOffsets"),
    ({"assign": '{"t": [0, 1]}', "startingOffsets": '{"t": {"0": 5}}'}, "startingOffsets"),
    ({"assign": '{"t": "0"}'}, "assign"),
    ({"subscribe": "t", "failOnDataLoss": "maybe"}, "failOnDataLoss"),
    ({"subscribe": "t", "maxRecordsPerPartition": "0"}, "maxRecordsPerPartition"),
    ({"subscribe": "t", "maxOffsetsPerTrigger": "10"}, "maxOffsetsPerTrigger"),
    ({"subscribe": "t", "startingTimestamp": "yesterday"}, "startingTimestamp"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
    ({"subscribe": "t", "kafka.security.protocol": "SASL_SSL"}, "kafka.security.protocol"),
    ({"subscribe": "t", "kafka.security.protocol": "TLS"}, "kafka.security.protocol"),
    ({"subscribe": "t", "kafka.security.protocol": "SSL",
      "kafka.ssl.truststore.location": "/nonexistent/ca.pem"}, "kafka.security.protocol"),
    ({"subscribe": "t", "kafka.security.protocol": "SSL",
      "kafka.ssl.truststore.type": "JKS"}, "kafka.security.protocol"),
    ({"subscribe": "t", "kafka.ssl.truststore.password": "x"}, "kafka.ssl.truststore.password"),
    ({"subscribe": "t", "kafka.security.protocol": "SASL_PLAINTEXT",
      "kafka.sasl.jaas.config": "no login module"}, "kafka.sasl.jaas.config"),
    ({"subscribe": "t", "kafka.security.protocol": "SASL_PLAINTEXT",
      "kafka.sasl.mechanism": "GSSAPI", "kafka.sasl.username": "u",
      "kafka.sasl.password": "p"}, "kafka.security.protocol"),
    ({"subscribe": "t", "kafka.bootstrap.servers": "nohost"}, "kafka.bootstrap.servers"),
    ({"subscribe": "t", "kafka.bootstrap.servers": ""}, "kafka.bootstrap.servers"),
    ({"subscribe": "t", "subscribePattern": "(", }, "subscribePattern"),
])
def test_bad_batch_options(options: dict[str, str], option: str) -> None:
    with pytest.raises(OptionError) as info:
        _source(False, **options)
    assert info.value.option.lower() == option.lower()
    assert str(info.value).startswith(f"option '{info.value.option}'")


def test_streaming_only_and_batch_only_options() -> None:
    with pytest.raises(OptionError, match="option 'endingOffsets'"):
        _source(streaming=True, subscribe="t", endingOffsets="latest")
    opts = _source(streaming=True, subscribe="t", maxOffsetsPerTrigger="10",
                   maxTriggerDelay="30s")
    assert opts.max_offsets_per_trigger == 10 and opts.max_trigger_delay_ms == 30_000
    assert opts.starting.kind == "latest"
    assert _source(subscribe="t").starting.kind == "earliest"


def test_spark_names_and_client_settings_are_accepted() -> None:
    starting = json.dumps({"a": {"0": -2}, "b": {"0": 4}})
    opts = _source(False, subscribe="a,b", startingOffsets=starting,
                   includeHeaders="true", **{
                       "kafka.max.partition.fetch.bytes": "65536",
                       "kafka.group.id": "ignored", "kafka.isolation.level": "read_committed",
                       "kafkaConsumer.pollTimeoutMs": "5000", "groupIdPrefix": "x"})
    assert opts.subscribe == ("a", "b") and opts.include_headers
    assert opts.client == {"max_partition_fetch_bytes": 65536,
                           "isolation_level": "read_committed"}
    assert opts.starting.offsets == {("a", 0): -2, ("b", 0): 4}
    check_names({"bootstrap.servers": "h:1", "topic": "t"})
    sink = parse_sink({"kafka.bootstrap.servers": "h:1", "topic": "t",
                       "kafka.compression.type": "zstd", "kafka.linger.ms": "20"})
    assert sink.producer == {"compression_type": "zstd", "linger_ms": 20}


def test_no_or_several_strategies_say_so_in_spark_kafka_source_words() -> None:
    with pytest.raises(OptionError) as info:
        _source(False)
    assert str(info.value) == (
        "option 'subscribe': One of the following options must be specified for Kafka "
        "source: assign, subscribe, subscribePattern; none was given")
    with pytest.raises(OptionError) as info:
        _source(False, subscribe="t", assign='{"t": [0]}')
    assert str(info.value) == (
        "option 'subscribe': Only one of the following options can be specified for Kafka "
        "source: assign, subscribe, subscribePattern; got assign and subscribe")


def _spark_error(action: Any) -> str:
    with pytest.raises(Exception) as info:
        action()
    return str(info.value)


def test_errors_surface_through_spark(spark: Any, bootstrap: str) -> None:
    def read(**options: str) -> Any:
        reader = spark.read.format("odradek")
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()

    message = _spark_error(lambda: read(**{"kafka.bootstrap.servers": bootstrap,
                                           "subscribe": "t", "startingOffset": "earliest"}
                                        ).collect())
    assert "option 'startingOffset'" in message.replace("startingoffset", "startingOffset")
    message = _spark_error(lambda: read(**{"kafka.bootstrap.servers": bootstrap,
                                           "subscribe": "t", "assign": '{"t": [0]}'}).collect())
    assert "option 'subscribe'" in message and "assign" in message
    message = _spark_error(lambda: read(**{"kafka.bootstrap.servers": bootstrap,
                                           "subscribe": "t",
                                           "endingOffsets": '{"t": {"0": 1'}).collect())
    assert "option 'endingOffsets'" in message and "invalid JSON" in message
    dead = f"127.0.0.1:{free_port()}"
    message = _spark_error(lambda: read(**{"kafka.bootstrap.servers": dead,
                                           "subscribe": "t"}).collect())
    assert "option 'kafka.bootstrap.servers'" in message and dead in message


def test_security_options_reach_the_client_settings_of_source_and_sink() -> None:
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="alice" password="s3cret";')
    options = {"kafka.security.protocol": "sasl_plaintext",
               "kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.jaas.config": jaas}
    source = parse_source({**BOOT, "subscribe": "t", **options}, streaming=False)
    assert source.security["security_protocol"] == "SASL_PLAINTEXT"
    assert source.security["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (source.security["sasl_plain_username"],
            source.security["sasl_plain_password"]) == ("alice", "s3cret")
    del options["kafka.sasl.jaas.config"]
    sink = parse_sink({**BOOT, **options, "kafka.sasl.username": "bob",
                       "kafka.sasl.password": "pw"})
    assert (sink.security["sasl_plain_username"], sink.security["sasl_plain_password"]) == \
        ("bob", "pw")
    assert _source(subscribe="t").security == {}
