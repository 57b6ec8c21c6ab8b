"""DescribeConfigs (v0-v4), AlterConfigs (v0-v2), IncrementalAlterConfigs (v0-v1) for
topics and brokers.

Topic configs are Kafka's topic-level names: a topic's overrides live in ZooKeeper
(``/config/topics/<t>``, read through the cluster view), everything else comes from the
broker's (effective) defaults. Broker configs are layered as Kafka layers them
(:mod:`odradek.dynamic_config`): ``/config/brokers/<id>``, ``/config/brokers/<default>``
(the resource with an empty name), the static config, the defaults. Alters of broker
resources are validated against the update-mode table (unknown key: INVALID_CONFIG;
read-only key, per-broker key at the default, bad value: INVALID_REQUEST, as Kafka answers)
and stored in ZooKeeper; every broker then applies them (:mod:`odradek.broker.reconfigure`).
DescribeConfigs reports each value's source and, when asked, its synonyms, for every key
Kafka 3.9 describes (:mod:`odradek.kafka_catalog`): keys odradek does not implement are
described read-only at Kafka's default, so tools and users see the same key set as on Kafka.

Authorization (Kafka's): a topic needs DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic (else
TOPIC_AUTHORIZATION_FAILED), any other resource the same on the cluster (else
CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek import kafka_catalog
from odradek.config_keys import BROKER_CONFIGS, broker_default_name
from odradek.dynamic_config import (
    DEFAULT_ENTITY,
    UPDATE_MODES,
    BrokerConfigLayers,
    ConfigSource,
    UpdateMode,
    definition,
    validate_update,
)
from odradek.kafka_catalog import BROKER_CONFIGS as KAFKA_BROKER_KEYS
from odradek.kafka_catalog import TOPIC_CONFIGS as KAFKA_TOPIC_KEYS
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import (
    ClusterAuthorizationFailed,
    InvalidConfig,
    InvalidRequest,
    TopicAuthorizationFailed,
    UnknownTopicOrPartition,
    response_error,
)
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType
from odradek.storage.log_config import InvalidConfigValue, LogConfig

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import (
        AlterableConfig,
        AlterConfigsRequest,
        AlterConfigsResource,
        DescribeConfigsRequest,
        DescribeConfigsResource,
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResource,
    )

__all__ = [
    "handle_alter_configs",
    "handle_describe_configs",
    "handle_incremental_alter_configs",
]

TOPIC = 2
BROKER = 4

# Kafka's ConfigType values (DescribeConfigs v3+): BOOLEAN, STRING, LONG, DOUBLE, LIST
_CONFIG_TYPES = {bool: 1, str: 2, int: 5, float: 6, list: 7}

_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3
_UNSUPPORTED = "only TOPIC and BROKER resources are supported"

Synonyms = list[tuple[str, str | None, ConfigSource]]

_NOT_IMPLEMENTED = ("A Kafka 3.9 config odradek does not implement: described read-only with "
                    "Kafka's default (docs/configuration.md).")


def _layers(ctx: RequestContext) -> BrokerConfigLayers:
    layers: BrokerConfigLayers = ctx.services.dynamic_config.layers
    return layers


def _config_type(name: str, value: object) -> int:
    kafka = KAFKA_BROKER_KEYS.get(name) or KAFKA_TOPIC_KEYS.get(name)
    if kafka is not None:
        return kafka.config_type
    for kind, code in _CONFIG_TYPES.items():
        if isinstance(value, kind):
            return code
    return 2


def _base_name(name: str) -> str:
    """The broker config a ``listener.name.<l>.<config>`` key overrides (itself otherwise;
    a mechanism's JAAS config overrides ``sasl.jaas.config``)."""
    if not name.startswith("listener.name."):
        return name
    config = name.split(".", 3)[3]
    return "sasl.jaas.config" if config.endswith(".sasl.jaas.config") else config


def _entry(module: ModuleType, name: str, value: str | None, synonyms: Synonyms, *,
           read_only: bool, kind: object, doc: str | None, include_synonyms: bool) -> object:
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    definition = BROKER_CONFIGS.get(_base_name(name))
    config_type = _config_type(_base_name(name), kind)
    sensitive = (definition.sensitive if definition is not None
                 else config_type == kafka_catalog.PASSWORD)
    if sensitive:  # like Kafka's PASSWORD type: never shown, only whether it is set
        value = None
        synonyms = [(n, None, src) for n, _v, src in synonyms]
    listed = tuple(
        build(module.DescribeConfigsSynonym, name=n, value=v, source=int(src))
        for n, v, src in synonyms
    ) if include_synonyms else ()
    return build(module.DescribeConfigsResourceResult, name=name, value=value,
                 read_only=read_only, config_source=int(source), is_sensitive=sensitive,
                 synonyms=listed, config_type=config_type, documentation=doc,
                 is_default=source is ConfigSource.DEFAULT_CONFIG)


def _authorize(
    ctx: RequestContext,
    operation: Operation,
    resource: DescribeConfigsResource | AlterConfigsResource | IncrementalAlterConfigsResource,
) -> None:
    """Raises the refusal of a resource the client may not ``operation``."""
    if resource.resource_type == TOPIC:
        if not ctx.authorize(operation, ResourceType.TOPIC, resource.resource_name):
            raise TopicAuthorizationFailed
    elif not ctx.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME):
        raise ClusterAuthorizationFailed


