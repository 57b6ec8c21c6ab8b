"""Is a broker's process still there? One idle TCP connection per broker tells.

When a process dies, its host's kernel closes its sockets: an open connection to it ends
(FIN or RST) at once, and a new one is *refused* (RST), because nothing listens on the port
any more. Nothing else produces a refusal from a registered broker: a paused process
(SIGSTOP, a long GC pause) keeps its listening socket, so the kernel still completes the
handshake; a network partition drops packets, so a connect times out. A refusal confirmed
a few times in a row is therefore evidence that the process is gone, available within
milliseconds instead of a ZooKeeper session timeout — and a timeout is never evidence.

:class:`ConnectionProbes` holds one connection to each target and sends nothing on it (no
protocol, no authentication: a TLS or SASL listener accepts the TCP handshake just the
same). When it breaks, the probe reconnects at once; ``confirm`` refusals ``interval_s``
apart report the target as dead, once. Other connect errors (unreachable, timed out) reset
the count and are retried after ``retry_s``. The controller probes every broker
(:mod:`odradek.cluster.controller.broker_failure`); every other broker probes the
controller (:func:`odradek.cluster.controller.candidacy.depose_dead_controller`).

Limit: a firewall rule that *rejects* (RST or ICMP port-unreachable) instead of dropping
looks exactly like a dead process; ``controller.fast.failover.enable=false`` turns the
probes off for such networks, leaving the session timeout as the only failure detector.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["ConnectionProbes", "ProbeTarget"]

log = logging.getLogger(__name__)

CONFIRM_REFUSALS = 3
CONFIRM_INTERVAL_S = 0.025
CONNECT_TIMEOUT_S = 5.0
RETRY_S = 0.5
_BRIEF_S = 1.0  # a connection that ended sooner than this is a reason to slow down


@dataclass(frozen=True, slots=True)
class ProbeTarget:
    """One registration of a broker: a new broker epoch or address is a new target."""

    broker_id: int
    epoch: int
    host: str
    port: int


class _Probe:
    def __init__(self, target: ProbeTarget, owner: ConnectionProbes) -> None:
        self.target = target
        self.owner = owner
        self.settled = asyncio.Event()  # a first verdict: connected, unreachable or dead
        self.stopped = False
        self.task = asyncio.create_task(
            self._run(), name=f"probe broker {target.broker_id} ({target.host}:{target.port})"
        )

    async def _run(self) -> None:
        owner = self.owner
        loop = asyncio.get_running_loop()
        refused = 0
        brief = 0
        while not self.stopped:
            try:
                async with asyncio.timeout(owner.connect_timeout_s):
                    reader, writer = await asyncio.open_connection(
                        self.target.host, self.target.port
                    )
            except ConnectionRefusedError:
                refused += 1
                if refused >= owner.confirm:
                    self.settled.set()
                    owner.report(self.target)
                    return
                await asyncio.sleep(owner.interval_s)
                continue
            except (OSError, TimeoutError) as exc:
                refused = 0
                self.settled.set()
                log.debug("probe of broker %d: %r", self.target.broker_id, exc)
                await asyncio.sleep(owner.retry_s)
                continue
            refused = 0
            self.settled.set()
            opened = loop.time()
            try:
                while not self.stopped and await reader.read(4096):
                    pass  # brokers send nothing unasked; read only to see the end
            except OSError:
                pass  # reset
            finally:
                writer.transport.abort()
            # Reconnect at once: this is the moment that matters. A peer that keeps
            # accepting and closing (not a broker at all?) is retried more slowly.
            brief = brief + 1 if loop.time() - opened < _BRIEF_S else 0
            if brief > 1:
                await asyncio.sleep(min(0.05 * 2 ** (brief - 2), owner.retry_s))

    def cancel(self) -> None:
        self.stopped = True
        self.task.cancel()


class ConnectionProbes:
    """One probe per :class:`ProbeTarget`; ``on_dead(target)`` runs on the loop, once per
    target, when its process is confirmed gone."""

    def __init__(
        self,
        on_dead: Callable[[ProbeTarget], None],
        *,
        confirm: int = CONFIRM_REFUSALS,
        interval_s: float = CONFIRM_INTERVAL_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        retry_s: float = RETRY_S,
    ) -> None:
        self.on_dead = on_dead
        self.confirm = max(1, confirm)
        self.interval_s = interval_s
        self.connect_timeout_s = connect_timeout_s
        self.retry_s = retry_s
        self._probes: dict[ProbeTarget, _Probe] = {}

    @property
    def targets(self) -> frozenset[ProbeTarget]:
        return frozenset(self._probes)

    def update(self, targets: Iterable[ProbeTarget]) -> None:
        """Probe exactly ``targets`` from now on (same targets keep their connections)."""
        wanted = set(targets)
        for target in list(self._probes):
            if target not in wanted:
                self._probes.pop(target).cancel()
        for target in wanted - self._probes.keys():
            self._probes[target] = _Probe(target, self)

    def report(self, target: ProbeTarget) -> None:
        if target not in self._probes:
            return  # no longer wanted
        try:
            self.on_dead(target)
        except Exception:
            log.exception("broker failure callback failed")

    async def settled(self, timeout: float) -> None:
        """Until every probe has a first verdict, at most ``timeout`` seconds."""
        waits = [probe.settled.wait() for probe in self._probes.values()]
        if waits:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await asyncio.gather(*waits)

    async def close(self) -> None:
        probes = list(self._probes.values())
        self._probes.clear()
        for probe in probes:
            probe.cancel()
        for probe in probes:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await probe.task
