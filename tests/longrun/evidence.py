"""Reads the worker journals of a run back into an :class:`~tests.longrun.invariants.Evidence`.

The layout of a run's evidence directory (kept after the test, its path printed):
``producers/*.journal``, ``members/*.journal``, ``readback.journal``, ``committed.json``,
``state.json`` (the monitor's last ZooKeeper snapshot), ``state.final.json`` (the one
judged: taken once the cluster healed, before the read-back), ``state-history.jsonl``,
``faults.jsonl``, ``progress.log`` and ``workers/*.log`` (each worker's own output).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tests.longrun.invariants import Ack, Commit, Consumed, Evidence, LogRecord, PartitionState

__all__ = ["load_evidence", "load_states"]


def _name(text: str) -> str:
    return "" if text == "-" else sys.intern(text)


def _producers(directory: Path, evidence: Evidence, counts: Counter[str]) -> None:
    for path in sorted(directory.glob("*.journal")):
        for line in path.read_text().splitlines():
            fields = line.split(" ", 6)
            if fields[0] == "A" and len(fields) == 7:
                evidence.acks.append(Ack(_name(fields[1]), int(fields[2]), _name(fields[3]),
                                         int(fields[4]), int(fields[5]), float(fields[6])))
            elif fields[0] == "F":
                counts["produce.failed"] += 1


def _members(directory: Path, evidence: Evidence, counts: Counter[str]) -> None:
    for path in sorted(directory.glob("*.journal")):
        group = member = ""
        for line in path.read_text().splitlines():
            fields = line.split(" ")
            kind = fields[0]
            if kind == "R" and len(fields) == 7:
                evidence.consumed.append(Consumed(
                    group, member, int(fields[1]), _name(fields[2]), int(fields[3]),
                    int(fields[4]), _name(fields[5]), int(fields[6])))
            elif kind == "C" and len(fields) == 4:
                evidence.commits.append(Commit(group, member, _name(fields[1]),
                                               int(fields[2]), int(fields[3])))
            elif kind == "H":
                group, member = _name(fields[1]), _name(fields[2])
                counts[f"members.{fields[3]}"] += 1
            elif kind == "X":
                counts["commits.failed"] += 1
            elif kind == "U":
                counts["consumed.unowned"] += 1
            elif kind == "S":
                counts["assignments"] += 1


def _read_back(path: Path, evidence: Evidence) -> None:
    for line in path.read_text().splitlines():
        fields = line.split(" ")
        if fields[0] == "L" and len(fields) == 6:
            evidence.log.append(LogRecord(_name(fields[1]), int(fields[2]), int(fields[3]),
                                          _name(fields[4]), int(fields[5])))
        elif fields[0] == "E":
            evidence.end_offsets[(_name(fields[1]), int(fields[2]))] = int(fields[3])


def load_states(state: dict[str, Any]) -> list[PartitionState]:
    """The partitions of a monitor snapshot (``state.json``)."""
    return [PartitionState(topic, partition, leader, tuple(isr), tuple(replicas))
            for topic, partition, leader, isr, replicas in state["partitions"]]


def load_evidence(directory: Path, load_window: tuple[float, float]
                  ) -> tuple[Evidence, Counter[str]]:
    """The run's evidence, plus counts of facts the checker does not judge (failed
    deliveries and commits, assignments, members by client)."""
    evidence = Evidence(load_window=load_window)
    counts: Counter[str] = Counter()
    _producers(directory / "producers", evidence, counts)
    _members(directory / "members", evidence, counts)
    _read_back(directory / "readback.journal", evidence)
    committed = json.loads((directory / "committed.json").read_text())
    for group, offsets in committed.items():
        for where, offset in offsets.items():
            topic, partition = where.split(" ")
            evidence.final_committed[(group, topic, int(partition))] = offset
    evidence.states = load_states(json.loads((directory / "state.final.json").read_text()))
    return evidence, counts
