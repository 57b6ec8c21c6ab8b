"""Dynamic broker configs at runtime: the effective config, and who applies what.

:class:`DynamicBrokerConfig` follows this broker's two dynamic layers in the cluster view
(``/config/brokers/<id>`` and ``/config/brokers/<default>``, see :mod:`odradek.dynamic_config`),
recomputes the effective :class:`~odradek.config.BrokerConfig` when either changes, and
hands it to every :class:`Reconfigurable` with the names that changed — one interface for
every component that applies settings live. Components read their settings from the config
they are given; a key no component applies still takes effect at the next start (the
effective config is computed before the broker binds its listeners).

Applied live today (:func:`standard_reconfigurables`):

* every broker default of a topic config (``log.retention.*``, ``log.segment.bytes``,
  ``log.roll.*``, ``log.cleanup.policy``, ``min.insync.replicas``, ...): the effective log
  config of every topic without its own override, and of topics created later;
* ``log.cleaner.dedupe.buffer.size``: the next cleaning pass uses it;
* ``unclean.leader.election.enable``: the controller's next election uses it.

Accepted, stored and reported (DescribeConfigs) but not acted on yet: the replication
throttles (``leader.replication.throttled.rate``, ``follower.replication.throttled.rate``),
``log.cleaner.threads`` and ``log.cleaner.backoff.ms`` (storage runs one cleaner thread,
started with the backoff it had at startup), ``num.replica.fetchers``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from odradek.config import BROKER_CONFIGS, BrokerConfig
from odradek.dynamic_config import DEFAULT_ENTITY, DYNAMIC_ONLY_CONFIGS, BrokerConfigLayers

__all__ = ["DynamicBrokerConfig", "Reconfigurable", "standard_reconfigurables"]

log = logging.getLogger(__name__)

LOG_DEFAULT_KEYS = frozenset(
    {d.name for d in BROKER_CONFIGS.values() if d.topic_name is not None}
    | {"log.roll.ms", "log.roll.hours", "log.retention.ms", "log.retention.minutes",
       "log.retention.hours", "log.flush.scheduler.interval.ms"}
)


class Reconfigurable(Protocol):
    """A component that applies broker configs live."""

    def reconfigure(self, config: BrokerConfig, changed: frozenset[str]) -> None:
        """``config`` is the new effective config; ``changed`` the names whose effective
        value changed (dynamic-only names included). Called on the event loop."""


class DynamicBrokerConfig:
    def __init__(self, static: BrokerConfig, broker_id: int) -> None:
        self.broker_id = broker_id
        self.layers = BrokerConfigLayers(static)
        self._current = static
        self._dynamic_only = self.layers.dynamic_only()
        self._listeners: list[Reconfigurable] = []

    @property
    def current(self) -> BrokerConfig:
        """The effective config: static, overridden by the cluster default, overridden by
        this broker's own dynamic configs."""
        return self._current

    @property
    def entity(self) -> str:
        return str(self.broker_id)

    def dynamic_only(self) -> Mapping[str, Any]:
        """Current values of the dynamic-only configs (replication throttles)."""
        return dict(self._dynamic_only)

    def add_listener(self, listener: Reconfigurable) -> None:
        self._listeners.append(listener)

    def update(self, default: Mapping[str, str], broker: Mapping[str, str]) -> frozenset[str]:
        """New dynamic layers; tells the listeners if the effective config changed.
        Returns the changed names."""
        if dict(default) == dict(self.layers.default) and dict(broker) == dict(
            self.layers.broker
        ):
            return frozenset()
        self.layers = BrokerConfigLayers(self.layers.static, dict(default), dict(broker))
        old, old_only = self._current, self._dynamic_only
        self._current = self.layers.effective()
        self._dynamic_only = self.layers.dynamic_only()
        changed = frozenset(
            {n for n in BROKER_CONFIGS if old.raw(n) != self._current.raw(n)}
            | {n for n in DYNAMIC_ONLY_CONFIGS if old_only[n] != self._dynamic_only[n]}
        )
        if changed:
            log.info("broker %d config changed dynamically: %s", self.broker_id,
                     ", ".join(f"{n}={self._value(n)}" for n in sorted(changed)))
            for listener in list(self._listeners):
                try:
                    listener.reconfigure(self._current, changed)
                except Exception:
                    log.exception("applying dynamic broker config in %r failed", listener)
        return changed

    def follow(self, snapshot: Any) -> frozenset[str]:
        """Apply the layers of a cluster view snapshot (``broker_configs``)."""
        configs = getattr(snapshot, "broker_configs", {})
        return self.update(configs.get(DEFAULT_ENTITY, {}), configs.get(self.entity, {}))

    def _value(self, name: str) -> Any:
        return self._dynamic_only[name] if name in self._dynamic_only else self._current.raw(name)


class LogDefaults:
    """Broker defaults of topic configs: every topic's effective log config follows."""

    def __init__(self, log_manager: Any, replica_manager: Any,
                 topics: Callable[[], Any]) -> None:
        self.log_manager = log_manager
        self.replica_manager = replica_manager
        self.topics = topics

    def reconfigure(self, config: BrokerConfig, changed: frozenset[str]) -> None:
        if not changed & LOG_DEFAULT_KEYS:
            return
        self.log_manager.default_config = config.log_config()
        for topic in list(self.topics()):
            with contextlib.suppress(Exception):  # a topic deleted meanwhile
                self.replica_manager.update_topic_config(topic)


class LogCleanerSettings:
    def __init__(self, log_manager: Any) -> None:
        self.log_manager = log_manager

    def reconfigure(self, config: BrokerConfig, changed: frozenset[str]) -> None:
        if "log.cleaner.dedupe.buffer.size" in changed:
            self.log_manager.dedupe_buffer_size = int(config["log.cleaner.dedupe.buffer.size"])


class ControllerSettings:
    def __init__(self, controller: Any) -> None:
        self.controller = controller

    def reconfigure(self, config: BrokerConfig, changed: frozenset[str]) -> None:
        if "unclean.leader.election.enable" in changed:
            self.controller.set_unclean_leader_election(
                bool(config["unclean.leader.election.enable"])
            )


def standard_reconfigurables(
    log_manager: Any, replica_manager: Any, cluster: Any
) -> list[Reconfigurable]:
    """What a broker applies live (see the module docstring)."""
    found: list[Reconfigurable] = [
        LogDefaults(log_manager, replica_manager, lambda: cluster.view.topics),
        LogCleanerSettings(log_manager),
    ]
    controller = getattr(cluster, "controller", None)
    if controller is not None:
        found.append(ControllerSettings(controller))
    return found
