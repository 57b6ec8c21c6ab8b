"""DescribeConfigs (v1-v4), AlterConfigs (v0-v2), IncrementalAlterConfigs (v0-v1).

Topic configs are Kafka's topic-level names: a topic's overrides live in ZooKeeper
(``/config/topics/<t>``, read through the cluster view), everything else comes from the
broker's defaults. Broker configs are static (server.properties + overrides) and only
described; altering them arrives with dynamic broker config.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, response_module
from odradek.protocol.errors import (
    InvalidConfig,
    InvalidRequest,
    KafkaError,
    UnknownTopicOrPartition,
    error_code_of,
)

from ..context import RequestContext

__all__ = [
    "handle_alter_configs",
    "handle_describe_configs",
    "handle_incremental_alter_configs",
]

log = logging.getLogger(__name__)

TOPIC = 2
BROKER = 4

# Kafka's ConfigSource values
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# Kafka's ConfigType values (DescribeConfigs v3+)
_CONFIG_TYPES = {bool: 1, str: 2, int: 5, float: 7, list: 8}

_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3
_STATIC_BROKER = "only topic configs can be altered (broker configs are static)"


def _error(exc: BaseException) -> tuple[ErrorCode, str | None]:
    if isinstance(exc, KafkaError):
        return error_code_of(exc), str(exc) or None
    log.exception("config request failed", exc_info=exc)
    return ErrorCode.unknown_server_error, str(exc) or None


def _topic_overrides(ctx: RequestContext, name: str) -> Mapping[str, str]:
    topic = ctx.services.cluster.view.topics.get(name)
    if topic is None:
        raise UnknownTopicOrPartition(f"Topic '{name}' does not exist.")
    return topic.config


def _describe_topic(ctx: RequestContext, module: Any, name: str, keys: Any) -> list[Any]:
    overrides = _topic_overrides(ctx, name)
    effective = ctx.services.config.log_config(dict(overrides)).to_topic_config()
    entries = []
    for key, value in effective.items():
        if keys is not None and key not in keys:
            continue
        if key in overrides:
            source = DYNAMIC_TOPIC_CONFIG
        elif _broker_name_for(key) is not None and ctx.services.config.is_explicit(
            _broker_name_for(key)
        ):
            source = STATIC_BROKER_CONFIG
        else:
            source = DEFAULT_CONFIG
        entries.append(
            build(module.DescribeConfigsResourceResult, name=key, value=str(value),
                  read_only=False, config_source=source, is_sensitive=False, synonyms=(),
                  config_type=_config_type(value), documentation=None, is_default=False)
        )
    return entries


def _broker_name_for(topic_key: str) -> str | None:
    from odradek.config import BROKER_CONFIGS

    for definition in BROKER_CONFIGS.values():
        if definition.topic_name == topic_key:
            return definition.name
    return None


def _config_type(value: Any) -> int:
    for kind, code in _CONFIG_TYPES.items():
        if isinstance(value, kind):
            return code
    return 2


def _describe_broker(ctx: RequestContext, module: Any, name: str, keys: Any) -> list[Any]:
    config = ctx.services.config
    if name and name != str(ctx.services.broker_id):
        raise InvalidRequest(f"this is broker {ctx.services.broker_id}, not {name}")
    entries = []
    for key in sorted(config):
        if keys is not None and key not in keys:
            continue
        value = config[key]
        entries.append(
            build(module.DescribeConfigsResourceResult, name=key,
                  value=None if value is None else config.raw(key), read_only=True,
                  config_source=STATIC_BROKER_CONFIG if config.is_explicit(key) else DEFAULT_CONFIG,
                  is_sensitive=False, synonyms=(), config_type=_config_type(value),
                  documentation=None, is_default=not config.is_explicit(key))
        )
    return entries


def handle_describe_configs(ctx: RequestContext, request: Any) -> Any:
    module = response_module(ApiKey.DESCRIBE_CONFIGS, ctx.api_version)
    results = []
    for resource in request.resources:
        keys = (
            set(resource.configuration_keys)
            if resource.configuration_keys is not None else None
        )
        try:
            if resource.resource_type == TOPIC:
                entries = _describe_topic(ctx, module, resource.resource_name, keys)
            elif resource.resource_type == BROKER:
                entries = _describe_broker(ctx, module, resource.resource_name, keys)
            else:
                raise InvalidRequest(f"resource type {resource.resource_type} not supported")
            code, message = ErrorCode.none, None
        except Exception as exc:
            entries = []
            code, message = _error(exc)
        results.append(
            build(module.DescribeConfigsResult, error_code=code, error_message=message,
                  resource_type=resource.resource_type, resource_name=resource.resource_name,
                  configs=tuple(entries))
        )
    return build(module.DescribeConfigsResponse, throttle_time=NO_THROTTLE,
                 results=tuple(results))


async def _alter_topic(
    ctx: RequestContext, name: str, new_overrides: dict[str, str], validate_only: bool
) -> None:
    ctx.services.config.log_config(new_overrides)  # InvalidConfig names the bad key
    await ctx.services.cluster.alter_topic_config(name, new_overrides, validate_only)


async def handle_alter_configs(ctx: RequestContext, request: Any) -> Any:
    module = response_module(ApiKey.ALTER_CONFIGS, ctx.api_version)
    responses = []
    for resource in request.resources:
        try:
            if resource.resource_type != TOPIC:
                raise InvalidRequest(_STATIC_BROKER)
            _topic_overrides(ctx, resource.resource_name)
            overrides = {c.name: c.value for c in resource.configs if c.value is not None}
            await _alter_topic(ctx, resource.resource_name, overrides, bool(request.validate_only))
            code, message = ErrorCode.none, None
        except Exception as exc:
            code, message = _error(exc)
        responses.append(
            build(module.AlterConfigsResourceResponse, error_code=code, error_message=message,
                  resource_type=resource.resource_type, resource_name=resource.resource_name)
        )
    return build(module.AlterConfigsResponse, throttle_time=NO_THROTTLE,
                 responses=tuple(responses))


def _apply_incremental(
    current: Mapping[str, str], changes: Any, defaults: Mapping[str, Any]
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


async def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    module = response_module(ApiKey.INCREMENTAL_ALTER_CONFIGS, ctx.api_version)
    responses = []
    for resource in request.resources:
        try:
            if resource.resource_type != TOPIC:
                raise InvalidRequest(_STATIC_BROKER)
            current = _topic_overrides(ctx, resource.resource_name)
            defaults = ctx.services.config.log_config().to_topic_config()
            updated = _apply_incremental(current, resource.configs, defaults)
            await _alter_topic(ctx, resource.resource_name, updated, bool(request.validate_only))
            code, message = ErrorCode.none, None
        except Exception as exc:
            code, message = _error(exc)
        responses.append(
            build(module.AlterConfigsResourceResponse, error_code=code, error_message=message,
                  resource_type=resource.resource_type, resource_name=resource.resource_name)
        )
    return build(module.IncrementalAlterConfigsResponse, throttle_time=NO_THROTTLE,
                 responses=tuple(responses))
