"""Broker failure seen on the wire, ahead of ZooKeeper's session timeout.

ZooKeeper notices a dead broker only when its session expires (``zookeeper.session.timeout.ms``,
18 s by default), and until then every partition it led is unavailable. But when a broker's
*process* dies, its host's kernel closes its sockets at once: the controller's connection to
it breaks and every reconnect is refused (RST: nothing listens on the port any more). The
controller holds one connection to every registered broker (:mod:`odradek.cluster.liveness`);
when reconnects are refused a few times in a row, the broker is reported here and
**failed**: treated exactly as if its registration had vanished — new leaders from the ISR
minus that broker, ISRs shrunk — by the ordinary reconcile pass, i.e. the same fenced,
conditional writes and the same no-loss rules as any leader move (a clean leader comes
from the ISR; an unclean one only where ``unclean.leader.election.enable`` allows it).

What is *not* evidence: a timeout. A paused process (SIGSTOP, a long GC) still has its
listening socket, so connects succeed; a network partition drops packets and connects time
out. Both are left to the session timeout, as before: failing a broker that may still be
serving is exactly what the refused-connection rule avoids.

A failed broker stays failed for as long as *that* registration (its broker epoch) exists,
so the ghost of a dead broker — its znode lingers until the session expires — can never be
elected. Once ZooKeeper removes it and the restarted broker registers anew (a new broker
epoch), it is an ordinary live broker again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from odradek.cluster import znodes
from odradek.cluster.controller.context import ControllerContext

__all__ = ["fail_brokers"]

log = logging.getLogger(__name__)


def fail_brokers(ctx: ControllerContext, reports: Mapping[int, int]) -> list[int]:
    """Mark the reported brokers (``{broker id: broker epoch}``) failed if that registration
    is still the current one; returns the ids newly marked. The caller runs a reconcile
    pass next, which moves their leaderships."""
    marked: list[int] = []
    for broker_id, broker_epoch in sorted(reports.items()):
        if ctx.failed.get(broker_id) == broker_epoch or broker_id == ctx.broker_id:
            continue
        stat = ctx.client.exists(znodes.broker_path(broker_id))
        if stat is None or stat.czxid != broker_epoch:
            continue  # already gone, or a new registration: the ordinary rules apply
        ctx.failed[broker_id] = broker_epoch
        marked.append(broker_id)
        log.warning(
            "controller %d: broker %d refuses connections: its process is gone; moving its "
            "leaderships now (registration %d stays fenced until ZooKeeper removes it)",
            ctx.broker_id,
            broker_id,
            broker_epoch,
        )
    return marked
