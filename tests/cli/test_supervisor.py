"""The dev cluster's restart policy: the backoff schedule as arithmetic, and the supervisor
round on a real (tiny) child process with a clock the test moves."""

from __future__ import annotations

import signal
from pathlib import Path

from odradek.cli.supervisor import RestartBackoff, Supervisor, describe_exit
from odradek.local_cluster import ManagedProcess


def test_backoff_doubles_from_one_second_up_to_thirty() -> None:
    backoff = RestartBackoff()
    backoff.started(0.0)
    delays = [backoff.delay_after_exit(now) for now in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)]
    assert delays == [1, 2, 4, 8, 16, 30, 30]


def test_backoff_starts_over_after_the_process_stayed_up() -> None:
    backoff = RestartBackoff()
    backoff.started(0.0)
    assert [backoff.delay_after_exit(1.0), backoff.delay_after_exit(2.0)] == [1, 2]
    backoff.started(10.0)
    assert backoff.delay_after_exit(69.0) == 4  # up 59 s: still the same bout of failures
    backoff.started(100.0)
    assert backoff.delay_after_exit(160.0) == 1  # up a minute: a fresh failure


def test_backoff_stays_finite_however_often_a_process_dies() -> None:
    backoff = RestartBackoff()
    assert [backoff.delay_after_exit(0.0) for _ in range(5000)][-1] == 30


def test_exit_descriptions_name_the_signal_or_the_code() -> None:
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL"
    assert describe_exit(-signal.SIGSEGV) == "killed by SIGSEGV"
    assert describe_exit(1) == "exited with code 1"
    assert describe_exit(0) == "exited with code 0"
    assert describe_exit(-200) == "killed by signal 200"


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_supervisor_reports_the_death_and_restarts_after_the_delay(tmp_path: Path) -> None:
    sleeper = ManagedProcess("broker-1", ["sleep", "60"], tmp_path / "sleeper.log")
    other = ManagedProcess("broker-0", ["sleep", "60"], tmp_path / "other.log")
    sleeper.start()
    other.start()
    other_pid = other.pid
    lines: list[str] = []
    clock = _Clock()
    supervisor = Supervisor([sleeper, other], lines.append, clock=clock)
    try:
        first_pid = sleeper.pid
        sleeper.kill()
        clock.now = 5.0
        supervisor.check()
        assert len(lines) == 1, lines
        assert f"broker-1 (pid {first_pid}) killed by SIGKILL; restarting it in 1 s" in lines[0]
        clock.now = 5.5
        supervisor.check()
        assert not sleeper.running, "restarted before its backoff delay"
        clock.now = 6.0
        supervisor.check()
        assert sleeper.running and sleeper.pid != first_pid
        assert f"broker-1 restarted (pid {sleeper.pid})" in lines[1]
        clock.now = 6.1
        supervisor.check()
        assert "broker-1 is serving again" in lines[2]
        sleeper.kill()  # dies again within a minute: twice the delay
        clock.now = 7.0
        supervisor.check()
        assert "restarting it in 2 s" in lines[3]
        assert other.running and other.pid == other_pid
        assert len(lines) == 4, lines
    finally:
        sleeper.stop()
        other.stop()


def test_a_process_that_fails_names_its_exit_code_and_log(tmp_path: Path) -> None:
    failing = ManagedProcess("zookeeper", ["sh", "-c", "exit 3"], tmp_path / "zk.log")
    failing.start()
    lines: list[str] = []
    supervisor = Supervisor([failing], lines.append, clock=_Clock())
    try:
        failing.process.wait(10)  # type: ignore[union-attr]
        supervisor.check()
        assert f"exited with code 3 (log: {tmp_path / 'zk.log'}); restarting it in 1 s" \
            in lines[0], lines
    finally:
        failing.stop()
