"""The long runs' invariant checker can fail: each kind of damage is detected, and a clean
history passes. Runs in the default suite (pure, milliseconds)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.longrun import invariants
from tests.longrun.invariants import (
    INVARIANTS,
    Ack,
    BatchWriter,
    Commit,
    Consumed,
    Evidence,
    LogRecord,
    PartitionState,
    check,
)
from tests.longrun.values import decode, encode

T = "events"


def clean_history() -> Evidence:
    """Two producers interleaved on two partitions, all acknowledged; one group whose two
    members split the work (m2 takes partition 0 over from m1 at its committed offset)."""
    evidence = Evidence()
    log = {0: [("p1", 0), ("p2", 0), ("p1", 2), ("p2", 1), ("p1", 3)],
           1: [("p1", 1), ("p2", 2), ("p2", 3)]}
    for partition, ids in log.items():
        for offset, (producer, seq) in enumerate(ids):
            evidence.log.append(LogRecord(T, partition, offset, producer, seq))
            evidence.acks.append(Ack(producer, seq, T, partition, offset, 100.0 + offset))
        evidence.end_offsets[(T, partition)] = len(ids)
    for offset in range(3):
        evidence.consumed.append(Consumed("g", "m1", 1, T, 0, offset, *log[0][offset]))
    evidence.commits.append(Commit("g", "m1", T, 0, 3))
    for offset in range(3, 5):
        evidence.consumed.append(Consumed("g", "m2", 1, T, 0, offset, *log[0][offset]))
    for offset in range(3):
        evidence.consumed.append(Consumed("g", "m2", 2, T, 1, offset, *log[1][offset]))
    evidence.commits += [Commit("g", "m2", T, 0, 5), Commit("g", "m2", T, 1, 3)]
    evidence.final_committed = {("g", T, 0): 5, ("g", T, 1): 3}
    evidence.states = [PartitionState(T, p, 1, (0, 1, 2), (0, 1, 2)) for p in (0, 1)]
    evidence.load_window = (100.0, 110.0)
    return evidence


def kinds(evidence: Evidence) -> set[str]:
    return check(evidence).kinds()


def rewrite_log(evidence: Evidence, partition: int, ids: list[tuple[str, int]]) -> None:
    evidence.log = [r for r in evidence.log if r.partition != partition] + [
        LogRecord(T, partition, offset, producer, seq)
        for offset, (producer, seq) in enumerate(ids)]
    evidence.end_offsets[(T, partition)] = len(ids)


def test_a_clean_history_satisfies_every_invariant() -> None:
    verdict = check(clean_history())
    assert verdict.ok, verdict.summary()
    assert verdict.stats["acks"] == 8 and verdict.stats["consumed"] == 8


def test_an_acknowledged_record_missing_from_the_log_is_lost() -> None:
    evidence = clean_history()
    # Partition 1 lost its last record (a truncation below the acknowledged offset).
    rewrite_log(evidence, 1, [("p1", 1), ("p2", 2)])
    evidence.consumed = [c for c in evidence.consumed if c.partition == 0]
    evidence.commits = [c for c in evidence.commits if c.partition == 0]
    del evidence.final_committed[("g", T, 1)]
    verdict = check(evidence)
    assert verdict.kinds() == {"lost"}, verdict.summary()
    assert "p2:3" in str(verdict.violations[0])


def test_a_record_written_twice_is_a_duplicate() -> None:
    evidence = clean_history()
    rewrite_log(evidence, 1, [("p1", 1), ("p2", 2), ("p2", 3), ("p2", 3)])
    assert "duplicate" in kinds(evidence)


def resent_history(first_epoch: int, again_pid: int, again_epoch: int) -> Evidence:
    """p2's seq 3 written at offset 2 by producer id 7 at ``first_epoch`` (its ack lost),
    then again at offset 3 by ``again_pid`` at ``again_epoch``, which is the copy acked."""
    evidence = clean_history()
    rewrite_log(evidence, 1, [("p1", 1), ("p2", 2), ("p2", 3), ("p2", 3)])
    evidence.acks = [a._replace(offset=3) if (a.producer, a.seq) == ("p2", 3) else a
                     for a in evidence.acks]
    evidence.writers[(T, 1)] = [
        BatchWriter(0, 0, 5, 0), BatchWriter(1, 1, 7, first_epoch),
        BatchWriter(2, 2, 7, first_epoch), BatchWriter(3, 3, again_pid, again_epoch)]
    return evidence


def test_a_record_the_client_resent_under_a_bumped_epoch_is_excused_and_counted() -> None:
    verdict = check(resent_history(first_epoch=0, again_pid=7, again_epoch=1))
    assert verdict.ok, verdict.summary()
    assert verdict.stats["duplicate.resent_after_epoch_bump"] == 1
    assert verdict.excused and "p2:3" in verdict.excused[0]
    assert "excused duplicate" in verdict.summary()


@pytest.mark.parametrize(("first_epoch", "again_pid", "again_epoch"), [
    (1, 7, 1),  # same producer id and epoch: the broker should have dropped the retry
    (1, 7, 0),  # an older epoch: never a legitimate re-send
    (0, 8, 1),  # another producer id: a new session, not an epoch bump
])
def test_a_copy_the_broker_should_have_deduplicated_is_still_a_duplicate(
        first_epoch: int, again_pid: int, again_epoch: int) -> None:
    verdict = check(resent_history(first_epoch, again_pid, again_epoch))
    assert {"duplicate", "producer-order"} <= verdict.kinds(), verdict.summary()
    assert verdict.stats["duplicate.resent_after_epoch_bump"] == 0


def test_a_producers_records_out_of_order_in_a_partition_are_reordered() -> None:
    evidence = clean_history()
    # p2's seq 2 and 3 swapped on partition 1: same records, same count, wrong order.
    rewrite_log(evidence, 1, [("p1", 1), ("p2", 3), ("p2", 2)])
    verdict = check(evidence)
    assert "producer-order" in verdict.kinds(), verdict.summary()
    assert "lost" not in verdict.kinds()


def test_an_acknowledged_offset_that_now_holds_another_record_is_misplaced() -> None:
    evidence = clean_history()
    evidence.acks[0] = evidence.acks[0]._replace(offset=4)
    assert kinds(evidence) == {"misplaced"}


def test_a_consumer_going_back_or_skipping_within_one_ownership_is_out_of_order() -> None:
    back = clean_history()
    back.consumed.insert(2, back.consumed[0])  # m1 sees offset 0 again after offset 1
    assert "consumer-order" in kinds(back)
    skip = clean_history()
    del skip.consumed[1]  # m1 jumps from offset 0 to 2
    assert "consumer-order" in kinds(skip)
    # A new ownership of the partition may restart lower (from the committed offset).
    again = clean_history()
    again.consumed += [c._replace(session=3) for c in again.consumed if c.member == "m1"]
    assert check(again).ok


def test_a_consumer_reading_a_record_the_log_does_not_hold_is_a_phantom_read() -> None:
    evidence = clean_history()
    evidence.consumed[4] = evidence.consumed[4]._replace(producer="p9")
    assert kinds(evidence) == {"phantom-read"}


def test_offsets_below_the_committed_one_that_no_member_consumed_are_a_group_gap() -> None:
    evidence = clean_history()
    evidence.consumed = [c for c in evidence.consumed if not (c.member == "m2" and
                                                              c.partition == 0)]
    evidence.commits = [c for c in evidence.commits if c.offset != 5]
    assert kinds(evidence) == {"group-gap"}


def test_commits_beyond_the_log_end_or_lost_after_acknowledgement_are_caught() -> None:
    ahead = clean_history()
    ahead.commits.append(Commit("g", "m2", T, 1, 9))
    ahead.final_committed[("g", T, 1)] = 9
    assert {"commit-ahead", "group-gap"} <= kinds(ahead)
    regressed = clean_history()
    regressed.final_committed[("g", T, 0)] = 3
    assert kinds(regressed) == {"commit-lost"}


def test_a_gap_in_the_read_back_and_a_foreign_record_are_caught() -> None:
    gap = clean_history()
    gap.log = [r for r in gap.log if not (r.partition == 0 and r.offset == 2)]
    assert "log-gap" in kinds(gap)
    foreign = clean_history()
    foreign.log.append(LogRecord(T, 1, 3, "", -1))
    foreign.end_offsets[(T, 1)] = 4
    assert kinds(foreign) == {"foreign"}


def test_offline_partitions_and_short_isrs_after_the_heal_are_caught() -> None:
    evidence = clean_history()
    evidence.states = [PartitionState(T, 0, -1, (1,), (0, 1, 2)),
                       PartitionState(T, 1, 2, (2, 0), (0, 1, 2))]
    assert kinds(evidence) == {"offline", "isr-incomplete"}


def test_a_long_pause_in_acknowledgements_is_a_stall() -> None:
    evidence = clean_history()
    evidence.load_window = (100.0, 400.0)
    verdict = check(evidence, max_ack_gap_s=120)
    assert verdict.kinds() == {"stalled"}
    assert verdict.stats["acks.max_gap_s"] == pytest.approx(296.0)


def test_a_fault_the_cluster_did_not_recover_from_in_time_is_reported() -> None:
    evidence = clean_history()
    evidence.unrecovered.append("kill -9 of broker 1: ISR not full 180 s after restart")
    assert kinds(evidence) == {"unrecovered"}


def with_replicas(evidence: Evidence) -> Evidence:
    """Three identical replicas of each partition: one batch per record."""
    for (topic, partition), end in evidence.end_offsets.items():
        batches = [(offset, offset, 1000 + offset, True) for offset in range(end)]
        evidence.replicas[(topic, partition)] = {b: list(batches) for b in (0, 1, 2)}
    return evidence


def test_identical_replicas_pass_and_divergent_short_or_corrupt_ones_are_caught() -> None:
    assert check(with_replicas(clean_history())).ok
    divergent = with_replicas(clean_history())
    divergent.replicas[(T, 0)][2][1] = (1, 1, 999, True)  # another batch at offset 1
    assert kinds(divergent) == {"replica-divergence"}
    short = with_replicas(clean_history())
    del short.replicas[(T, 1)][1][-1]  # broker 1 lacks the last committed record
    assert kinds(short) == {"replica-divergence"}
    corrupt = with_replicas(clean_history())
    corrupt.replicas[(T, 0)][0][0] = (0, 0, 1000, False)
    assert kinds(corrupt) == {"corrupt"}
    # A follower's uncommitted tail beyond the end offset is no divergence.
    tail = with_replicas(clean_history())
    tail.replicas[(T, 0)][1].append((5, 7, 5, True))
    assert check(tail).ok


def test_values_name_their_producer_and_sequence() -> None:
    assert decode(encode("conf-3", 41)) == ("conf-3", 41)
    assert decode(b"garbage") == ("", -1)
    assert decode(None) == ("", -1)
    assert len({len(encode("p", seq)) for seq in range(50)}) > 10


def test_every_kind_the_checker_reports_is_listed_as_checked() -> None:
    source = Path(invariants.__file__).read_text()
    reported = set(re.findall(r'findings\.add\("([a-z-]+)"', source))
    assert reported == set(INVARIANTS)
