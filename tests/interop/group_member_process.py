"""A consumer-group member running as its own process, seen through the lines it prints.

Both member programs (``java/GroupConsumer.java`` on Kafka's Java client and
``rdkafka_group_member.py`` on librdkafka) print ``<wall ms> <EVENT> <rest>``: ``ASSIGNED``,
``REVOKED`` and ``LOST`` with comma-separated partitions, stamped from inside the client's own
rebalance callbacks, ``RECORD <partition> <offset>`` and ``CLOSED``. From them a test replays
what each member owned when, and checks that no two members ever owned a partition at once.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from tests.harness.apache_kafka import ApacheKafka

__all__ = ["JavaMember", "MemberProcess", "RdKafkaMember", "assert_never_owned_twice"]

FOREVER = 2**62
JAVA_PROGRAM = Path(__file__).parent / "java" / "GroupConsumer.java"
RDKAFKA_PROGRAM = Path(__file__).parent / "rdkafka_group_member.py"


class MemberProcess:
    """One member process; its stdout lines, parsed as they arrive."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.lines: list[tuple[int, str, str]] = []  # (wall ms, event, rest)
        self.stderr: list[str] = []
        self.killed_at: int | None = None  # wall ms of a SIGKILL: it owns nothing after
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            stamp, event, *rest = line.rstrip("\n").split(" ", 2)
            with self._lock:
                self.lines.append((int(stamp), event, rest[0] if rest else ""))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def events(self) -> list[tuple[int, str, str]]:
        with self._lock:
            return list(self.lines)

    def owned(self) -> set[int]:
        """Partitions owned now, replaying the rebalance-listener callbacks."""
        if self.killed_at is not None:
            return set()
        owned: set[int] = set()
        for _stamp, event, rest in self.events():
            if event not in ("ASSIGNED", "REVOKED", "LOST"):
                continue
            parts = {int(p) for p in rest.split(",") if p}
            if event == "ASSIGNED":
                owned |= parts
            elif event in ("REVOKED", "LOST"):
                owned -= parts
        return owned

    def records(self) -> set[tuple[int, int]]:
        return set(self.consumed())

    def consumed(self) -> list[tuple[int, int]]:
        """(partition, offset) of every record it consumed, in order, repeats included."""
        return [(int(rest.split()[0]), int(rest.split()[1]))
                for _s, event, rest in self.events() if event == "RECORD"]

    def intervals(self) -> dict[int, list[tuple[int, int]]]:
        """partition -> [(owned from, owned until)] in wall-clock ms."""
        start: dict[int, int] = {}
        spans: dict[int, list[tuple[int, int]]] = {}
        for stamp, event, rest in self.events():
            if event not in ("ASSIGNED", "REVOKED", "LOST"):
                continue
            for p in (int(x) for x in rest.split(",") if x):
                if event == "ASSIGNED":
                    start[p] = stamp
                elif p in start:
                    spans.setdefault(p, []).append((start.pop(p), stamp))
        for p, since in start.items():
            spans.setdefault(p, []).append((since, self.killed_at or FOREVER))
        return spans

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)

    def kill(self) -> None:
        """SIGKILL (also the cleanup of a test)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
            if self.killed_at is None:
                self.killed_at = int(time.time() * 1000)

    def diagnostics(self) -> str:
        return (f"exit={self.proc.poll()} events={self.events()[-20:]}\n"
                f"stderr tail:\n{''.join(self.stderr[-30:])}")


class JavaMember(MemberProcess):
    """Kafka's Java consumer (``java/GroupConsumer.java``, a single-file program on
    ``kafka``'s client jars)."""

    def __init__(self, kafka: ApacheKafka, bootstrap: str, group: str, topic: str,
                 *properties: str) -> None:
        super().__init__(kafka.java_command(
            str(JAVA_PROGRAM), [bootstrap, group, topic, *properties],
            ["-Xmx256M", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]))


class RdKafkaMember(MemberProcess):
    """librdkafka (confluent-kafka, ``rdkafka_group_member.py``)."""

    def __init__(self, bootstrap: str, group: str, topic: str, *properties: str) -> None:
        super().__init__([sys.executable, str(RDKAFKA_PROGRAM), bootstrap, group, topic,
                          *properties])


def assert_never_owned_twice(members: Iterable[MemberProcess]) -> None:
    """From the members' own callbacks: every ownership interval of a partition ends (its
    revocation, or the owner's death) before the next owner's begins."""
    spans = [m.intervals() for m in members]
    for i, mine in enumerate(spans):
        for theirs in spans[i + 1:]:
            for p, intervals in mine.items():
                for a_from, a_until in intervals:
                    for b_from, b_until in theirs.get(p, []):
                        assert a_until <= b_from or b_until <= a_from, (
                            f"partition {p} owned by two members: {a_from}-{a_until} and "
                            f"{b_from}-{b_until}")


def wait_for(condition: Callable[[], bool], what: str, members: Iterable[MemberProcess],
             timeout_s: float = 60.0) -> None:
    """Poll ``condition``; past ``timeout_s`` fail the test with each member's diagnostics."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n" +
                        "\n".join(m.diagnostics() for m in members))
        time.sleep(0.2)
