"""Dynamic broker configs at runtime: the effective config, its sections, who applies what.

:class:`DynamicBrokerConfig` follows this broker's two dynamic layers in the cluster view
(``/config/brokers/<id>`` and ``/config/brokers/<default>``, see :mod:`odradek.dynamic_config`),
recomputes the effective :class:`~odradek.config.BrokerConfig` when either changes, cuts it
into new typed sections (:class:`~odradek.config_sections.BrokerSections`) and hands one
:class:`ConfigUpdate` to every :class:`Reconfigurable`. That is the one path of a live
change: a component that applies settings live has a ``reconfigure(section)`` method and is
given its new section whole (:class:`SectionFollower`), only when that section changed; a
key no component applies still takes effect at the next start (the effective config is
computed before the broker binds its listeners).

Applied live today (:func:`standard_reconfigurables`):

* every broker default of a topic config (``log.retention.*``, ``log.segment.bytes``,
  ``log.roll.*``, ``log.cleanup.policy``, ``min.insync.replicas``, ...): the effective log
  config of every topic without its own override, and of topics created later;
* the ``log`` section (``log.cleaner.dedupe.buffer.size``: the next cleaning pass uses it);
* the ``replication`` section (``num.replica.fetchers``: partitions followed from then on);
* the ``controller`` section (``unclean.leader.election.enable``: the controller's next
  election uses it);
* the replication throttles' rates (``leader.replication.throttled.rate``,
  ``follower.replication.throttled.rate``, dynamic-only: :class:`ThrottleRates`), from the
  next byte replicated.

Accepted, stored and reported (DescribeConfigs) but not acted on yet:
``log.cleaner.threads`` and ``log.cleaner.backoff.ms`` (storage runs one cleaner thread,
started with the backoff it had at startup).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from odradek.config import BROKER_CONFIGS, BrokerConfig
from odradek.config_sections import BrokerSections
from odradek.dynamic_config import DEFAULT_ENTITY, DYNAMIC_ONLY_CONFIGS, BrokerConfigLayers
from odradek.storage.log_config import LogConfig

if TYPE_CHECKING:
    from odradek.cluster.model import TopicMetadata
    from odradek.cluster.view import ClusterSnapshot
    from odradek.replication import ReplicaManager
    from odradek.replication.throttles import ReplicationQuotas
    from odradek.storage import LogManager

    from .cluster_facade import ClusterFacade

__all__ = [
    "ConfigUpdate",
    "DynamicBrokerConfig",
    "Reconfigurable",
    "SectionFollower",
    "ThrottleRates",
    "standard_reconfigurables",
]

log = logging.getLogger(__name__)

LOG_DEFAULT_KEYS = frozenset(
    {d.name for d in BROKER_CONFIGS.values() if d.topic_name is not None}
    | {"log.roll.ms", "log.roll.hours", "log.retention.ms", "log.retention.minutes",
       "log.retention.hours", "log.flush.scheduler.interval.ms"}
)


@dataclass(frozen=True, slots=True)
class ConfigUpdate:
    """One change of the effective configuration."""

    config: BrokerConfig  # the new effective config
    sections: BrokerSections  # ``config`` cut into sections
    previous: BrokerSections  # the sections before the change
    changed: frozenset[str]  # names whose effective value changed (dynamic-only included)
    dynamic_only: Mapping[str, Any] = field(default_factory=dict)  # their values, all of them


class Reconfigurable(Protocol):
    """Something that applies broker configs live."""

    def reconfigure(self, update: ConfigUpdate) -> None:
        """Called on the event loop, for every change of the effective config."""


class DynamicBrokerConfig:
    def __init__(self, static: BrokerConfig, broker_id: int) -> None:
        self.broker_id = broker_id
        self.layers = BrokerConfigLayers(static)
        self._current = static
        self._sections = BrokerSections.from_config(static)
        self._dynamic_only = self.layers.dynamic_only()
        self._listeners: list[Reconfigurable] = []

    @property
    def current(self) -> BrokerConfig:
        """The effective config: static, overridden by the cluster default, overridden by
        this broker's own dynamic configs."""
        return self._current

    @property
    def sections(self) -> BrokerSections:
        """:attr:`current` cut into typed sections."""
        return self._sections

    @property
    def entity(self) -> str:
        return str(self.broker_id)

    def dynamic_only(self) -> Mapping[str, object]:
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
        old, old_only, previous = self._current, self._dynamic_only, self._sections
        self._current = self.layers.effective()
        self._dynamic_only = self.layers.dynamic_only()
        changed = frozenset(
            {n for n in BROKER_CONFIGS if old.raw(n) != self._current.raw(n)}
            | {n for n in DYNAMIC_ONLY_CONFIGS if old_only[n] != self._dynamic_only[n]}
        )
        if changed:
            self._sections = BrokerSections.from_config(self._current)
            log.info("broker %d config changed dynamically: %s", self.broker_id,
                     ", ".join(f"{n}={self._value(n)}" for n in sorted(changed)))
            update = ConfigUpdate(self._current, self._sections, previous, changed,
                                  dict(self._dynamic_only))
            for listener in list(self._listeners):
                try:
                    listener.reconfigure(update)
                except Exception:
                    log.exception("applying dynamic broker config in %r failed", listener)
        return changed

    def follow(self, snapshot: ClusterSnapshot) -> frozenset[str]:
        """Apply the layers of a cluster view snapshot (``broker_configs``)."""
        configs = getattr(snapshot, "broker_configs", {})
        return self.update(configs.get(DEFAULT_ENTITY, {}), configs.get(self.entity, {}))

    def _value(self, name: str) -> object:
        return self._dynamic_only[name] if name in self._dynamic_only else self._current.raw(name)


