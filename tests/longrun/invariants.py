"""What must hold after any run of faults, checked from the evidence the run left behind.

Both long suites (soak and chaos) end the same way: the load stops, every fault is healed,
each partition is read back from offset 0, and this module compares what the clients were
told against what the cluster holds. It is pure: plain values in, a :class:`Verdict` out,
no I/O, so a unit test can feed it a lost record, a duplicate or a reordering and watch it
fail (``tests/longrun/test_invariants.py``).

Every produced value names its producer and a sequence number unique to that producer
(:mod:`tests.longrun.values`), so a record is identified by ``(producer, seq)`` wherever it
is seen: in a delivery report, in a consumer's poll, in the final log.

The invariants, each a ``kind`` of :class:`Violation`:

- ``lost``: an acknowledged record is not in the final log.
- ``misplaced``: it is there, but not at the topic/partition/offset its ack reported.
- ``duplicate``: one ``(producer, seq)`` is in the log more than once (every producer is
  idempotent: the broker must drop a retried batch of the same producer id and epoch).
  Excused, and counted as ``duplicate.resent_after_epoch_bump``: a later copy written by the
  same producer id under a *higher* epoch. The broker deduplicates within an epoch only, by
  protocol; librdkafka bumps the epoch of an idempotent producer when any partition answers
  OUT_OF_ORDER_SEQUENCE_NUMBER behind a failed request, and then re-sends, under the new
  epoch, a record of another partition whose first send got an error after it was written
  (e.g. NOT_ENOUGH_REPLICAS_AFTER_APPEND). Apache Kafka duplicates it the same way
  (confluentinc/librdkafka#4953). Writers come from the segment files (``writers``); without
  them nothing is excused.
- ``producer-order``: within a partition, one producer's records are not in the order it
  sent them (idempotence keeps per-partition order); an excused re-send is not judged.
- ``foreign``: a record in the log that no producer of the run wrote (a corrupt value).
- ``log-gap``: the read-back of a partition is not every offset from 0 to its end offset.
- ``phantom-read``: a consumer saw a record that is not at that offset in the final log
  (it read past the high watermark, and the record was truncated away).
- ``consumer-order``: while a consumer owned a partition, the offsets it saw did not go up
  one by one (a step back, or a skipped record).
- ``group-gap``: below a group's committed offset, some offset was consumed by no member
  (every member commits only what it has consumed, so the group skipped records).
- ``commit-ahead``: a committed offset (acknowledged to a member, or the final one) beyond
  the partition's end offset.
- ``commit-lost``: a group's final committed offset is lower than one it acknowledged
  (members start from the committed offset and only commit forward).
- ``replica-divergence``: below the end offset, a replica's batches (offsets and CRCs, read
  from its segment files) differ from another's, or it lacks some.
- ``corrupt``: a batch below the end offset whose stored CRC does not match its bytes.
- ``offline`` / ``isr-incomplete``: after the heal, a partition has no leader, or its ISR
  is not every replica.
- ``stalled``: no produce was acknowledged for longer than ``max_ack_gap_s`` while load ran.
- ``unrecovered``: during the run, the cluster did not get every ISR full again within its
  deadline after a fault was healed (the run notes each such time in ``unrecovered``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import NamedTuple

__all__ = [
    "INVARIANTS",
    "Ack",
    "BatchWriter",
    "Commit",
    "Consumed",
    "Evidence",
    "LogRecord",
    "PartitionState",
    "Verdict",
    "Violation",
    "check",
]

TopicPartition = tuple[str, int]
RecordId = tuple[str, int]  # (producer, seq)
#: One batch of a replica's segment files: base offset, last offset, stored CRC, CRC valid.
ReplicaBatch = tuple[int, int, int, bool]



class BatchWriter(NamedTuple):
    """Who wrote one batch of the final log: its offsets, producer id and producer epoch."""

    base: int
    last: int
    producer_id: int
    producer_epoch: int


#: Every kind :func:`check` can report, in the module docstring's order: what a run's
#: report lists as checked.
INVARIANTS = (
    "lost", "misplaced", "duplicate", "producer-order", "foreign", "log-gap", "phantom-read",
    "consumer-order", "group-gap", "commit-ahead", "commit-lost", "replica-divergence",
    "corrupt", "offline", "isr-incomplete", "stalled", "unrecovered",
)

#: How many examples each violation kind keeps; the count is always exact.
EXAMPLES = 5


class Ack(NamedTuple):
    """A delivery report without error: the producer was told the record is at ``offset``."""

    producer: str
    seq: int
    topic: str
    partition: int
    offset: int
    at: float  # wall-clock time of the report


class LogRecord(NamedTuple):
    """One record of the final log as read back from offset 0 (``producer`` is ``""`` and
    ``seq`` -1 when the value was not one of ours)."""

    topic: str
    partition: int
    offset: int
    producer: str
    seq: int


class Consumed(NamedTuple):
    """One record a group member's poll returned. ``session`` numbers the member's
    ownerships of the partition: a new number each time the partition is assigned to it."""

    group: str
    member: str
    session: int
    topic: str
    partition: int
    offset: int
    producer: str
    seq: int


class Commit(NamedTuple):
    """An offset commit the group coordinator acknowledged to ``member``."""

    group: str
    member: str
    topic: str
    partition: int
    offset: int


class PartitionState(NamedTuple):
    """A partition's leader and ISR as the controller wrote them, and its replica set."""

    topic: str
    partition: int
    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