def _resource(
    resource: DescribeConfigsResource | AlterConfigsResource | IncrementalAlterConfigsResource,
) -> str:
    """How a log line names a config resource."""
    kind = {TOPIC: "topic", BROKER: "broker"}.get(resource.resource_type,
                                                  f"resource type {resource.resource_type}")
    return f"{kind} {resource.resource_name!r}"


# -- describe ------------------------------------------------------------------------------


def _topic_overrides(ctx: RequestContext, name: str) -> Mapping[str, str]:
    topic = ctx.services.cluster.view.topics.get(name)
    if topic is None:
        raise UnknownTopicOrPartition(f"Topic '{name}' does not exist.")
    return topic.config


def _describe_topic(ctx: RequestContext, module: ModuleType, name: str, keys: set[str] | None,
                    include_synonyms: bool, include_docs: bool) -> list[object]:
    """Every topic key Kafka 3.9 describes (those odradek does not implement read-only,
    at Kafka's default), plus odradek's own; synonyms as Kafka lists them."""
    overrides = _topic_overrides(ctx, name)
    log_config = LogConfig.for_topic(ctx.services.config.topic_defaults(), dict(overrides))
    layers = _layers(ctx)
    fields = type(log_config).TOPIC_CONFIG_NAMES
    supported = log_config.to_topic_config()
    entries = []
    for key in sorted({*supported, *KAFKA_TOPIC_KEYS}):
        if keys is not None and key not in keys:
            continue
        synonyms: Synonyms = []
        if key in overrides:
            synonyms.append((key, overrides[key], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        kafka = KAFKA_TOPIC_KEYS.get(key)
        broker_name = kafka.broker_name if kafka is not None else broker_default_name(key)
        if broker_name is not None:
            synonyms.extend(layers.synonyms(broker_name))
        if key in supported:
            field_name, _kind, doc = fields[key]
            value: str | None = str(supported[key])
            kind, read_only = getattr(log_config, field_name), False
        else:
            assert kafka is not None
            value, kind, read_only = kafka.default, "", True
            doc = _NOT_IMPLEMENTED
        entries.append(_entry(module, key, value, synonyms, read_only=read_only, kind=kind,
                              doc=doc if include_docs else None,
                              include_synonyms=include_synonyms))
    return entries


def _describe_broker(ctx: RequestContext, module: ModuleType, name: str, keys: set[str] | None,
                     include_synonyms: bool, include_docs: bool) -> list[object]:
    broker_id = ctx.services.broker_id
    layers = _layers(ctx)
    if name == "":  # the cluster default: only what is set there (as Kafka answers)
        per_broker, names = False, sorted(layers.default)
    elif name == str(broker_id):
        # every key Kafka 3.9 describes (those odradek does not implement read-only, at
        # Kafka's default), plus odradek's own
        per_broker, names = True, sorted({*UPDATE_MODES, *KAFKA_BROKER_KEYS,
                                          *ctx.services.config.listener_properties()})
    else:
        raise InvalidRequest(
            f"Unexpected broker id, expected {broker_id} or empty string, but received {name}"
        )
    config = ctx.services.config
    dynamic_only = ctx.services.dynamic_config.dynamic_only()
    entries = []
    for key in names:
        if keys is not None and key not in keys:
            continue
        if key.startswith("listener.name.") and per_broker:
            entries.append(_listener_entry(ctx, module, key, layers, include_synonyms))
            continue
        found = definition(key)
        if found is None:
            if key not in KAFKA_BROKER_KEYS or not per_broker:
                continue
            entries.append(_entry(module, key, KAFKA_BROKER_KEYS[key].default,
                                  layers.synonyms(key), read_only=True, kind="",
                                  doc=_NOT_IMPLEMENTED if include_docs else None,
                                  include_synonyms=include_synonyms))
            continue
        if not per_broker:
            value: str | None = layers.default[key]
        elif key in BROKER_CONFIGS:
            value = config.value_text(key)
        else:
            value = str(dynamic_only.get(key, found.default))
        entries.append(_entry(module, key, value, layers.synonyms(key, per_broker=per_broker),
                              read_only=UPDATE_MODES[key] is UpdateMode.READ_ONLY,
                              kind=found.default if found.default is not None else "",
                              doc=found.doc if include_docs else None,
                              include_synonyms=include_synonyms))
    return entries


def _listener_entry(ctx: RequestContext, module: ModuleType, key: str,
                    layers: BrokerConfigLayers, include_synonyms: bool) -> object:
    """A static ``listener.name.<l>.<config>`` key, described as Kafka does: read-only,
    then the broker-wide config it overrides where that is static or has a default."""
    raw = ctx.services.config.listener_properties()[key]
    base = key.split(".", 3)[3]  # Kafka's synonym: the name after the listener's
    static_or_default = (ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG)
    synonyms: Synonyms = [(key, raw, ConfigSource.STATIC_BROKER_CONFIG)]
    synonyms += [entry for entry in layers.synonyms(base) if entry[2] in static_or_default]
    return _entry(module, key, raw, synonyms, read_only=True, kind="", doc=None,
                  include_synonyms=include_synonyms)


def handle_describe_configs(
    ctx: RequestContext, request: DescribeConfigsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.DESCRIBE_CONFIGS, ctx.api_version)
    include_synonyms = bool(getattr(request, "include_synonyms", False))
    include_docs = bool(getattr(request, "include_documentation", False))
    results = []
    for resource in request.resources:
        keys = (
            set(resource.configuration_keys)
            if resource.configuration_keys is not None else None
        )
        try:
            _authorize(ctx, Operation.DESCRIBE_CONFIGS, resource)
            if resource.resource_type == TOPIC:
                describe = _describe_topic
            elif resource.resource_type == BROKER:
                describe = _describe_broker
            else:
                raise InvalidRequest(f"resource type {resource.resource_type} not supported")
            entries = describe(ctx, module, resource.resource_name, keys, include_synonyms,
                               include_docs)
            code, message = ErrorCode.none, None
        except Exception as exc:
            entries = []
            code, message = response_error(exc, f"describing configs of {_resource(resource)}")
        results.append(
            build(module.DescribeConfigsResult, error_code=code, error_message=message,
                  resource_type=resource.resource_type, resource_name=resource.resource_name,
                  configs=tuple(entries))
        )
    return build_response(module.DescribeConfigsResponse, throttle_time=NO_THROTTLE,
                          results=tuple(results))


# -- alter ---------------------------------------------------------------------------------


async def _alter_topic(
    ctx: RequestContext, name: str, new_overrides: dict[str, str], validate_only: bool
) -> None:
    try:
        LogConfig.for_topic(ctx.services.config.topic_defaults(), new_overrides)  # names the key
    except InvalidConfigValue as exc:  # Kafka's words, which name the resource
        raise InvalidConfig(f"Invalid config value for resource ConfigResource(type=TOPIC, "
                            f"name='{name}'): {exc}") from None
    await ctx.services.cluster.alter_topic_config(name, new_overrides, validate_only)


def _broker_entity(name: str) -> tuple[str, bool]:
    """``(ZooKeeper entity, per broker)`` of a BROKER resource name."""
    if name == "":
        return DEFAULT_ENTITY, False
    try:
        broker_id = int(name)
    except ValueError:
        broker_id = -1
    if broker_id < 0:
        raise InvalidRequest(f"Broker id must be an integer, but it is: {name}")
    return str(broker_id), True


async def _alter_broker(
    ctx: RequestContext,
    name: str,
    compute: Callable[[Mapping[str, str]], dict[str, str]],
    validate_only: bool,
) -> None:
    entity, per_broker = _broker_entity(name)

    def update(current: Mapping[str, str]) -> dict[str, str]:
        wanted = compute(current)
        validate_update(wanted, per_broker=per_broker)
        return wanted

    await ctx.services.cluster.alter_broker_config(entity, update, validate_only)


async def handle_alter_configs(
    ctx: RequestContext, request: AlterConfigsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.ALTER_CONFIGS, ctx.api_version)
    validate_only = bool(request.validate_only)
    responses = []
    for resource in request.resources:
        # AlterConfigs replaces the resource's whole set of dynamic configs.
        wanted = {c.name: c.value for c in resource.configs if c.value is not None}
        try:
            _authorize(ctx, Operation.ALTER_CONFIGS, resource)
            if resource.resource_type == TOPIC:
                _topic_overrides(ctx, resource.resource_name)
                await _alter_topic(ctx, resource.resource_name, wanted, validate_only)
            elif resource.resource_type == BROKER:
                await _alter_broker(ctx, resource.resource_name,
                                    functools.partial(_replace, wanted), validate_only)
            else:
                raise InvalidRequest(_UNSUPPORTED)
            code, message = ErrorCode.none, None
        except Exception as exc:
            code, message = response_error(exc, f"altering configs of {_resource(resource)}")
        responses.append(
            build(module.AlterConfigsResourceResponse, error_code=code, error_message=message,
                  resource_type=resource.resource_type, resource_name=resource.resource_name)
        )
    return build_response(module.AlterConfigsResponse, throttle_time=NO_THROTTLE,
                          responses=tuple(responses))


def _replace(wanted: Mapping[str, str], _stored: Mapping[str, str]) -> dict[str, str]:
    return dict(wanted)


def _incremental(
    changes: Iterable[AlterableConfig], defaults: Mapping[str, object], stored: Mapping[str, str]
) -> dict[str, str]:
    return _apply_incremental(stored, changes, defaults)


def _apply_incremental(
    current: Mapping[str, str], changes: Iterable[AlterableConfig],
    defaults: Mapping[str, object],
) -> dict[str, str]:
    updated = dict(current)
    for change in changes:
        operation = int(change.config_operation)
        if operation == _SET:
            if change.value is None:
                raise InvalidConfig(f"{change.name}: SET needs a value")
            updated[change.name] = change.value
        elif operation == _DELETE:
            updated.pop(change.name, None)
        elif operation in (_APPEND, _SUBTRACT):
            base = updated.get(change.name, defaults.get(change.name, ""))
            items = [item for item in str(base).split(",") if item]
            values = [item for item in (change.value or "").split(",") if item]
            if operation == _APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [item for item in items if item not in values]
            updated[change.name] = ",".join(items)
        else:
            raise InvalidRequest(f"unknown config operation {operation}")
    return updated


def _broker_values(ctx: RequestContext) -> dict[str, str]:
    """Effective broker values, the base of APPEND/SUBTRACT on a key not set dynamically."""
    config = ctx.services.config
    return {name: config.raw(name) for name in BROKER_CONFIGS}


async def handle_incremental_alter_configs(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.INCREMENTAL_ALTER_CONFIGS, ctx.api_version)
    validate_only = bool(request.validate_only)
    responses = []
    for resource in request.resources:
        try:
            _authorize(ctx, Operation.ALTER_CONFIGS, resource)
            if resource.resource_type == TOPIC:
                current = _topic_overrides(ctx, resource.resource_name)
                broker_defaults = ctx.services.config.topic_defaults()
                defaults = LogConfig.for_topic(broker_defaults).to_topic_config()
                updated = _apply_incremental(current, resource.configs, defaults)
                await _alter_topic(ctx, resource.resource_name, updated, validate_only)
            elif resource.resource_type == BROKER:
                compute = functools.partial(_incremental, resource.configs, _broker_values(ctx))
                await _alter_broker(ctx, resource.resource_name, compute, validate_only)
            else:
                raise InvalidRequest(_UNSUPPORTED)
            code, message = ErrorCode.none, None
        except Exception as exc:
            code, message = response_error(exc, f"altering configs of {_resource(resource)}")
        responses.append(
            build(module.AlterConfigsResourceResponse, error_code=code, error_message=message,
                  resource_type=resource.resource_type, resource_name=resource.resource_name)
        )
    return build_response(module.IncrementalAlterConfigsResponse, throttle_time=NO_THROTTLE,
                          responses=tuple(responses))
