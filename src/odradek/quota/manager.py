"""The broker's client quotas: who may send or fetch how fast, and how long to throttle.

One :class:`QuotaManager` per broker holds the configured quotas (from ZooKeeper, replaced
whole by :meth:`QuotaManager.configure` whenever they change) and one *sensor* per quota
type and sharer (:func:`odradek.quota.entities.resolve`'s tags): a windowed
:class:`~odradek.quota.rate.SampledRate` plus throttle totals for the metrics.

On the request path a caller records one value per request — the Produce request's size,
the Fetch response's size, the request's handling time — and gets the throttle time in ms
(0 within quota). That is a dict lookup and an O(1) record; which sensor a (user, client
id) records into is resolved once and cached until the quotas change. A quota type nobody
configured costs one attribute test. Sensors idle for an hour are dropped (Kafka's
expiry), so client ids that come and go do not grow the broker's memory.

Sans-IO: time comes from the injected clock (monotonic milliseconds).
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from odradek.clock import monotonic_s

from .entities import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    QuotaEntity,
    Tags,
    resolve,
)
from .rate import SampledRate

__all__ = ["QuotaManager", "QuotaState", "QuotaType", "parse_stored"]

log = logging.getLogger(__name__)

_EXPIRE_MS = 3_600_000.0  # Kafka's inactive sensor expiry (one hour)
_SWEEP_EVERY = 1024  # new cache entries between expiry sweeps


class QuotaType(enum.Enum):
    """Kafka's quota managers: the key each enforces."""

    PRODUCE = PRODUCER_BYTE_RATE
    FETCH = CONSUMER_BYTE_RATE
    REQUEST = REQUEST_PERCENTAGE

    # Members are singletons: identity hashing, not Enum's hash of the name (in Python), as
    # these key the request path's dicts.
    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True)
class QuotaState:
    """One sensor as the metrics read it."""

    kind: QuotaType
    user: str
    client_id: str
    rate: float  # bytes/s (produce, fetch) or percent of a thread (request)
    quota: float | None
    throttle_seconds_total: float
    throttled_total: int


def parse_stored(
    stored: Mapping[QuotaEntity, Mapping[str, str]],
) -> dict[QuotaEntity, dict[str, float]]:
    """The quota values of stored entity configs (ZooKeeper strings); a value that is not a
    non-negative number (written past validation) is skipped with a log line, as Kafka
    skips bad dynamic configs, so a bad znode cannot stop a broker."""
    parsed: dict[QuotaEntity, dict[str, float]] = {}
    for entity, config in stored.items():
        values: dict[str, float] = {}
        for kind in QuotaType:
            raw = config.get(kind.value)
            if raw is None:
                continue
            try:
                value = float(raw)
            except ValueError:
                value = math.nan
            if math.isfinite(value) and value >= 0:
                values[kind.value] = value
            else:
                log.error("ignoring quota %s=%r of %s", kind.value, raw, entity.zk_path)
        if values:
            parsed[entity] = values
    return parsed


class _Sensor:
    __slots__ = ("bound", "rate", "throttle_ms_total", "throttled")

    def __init__(self, samples: int, window_ms: float, bound: float | None) -> None:
        self.rate = SampledRate(samples, window_ms)
        self.bound = bound
        self.throttle_ms_total = 0.0
        self.throttled = 0


def _monotonic_ms() -> float:
    return monotonic_s() * 1000.0


