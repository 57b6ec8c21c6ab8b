"""The purgatory completes operations on notification or at their deadline, exactly once."""

from __future__ import annotations

import asyncio

from odradek.replication.purgatory import DelayedOperation, Purgatory


class WaitForValue(DelayedOperation[str]):
    def __init__(self, box: dict[str, int], wanted: int) -> None:
        super().__init__()
        self.box = box
        self.wanted = wanted
        self.checks = 0

    def try_complete(self) -> bool:
        self.checks += 1
        if self.box["value"] >= self.wanted:
            self.complete("satisfied")
            return True
        return False

    def on_expire(self) -> None:
        self.complete("expired")


def test_completes_immediately_when_possible() -> None:
    async def scenario() -> None:
        purgatory = Purgatory("test")
        future = purgatory.try_complete_else_watch(WaitForValue({"value": 5}, 1), ["k"], 10)
        assert future.done() and future.result() == "satisfied"
        assert len(purgatory) == 0

    asyncio.run(scenario())


def test_completes_on_notification_of_its_key_only() -> None:
    async def scenario() -> None:
        purgatory = Purgatory("test")
        box = {"value": 0}
        operation = WaitForValue(box, 1)
        future = purgatory.try_complete_else_watch(operation, ["a"], 10)
        box["value"] = 1
        assert purgatory.check("b") == 0 and not future.done()
        assert purgatory.check("a") == 1
        assert await future == "satisfied"
        assert len(purgatory) == 0
        assert purgatory.check("a") == 0  # unwatched after completion

    asyncio.run(scenario())


def test_expires_at_deadline_without_polling() -> None:
    async def scenario() -> None:
        purgatory = Purgatory("test")
        operation = WaitForValue({"value": 0}, 1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        result = await purgatory.try_complete_else_watch(operation, ["a"], 0.2)
        elapsed = loop.time() - started
        assert result == "expired"
        assert 0.15 <= elapsed < 1.0
        assert operation.checks == 1  # only the initial attempt: no busy loop
        assert len(purgatory) == 0

    asyncio.run(scenario())


def test_expire_all_completes_everything() -> None:
    async def scenario() -> None:
        purgatory = Purgatory("test")
        futures = [purgatory.try_complete_else_watch(WaitForValue({"value": 0}, 1), [i], 60)
                   for i in range(3)]
        purgatory.expire_all()
        assert [await f for f in futures] == ["expired"] * 3

    asyncio.run(scenario())


def test_cancelled_operation_leaves_no_watchers() -> None:
    async def scenario() -> None:
        purgatory = Purgatory("test")
        future = purgatory.try_complete_else_watch(WaitForValue({"value": 0}, 1), ["a"], 0.05)
        future.cancel()  # what happens when the client's connection goes away
        await asyncio.sleep(0.1)  # let the deadline timer pass (this is the behaviour tested)
        assert len(purgatory) == 0

    asyncio.run(scenario())
