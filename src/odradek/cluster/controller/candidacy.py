"""Becoming, staying and stopping being the controller (blocking; run in a worker thread).

Every broker tries to create the ephemeral ``/controller``; the winner, in the *same*
transaction, increments ``/controller_epoch`` conditionally on the version it read, so
exactly one broker holds each epoch. Losers watch ``/controller`` and race again when it
disappears: when the controller's session ends (expiry, clean stop), when it resigns, or
when another broker *deposes* a controller whose process is gone
(:func:`depose_dead_controller`) — the same evidence the controller itself uses to fail a
broker fast (:mod:`.broker_failure`), so a dead controller does not cost a session timeout.
"""

from __future__ import annotations

import contextlib
import logging

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from odradek.cluster import znodes
from odradek.cluster.controller.context import ControllerContext, Watch

__all__ = ["depose_dead_controller", "elect", "resign"]

log = logging.getLogger(__name__)


def elect(ctx: ControllerContext, controller_watch: Watch) -> tuple[int, int] | None:
    """``(epoch, epoch znode version)`` if we hold ``/controller`` (winning it if it is
    free), else None. Leaves ``controller_watch`` on ``/controller``."""
    client = ctx.client
    while True:
        stat = client.exists(znodes.CONTROLLER, watch=controller_watch)
        if stat is not None:
            if stat.ephemeralOwner != ctx.session.session_id:
                return None
            if ctx.epoch is not None:
                return ctx.epoch, ctx.epoch_zk_version
            # Our own node from a create whose reply was lost: adopt the current epoch.
            data, epoch_stat = client.get(znodes.CONTROLLER_EPOCH)
            return znodes.decode_controller_epoch(data), epoch_stat.version
        epoch, epoch_version = _read_or_create_epoch(client)
        txn = client.transaction()
        txn.create(znodes.CONTROLLER, znodes.encode_controller(ctx.broker_id), ephemeral=True)
        txn.set_data(
            znodes.CONTROLLER_EPOCH,
            znodes.encode_controller_epoch(epoch + 1),
            version=epoch_version,
        )
        results = txn.commit()
        if not any(isinstance(r, Exception) for r in results):
            client.exists(znodes.CONTROLLER, watch=controller_watch)
            return epoch + 1, results[1].version
        # Lost the race (NodeExists) or the epoch moved (BadVersion): look again.


def _read_or_create_epoch(client: KazooClient) -> tuple[int, int]:
    try:
        data, stat = client.get(znodes.CONTROLLER_EPOCH)
        return znodes.decode_controller_epoch(data), stat.version
    except NoNodeError:
        pass
    with contextlib.suppress(NodeExistsError):
        client.create(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(0))
    data, stat = client.get(znodes.CONTROLLER_EPOCH)
    return znodes.decode_controller_epoch(data), stat.version


def resign(ctx: ControllerContext) -> None:
    """Delete ``/controller`` if it is ours, so the others elect a successor at once."""
    client = ctx.client
    stat = client.exists(znodes.CONTROLLER)
    if stat is not None and stat.ephemeralOwner == ctx.session.session_id:
        client.delete(znodes.CONTROLLER, version=stat.version)
        log.info("controller %d resigned", ctx.broker_id)


def depose_dead_controller(client: KazooClient, controller_id: int, broker_epoch: int) -> bool:
    """Delete ``/controller`` held by ``controller_id`` whose process is gone.

    Only if the controller node belongs to the very session of the registration found dead
    (``broker_epoch``): a controller that restarted, re-registered or was already replaced
    is left alone. Deleting the node only starts an election; a deposed controller that is
    somehow still running is fenced by the epoch its successor writes, as after any
    election. True if this call deleted it.
    """
    try:
        _, registration = client.get(znodes.broker_path(controller_id))
        data, stat = client.get(znodes.CONTROLLER)
    except NoNodeError:
        return False
    if registration.czxid != broker_epoch or znodes.decode_controller(data) != controller_id:
        return False
    if stat.ephemeralOwner != registration.ephemeralOwner:
        return False
    try:
        client.delete(znodes.CONTROLLER, version=stat.version)
    except (NoNodeError, BadVersionError):
        return False
    log.warning(
        "deposed controller %d: its process is gone (connections refused); electing a "
        "successor without waiting for its ZooKeeper session to expire",
        controller_id,
    )
    return True