class TopicDefaults:
    """Broker defaults of topic configs: every topic's effective log config follows."""

    def __init__(self, log_manager: LogManager, replica_manager: ReplicaManager,
                 topics: Callable[[], Mapping[str, TopicMetadata]]) -> None:
        self.log_manager = log_manager
        self.replica_manager = replica_manager
        self.topics = topics

    def reconfigure(self, update: ConfigUpdate) -> None:
        if not update.changed & LOG_DEFAULT_KEYS:
            return
        self.log_manager.default_config = LogConfig.for_topic(update.config.topic_defaults())
        for topic in list(self.topics()):
            with contextlib.suppress(Exception):  # a topic deleted meanwhile
                self.replica_manager.update_topic_config(topic)


class SectionFollower:
    """Hands a component its section of :class:`BrokerSections` whole when it changed."""

    # Each component's ``apply`` takes its own section's type, so the parameter is open.
    def __init__(self, section: str, apply: Callable[[Any], None]) -> None:
        self.section = section
        self.apply = apply

    def reconfigure(self, update: ConfigUpdate) -> None:
        new = getattr(update.sections, self.section)
        if new != getattr(update.previous, self.section):
            self.apply(new)

    def __repr__(self) -> str:
        return f"SectionFollower({self.section!r}, {self.apply!r})"


class ThrottleRates:
    """The replication throttles' rates (dynamic-only broker configs) into the replica
    manager's quotas."""

    NAMES = frozenset({"leader.replication.throttled.rate",
                       "follower.replication.throttled.rate"})

    def __init__(self, throttles: ReplicationQuotas) -> None:
        self.throttles = throttles

    def reconfigure(self, update: ConfigUpdate) -> None:
        if update.changed & self.NAMES:
            values = update.dynamic_only
            self.throttles.set_rates(values["leader.replication.throttled.rate"],
                                     values["follower.replication.throttled.rate"])


def standard_reconfigurables(
    log_manager: LogManager, replica_manager: ReplicaManager, cluster: ClusterFacade
) -> list[Reconfigurable]:
    """What a broker applies live (see the module docstring)."""
    found: list[Reconfigurable] = [
        TopicDefaults(log_manager, replica_manager, lambda: cluster.view.topics),
        SectionFollower("log", log_manager.reconfigure),
        SectionFollower("replication", replica_manager.reconfigure),
        ThrottleRates(replica_manager.throttles),
    ]
    controller = getattr(cluster, "controller", None)
    if controller is not None:
        found.append(SectionFollower("controller", controller.reconfigure))
    return found