class QuotaManager:
    def __init__(
        self,
        samples: int = 11,
        window_seconds: int = 1,
        clock_ms: Callable[[], float] = _monotonic_ms,
    ) -> None:
        self._samples = samples
        self._window_ms = window_seconds * 1000.0
        self.max_throttle_ms = self._window_ms  # Kafka: one sample window
        self._clock = clock_ms
        self._quotas: dict[QuotaType, dict[QuotaEntity, float]] = {t: {} for t in QuotaType}
        self._enabled: dict[QuotaType, bool] = dict.fromkeys(QuotaType, False)
        self.active = False  # any quota configured at all (the request path's one test)
        self._sensors: dict[tuple[QuotaType, Tags], _Sensor] = {}
        self._by_client: dict[tuple[QuotaType, str, str], _Sensor] = {}
        self._added = 0

    # -- configuration ---------------------------------------------------------------------

    def configure(self, configs: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        """Replace every quota: entity -> {quota key: value} (other keys are ignored)."""
        for kind in QuotaType:
            self._quotas[kind] = {
                entity: float(values[kind.value])
                for entity, values in configs.items() if kind.value in values
            }
            self._enabled[kind] = bool(self._quotas[kind])
        self.active = any(self._enabled.values())
        self._by_client.clear()
        # Existing sensors keep their rates; their bounds follow the new configuration.
        for (kind, tags), sensor in self._sensors.items():
            sensor.bound = self._bound_for_tags(kind, tags)

    def _bound_for_tags(self, kind: QuotaType, tags: Tags) -> float | None:
        user, client_id = tags
        found_tags, bound = resolve(self._quotas[kind], user, client_id)
        return bound if found_tags == tags else None

    def enabled(self, kind: QuotaType) -> bool:
        return self._enabled[kind]

    def quota(self, kind: QuotaType, user: str, client_id: str) -> float | None:
        """The quota (user, client id) gets for ``kind``; None when unlimited."""
        return resolve(self._quotas[kind], user, client_id)[1]

    # -- the request path ------------------------------------------------------------------

    def _sensor(self, kind: QuotaType, user: str, client_id: str) -> _Sensor:
        key = (kind, user, client_id)
        sensor = self._by_client.get(key)
        if sensor is None:
            tags, bound = resolve(self._quotas[kind], user, client_id)
            sensor = self._sensors.get((kind, tags))
            if sensor is None:
                sensor = self._sensors[(kind, tags)] = _Sensor(
                    self._samples, self._window_ms, bound)
            sensor.bound = bound
            self._by_client[key] = sensor
            self._added += 1
            if self._added >= _SWEEP_EVERY:
                self._expire(self._clock())
        return sensor

    def record(self, kind: QuotaType, user: str, client_id: str, value: float) -> int:
        """Add ``value`` (bytes; for REQUEST, percent-seconds of a thread) to the client's
        sensor; the throttle time in ms (counted for the metrics), 0 within quota or
        without a quota of ``kind``."""
        if not self._enabled[kind]:
            return 0
        sensor = self._by_client.get((kind, user, client_id))
        if sensor is None:
            sensor = self._sensor(kind, user, client_id)
        now = self._clock()
        sensor.rate.record(value, now)
        bound = sensor.bound
        if bound is None:
            return 0
        throttle_ms = sensor.rate.throttle_ms(bound, now, self.max_throttle_ms)
        if throttle_ms > 0:
            sensor.throttle_ms_total += throttle_ms
            sensor.throttled += 1
        return throttle_ms

    def unrecord(self, kind: QuotaType, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value (a throttled Fetch is answered empty, as in Kafka)."""
        if self._enabled[kind]:
            self._sensor(kind, user, client_id).rate.record(-value, self._clock())

    def max_bytes_in_window(self, kind: QuotaType, user: str, client_id: str) -> int | None:
        """The most one response may carry (Kafka caps a Fetch at the quota times the
        measured window); None without a quota."""
        if not self._enabled[kind]:
            return None
        bound = self._sensor(kind, user, client_id).bound
        if bound is None:
            return None
        return int(bound * max(self._samples - 1, 1) * self._window_ms / 1000.0)

    # -- housekeeping and metrics ----------------------------------------------------------

    def _expire(self, now: float) -> None:
        self._added = 0
        idle = {key for key, sensor in self._sensors.items()
                if now - sensor.rate.idle_since() > _EXPIRE_MS}
        if idle:
            gone = {id(self._sensors.pop(key)) for key in idle}
            self._by_client = {k: s for k, s in self._by_client.items() if id(s) not in gone}

    def quota_states(self) -> list[QuotaState]:
        """Every live sensor (the metrics' :class:`~odradek.metrics.sources.QuotaSource`,
        read at scrape time)."""
        now = self._clock()
        self._expire(now)
        return [
            QuotaState(kind, user, client_id, sensor.rate.per_second(now), sensor.bound,
                       sensor.throttle_ms_total / 1000.0, sensor.throttled)
            for (kind, (user, client_id)), sensor in sorted(
                self._sensors.items(), key=lambda item: (item[0][0].value, item[0][1]))
        ]
