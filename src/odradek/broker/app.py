"""Entry points: ``run(config)`` for the CLI (blocking), ``serve(config)`` for tests.

``run`` installs SIGTERM/SIGINT handlers that trigger the clean shutdown, and runs on
uvloop when it is installed (faster sockets and timers; zero-copy fetch does not depend on
it, see ``response_stream``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING

from .server import Broker

if TYPE_CHECKING:
    from odradek.cluster import ZkCluster
    from odradek.config import BrokerConfig
    from odradek.storage import LogManager

__all__ = ["Broker", "run", "serve"]

log = logging.getLogger(__name__)


async def serve(config: BrokerConfig, *, cluster: ZkCluster | None = None,
                log_manager: LogManager | None = None) -> Broker:
    """A started broker in the running loop (``await broker.stop()`` when done)."""
    broker = Broker(config, cluster=cluster, log_manager=log_manager)
    try:
        await broker.start()
    except BaseException:
        await broker.stop()
        raise
    return broker


async def _main(config: BrokerConfig) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    broker = await serve(config)
    try:
        await stop.wait()
    finally:
        await broker.stop()
    return 0


def run(config: BrokerConfig) -> int:
    """Run a broker until SIGTERM/SIGINT; returns the process exit code."""
    try:
        import uvloop  # optional: no uvloop on Windows (pyproject)
    except ImportError:
        return asyncio.run(_main(config))
    return uvloop.run(_main(config))