@dataclass
class Evidence:
    """Everything a run observed. ``end_offsets`` are the final log end offsets (high
    watermarks); ``final_committed`` maps (group, topic, partition) to the committed offset
    read after the run; ``load_window`` is the (start, end) wall time of the produce load."""

    acks: list[Ack] = field(default_factory=list)
    log: list[LogRecord] = field(default_factory=list)
    end_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    consumed: list[Consumed] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    final_committed: dict[tuple[str, str, int], int] = field(default_factory=dict)
    states: list[PartitionState] = field(default_factory=list)
    load_window: tuple[float, float] | None = None
    unrecovered: list[str] = field(default_factory=list)
    replicas: dict[TopicPartition, dict[int, list[ReplicaBatch]]] = field(default_factory=dict)
    writers: dict[TopicPartition, list[BatchWriter]] = field(default_factory=dict)


@dataclass(frozen=True)
class Violation:
    kind: str
    count: int
    examples: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.kind}: {self.count} (e.g. {'; '.join(self.examples)})"


@dataclass
class Verdict:
    violations: list[Violation]
    stats: dict[str, float]
    excused: list[str] = field(default_factory=list)  # examples of what was not judged

    @property
    def ok(self) -> bool:
        return not self.violations

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def summary(self) -> str:
        lines = ["invariants: " + ("all hold" if self.ok else
                                   f"{len(self.violations)} kinds violated"),
                 f"  checked: {', '.join(INVARIANTS)}"]
        lines += [f"  VIOLATED {v}" for v in self.violations]
        lines += [f"  excused {note}" for note in self.excused]
        lines += [f"  {key} = {value:g}" for key, value in sorted(self.stats.items())]
        return "\n".join(lines)


