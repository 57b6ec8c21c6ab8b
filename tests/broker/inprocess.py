"""An in-process broker on its own event-loop thread, so blocking clients can talk to it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from odradek.broker.app import serve
from odradek.broker.server import Broker
from odradek.config import BrokerConfig

T = TypeVar("T")


def broker_config(zk_connect: str, data_dir: Path, broker_id: int = 0, **overrides: str) -> Any:
    properties = {
        "broker.id": str(broker_id),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data_dir),
        "zookeeper.connect": zk_connect,
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    }
    properties.update({key.replace("_", "."): str(value) for key, value in overrides.items()})
    return BrokerConfig.from_properties(properties)


class InProcessBroker:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="broker-loop",
                                        daemon=True)
        self.broker: Broker | None = None

    def start(self) -> InProcessBroker:
        self._thread.start()
        self.broker = self.run(serve(self.config), timeout=60)
        return self

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def call(self, fn: Any, *args: Any) -> Any:
        async def invoke() -> Any:
            return fn(*args)

        return self.run(invoke())

    @property
    def port(self) -> int:
        assert self.broker is not None
        return self.broker.bound_port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        if self.broker is not None:
            self.run(self.broker.stop(), timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