class _Findings:
    """Collects violations by kind: an exact count and the first few examples."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = defaultdict(int)
        self.examples: dict[str, list[str]] = defaultdict(list)

    def add(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(example)

    def violations(self) -> list[Violation]:
        return [Violation(kind, self.counts[kind], tuple(self.examples[kind]))
                for kind in sorted(self.counts)]


def check(evidence: Evidence, *, max_ack_gap_s: float = 120.0) -> Verdict:
    """Every invariant of the module docstring, over ``evidence``."""
    findings = _Findings()
    stats: dict[str, float] = {}
    excused: list[str] = []
    placement = _check_log(evidence, findings, stats, excused)
    _check_acks(evidence, placement, findings, stats)
    log_at = {(r.topic, r.partition, r.offset): (r.producer, r.seq) for r in evidence.log}
    _check_consumers(evidence, log_at, findings, stats)
    _check_commits(evidence, findings, stats)
    _check_states(evidence.states, findings, stats)
    _check_replicas(evidence, findings, stats)
    _check_liveness(evidence, max_ack_gap_s, findings, stats)
    for note in evidence.unrecovered:
        findings.add("unrecovered", note)
    return Verdict(findings.violations(), stats, excused)


def _check_log(evidence: Evidence, findings: _Findings, stats: dict[str, float],
               excused: list[str]) -> dict[RecordId, list[tuple[str, int, int]]]:
    """Gaps, foreign records, duplicates and per-producer order in the final log; returns
    where each (producer, seq) was found."""
    by_partition: dict[TopicPartition, list[LogRecord]] = defaultdict(list)
    for record in evidence.log:
        by_partition[(record.topic, record.partition)].append(record)
    placement: dict[RecordId, list[tuple[str, int, int]]] = defaultdict(list)
    resent: set[tuple[str, int, int]] = set()  # copies excused as epoch-bump re-sends
    for tp in sorted(set(by_partition) | set(evidence.end_offsets)):
        records = sorted(by_partition.get(tp, []), key=lambda r: r.offset)
        offsets = [r.offset for r in records]
        end = evidence.end_offsets.get(tp)
        expected = list(range(end)) if end is not None else list(range(len(offsets)))
        if offsets != expected:
            missing = sorted(set(expected) - set(offsets))
            extra = len(offsets) - len(set(offsets)) + len(set(offsets) - set(expected))
            findings.add("log-gap", f"{_tp(tp)}: read {len(offsets)} records, end offset "
                         f"{end}, missing offsets {_ranges(missing)}, {extra} unexpected")
        writer_at = _writer_lookup(evidence.writers.get(tp, []))
        first_copy: dict[RecordId, int] = {}
        last_seq: dict[str, tuple[int, int]] = {}
        for record in records:
            if not record.producer:
                findings.add("foreign", f"{_tp(tp)}@{record.offset}")
                continue
            rid = (record.producer, record.seq)
            placement[rid].append((*tp, record.offset))
            if rid in first_copy:
                first, again = writer_at(first_copy[rid]), writer_at(record.offset)
                if _resent_after_epoch_bump(first, again):
                    if len(excused) < EXAMPLES:
                        excused.append(
                            f"duplicate: {record.producer}:{record.seq} at {_tp(tp)}@"
                            f"{first_copy[rid]} (producer {first}) re-sent at "
                            f"@{record.offset} (producer {again})")
                    resent.add((*tp, record.offset))
                    continue
            first_copy.setdefault(rid, record.offset)
            previous = last_seq.get(record.producer)
            if previous is not None and record.seq <= previous[0]:
                findings.add("producer-order", f"{_tp(tp)}: {record.producer} seq "
                             f"{record.seq}@{record.offset} after seq {previous[0]}"
                             f"@{previous[1]}")
            last_seq[record.producer] = (record.seq, record.offset)
    for (producer, seq), found in placement.items():
        places = [place for place in found if place not in resent]
        if len(places) > 1:
            findings.add("duplicate", f"{producer}:{seq} at " +
                         ", ".join(f"{t}-{p}@{o}" for t, p, o in places))
    stats["log.records"] = len(evidence.log)
    stats["log.partitions"] = len(by_partition)
    stats["duplicate.resent_after_epoch_bump"] = len(resent)
    return placement


def _writer_lookup(writers: Sequence[BatchWriter]
                   ) -> Callable[[int], tuple[int, int] | None]:
    """offset -> (producer id, producer epoch) of the batch holding it, or None."""
    bases = [w.base for w in writers]

    def writer_at(offset: int) -> tuple[int, int] | None:
        index = bisect_right(bases, offset) - 1
        if index >= 0 and writers[index].last >= offset:
            return writers[index].producer_id, writers[index].producer_epoch
        return None

    return writer_at


def _resent_after_epoch_bump(first: tuple[int, int] | None,
                             again: tuple[int, int] | None) -> bool:
    """The later copy was written by the same producer id under a higher epoch."""
    return (first is not None and again is not None and first[0] >= 0
            and again[0] == first[0] and again[1] > first[1])


def _check_acks(evidence: Evidence, placement: Mapping[RecordId, list[tuple[str, int, int]]],
                findings: _Findings, stats: dict[str, float]) -> None:
    acked: set[RecordId] = set()
    for ack in evidence.acks:
        acked.add((ack.producer, ack.seq))
        places = placement.get((ack.producer, ack.seq))
        where = (ack.topic, ack.partition, ack.offset)
        if not places:
            findings.add("lost", f"{ack.producer}:{ack.seq} acked at "
                         f"{ack.topic}-{ack.partition}@{ack.offset}")
        elif where not in places:
            findings.add("misplaced", f"{ack.producer}:{ack.seq} acked at "
                         f"{ack.topic}-{ack.partition}@{ack.offset}, found at {places}")
    stats["acks"] = len(evidence.acks)
    stats["log.unacked_records"] = sum(1 for rid in placement if rid not in acked)


def _check_consumers(evidence: Evidence, log_at: Mapping[tuple[str, int, int], RecordId],
                     findings: _Findings, stats: dict[str, float]) -> None:
    last: dict[tuple[str, str, int, str, int], int] = {}
    seen_by_group: dict[tuple[str, str, int], set[int]] = defaultdict(set)
    for c in evidence.consumed:
        where = (c.topic, c.partition, c.offset)
        if log_at.get(where) != (c.producer, c.seq):
            findings.add("phantom-read", f"{c.member} read {c.producer}:{c.seq} at "
                         f"{c.topic}-{c.partition}@{c.offset}; the log has "
                         f"{log_at.get(where, 'nothing')} there")
        key = (c.group, c.member, c.session, c.topic, c.partition)
        previous = last.get(key)
        if previous is not None and c.offset != previous + 1:
            what = "went back" if c.offset <= previous else "skipped"
            findings.add("consumer-order", f"{c.member} session {c.session} {what} on "
                         f"{c.topic}-{c.partition}: {previous} then {c.offset}")
        last[key] = c.offset
        seen_by_group[(c.group, c.topic, c.partition)].add(c.offset)
    for (group, topic, partition), committed in sorted(evidence.final_committed.items()):
        seen = seen_by_group.get((group, topic, partition), set())
        unseen = [o for o in range(committed) if o not in seen]
        if unseen:
            findings.add("group-gap", f"{group} committed {committed} on {topic}-{partition} "
                         f"but no member consumed offsets {_ranges(unseen)}")
    stats["consumed"] = len(evidence.consumed)
    stats["consumer.sessions"] = len({(c.member, c.session, c.topic, c.partition)
                                      for c in evidence.consumed})


def _check_commits(evidence: Evidence, findings: _Findings, stats: dict[str, float]) -> None:
    highest: dict[tuple[str, str, int], Commit] = {}
    for commit in evidence.commits:
        end = evidence.end_offsets.get((commit.topic, commit.partition))
        if end is not None and commit.offset > end:
            findings.add("commit-ahead", f"{commit.member} ({commit.group}) committed "
                         f"{commit.offset} on {commit.topic}-{commit.partition}, end {end}")
        key = (commit.group, commit.topic, commit.partition)
        if key not in highest or commit.offset > highest[key].offset:
            highest[key] = commit
    for (group, topic, partition), offset in sorted(evidence.final_committed.items()):
        end = evidence.end_offsets.get((topic, partition))
        if end is not None and offset > end:
            findings.add("commit-ahead", f"{group} final committed {offset} on "
                         f"{topic}-{partition}, end {end}")
    for key, commit in sorted(highest.items()):
        final = evidence.final_committed.get(key, -1)
        if final < commit.offset:
            findings.add("commit-lost", f"{key[0]} {key[1]}-{key[2]}: {commit.member} was "
                         f"acknowledged {commit.offset}, final committed {final}")
    stats["commits"] = len(evidence.commits)


def _check_states(states: Sequence[PartitionState], findings: _Findings,
                  stats: dict[str, float]) -> None:
    for state in states:
        where = f"{state.topic}-{state.partition}"
        if state.leader < 0:
            findings.add("offline", f"{where}: leader {state.leader}, isr {list(state.isr)}")
        elif set(state.isr) != set(state.replicas):
            findings.add("isr-incomplete", f"{where}: isr {list(state.isr)}, replicas "
                         f"{list(state.replicas)}")
    stats["partitions.checked"] = len(states)


def _check_replicas(evidence: Evidence, findings: _Findings, stats: dict[str, float]) -> None:
    compared = 0
    for tp, by_broker in sorted(evidence.replicas.items()):
        end = evidence.end_offsets.get(tp)
        if end is None:
            continue
        committed: dict[int, list[tuple[int, int, int]]] = {}
        for broker, replica in sorted(by_broker.items()):
            below = [b for b in replica if b[0] < end]
            for base, last, _crc, valid in below:
                if not valid:
                    findings.add("corrupt", f"{_tp(tp)} on broker {broker}: batch "
                                 f"{base}-{last} fails its CRC")
            committed[broker] = [(base, last, crc) for base, last, crc, _ in below]
            held = below[-1][1] + 1 if below else 0
            if held < end:
                findings.add("replica-divergence", f"{_tp(tp)} on broker {broker}: holds "
                             f"offsets up to {held}, end offset {end}")
        reference_broker, reference = next(iter(committed.items()), (None, []))
        for broker, copy in committed.items():
            if copy != reference:
                index = next((i for i, (x, y) in enumerate(zip(copy, reference, strict=False))
                              if x != y), min(len(copy), len(reference)))
                mine = copy[index] if index < len(copy) else None
                theirs = reference[index] if index < len(reference) else None
                findings.add("replica-divergence", f"{_tp(tp)}: broker {broker} batch "
                             f"#{index} {mine} vs broker {reference_broker} {theirs}")
        compared += len(committed)
    stats["replicas.compared"] = compared


def _check_liveness(evidence: Evidence, max_gap: float, findings: _Findings,
                    stats: dict[str, float]) -> None:
    if evidence.load_window is None:
        return
    start, end = evidence.load_window
    times = sorted(a.at for a in evidence.acks if start <= a.at <= end)
    points = [start, *times, end]
    gaps = [(b - a, a) for a, b in pairwise(points)]
    worst, at = max(gaps) if gaps else (0.0, start)
    stats["acks.max_gap_s"] = round(worst, 2)
    if worst > max_gap:
        findings.add("stalled", f"no ack for {worst:.1f}s from t+{at - start:.0f}s")


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _ranges(offsets: Iterable[int]) -> str:
    """``[1, 2, 3, 7]`` as ``"1-3, 7"`` (the first few ranges)."""
    ranges: list[tuple[int, int]] = []
    for offset in sorted(offsets):
        if ranges and offset == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], offset)
        else:
            ranges.append((offset, offset))
    text = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges[:4])
    return text + (f", … ({len(ranges)} ranges)" if len(ranges) > 4 else "")
