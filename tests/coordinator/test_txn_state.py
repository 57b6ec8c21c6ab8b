"""The transaction state machine: fencing, end-of-transaction rules, timeouts, and a model
run of producer instances racing on one transactional id."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.coordinator.txn_log_format import TxnStatus
from odradek.coordinator.txn_state import (
    MAX_EPOCH,
    VALID_PREVIOUS,
    TxnMetadata,
    abort_timed_out,
    add_partitions,
    complete_end,
    end_txn,
    init_producer_id,
    is_timed_out,
)
from odradek.types import TopicPartition

TP = TopicPartition("out", 0)
MAX_TIMEOUT = 900_000


def _ids() -> itertools.count[int]:
    return itertools.count(100)


def _init(current: TxnMetadata | None, now: int = 0, ids: itertools.count[int] | None = None,
          timeout: int = 60_000) -> TxnMetadata:
    counter = ids or _ids()
    decision = init_producer_id(current, "tx", timeout, now, max_timeout_ms=MAX_TIMEOUT,
                                new_producer_id=lambda: next(counter))
    assert decision.error == ErrorCode.none and decision.write is not None
    return decision.write


def test_first_init_allocates_a_producer_id_and_reinit_bumps_the_epoch() -> None:
    first = _init(None)
    assert (first.producer_id, first.producer_epoch, first.status) == (100, 0, TxnStatus.EMPTY)
    again = _init(first, now=5)
    assert (again.producer_id, again.producer_epoch) == (100, 1)
    # the old instance is fenced
    stale = add_partitions(again, 100, 0, [TP], 6)
    assert stale.error == ErrorCode.producer_fenced and stale.write is None
    assert end_txn(again, 100, 0, True, 6).error == ErrorCode.producer_fenced
    assert add_partitions(again, 999, 1, [TP], 6).error == ErrorCode.invalid_producer_id_mapping


def test_epoch_exhaustion_takes_a_new_producer_id() -> None:
    ids = _ids()
    worn = TxnMetadata("tx", 7, MAX_EPOCH, 60_000, TxnStatus.COMPLETE_COMMIT)
    fresh = _init(worn, ids=ids)
    assert (fresh.producer_id, fresh.producer_epoch) == (100, 0)


def test_timeout_above_the_broker_cap_is_refused() -> None:
    decision = init_producer_id(None, "tx", MAX_TIMEOUT + 1, 0, max_timeout_ms=MAX_TIMEOUT,
                                new_producer_id=lambda: 1)
    assert decision.error == ErrorCode.invalid_transaction_timeout and decision.write is None


def test_commit_goes_through_prepare_then_complete_and_retries_succeed() -> None:
    meta = _init(None)
    ongoing = add_partitions(meta, 100, 0, [TP], 10).write
    assert ongoing is not None and ongoing.status == TxnStatus.ONGOING
    assert ongoing.start_ms == 10
    assert add_partitions(ongoing, 100, 0, [TP], 11).write is None  # already in
    more = add_partitions(ongoing, 100, 0, [TopicPartition("out", 1)], 12).write
    assert more is not None and more.start_ms == 10 and len(more.partitions) == 2
    prepare = end_txn(more, 100, 0, True, 20)
    assert prepare.commit is True and prepare.write is not None
    assert prepare.write.status == TxnStatus.PREPARE_COMMIT
    assert end_txn(prepare.write, 100, 0, True, 21).error == ErrorCode.concurrent_transactions
    assert end_txn(prepare.write, 100, 0, False, 21).error == ErrorCode.invalid_txn_state
    assert add_partitions(prepare.write, 100, 0, [TP], 21).error == (
        ErrorCode.concurrent_transactions)
    done = complete_end(prepare.write, 30)
    assert (done.status, done.partitions) == (TxnStatus.COMPLETE_COMMIT, frozenset())
    assert end_txn(done, 100, 0, True, 31) .error == ErrorCode.none  # a retry of the commit
    assert end_txn(done, 100, 0, False, 31).error == ErrorCode.invalid_txn_state
    assert end_txn(meta, 100, 0, True, 31).error == ErrorCode.invalid_txn_state  # Empty


def test_init_during_an_ongoing_transaction_aborts_it_under_a_new_epoch() -> None:
    meta = _init(None)
    ongoing = add_partitions(meta, 100, 0, [TP], 10).write
    assert ongoing is not None
    decision = init_producer_id(ongoing, "tx", 60_000, 20, max_timeout_ms=MAX_TIMEOUT,
                                new_producer_id=lambda: 1)
    assert decision.error == ErrorCode.concurrent_transactions  # the client retries
    assert decision.commit is False and decision.write is not None
    assert (decision.write.status, decision.write.producer_epoch) == (TxnStatus.PREPARE_ABORT, 1)
    assert decision.write.partitions == frozenset({TP})  # markers go to every partition
    done = complete_end(decision.write, 30)
    retried = _init(done, now=31)
    assert (retried.producer_epoch, retried.status) == (2, TxnStatus.EMPTY)


def test_timed_out_transaction_is_aborted_with_an_epoch_bump() -> None:
    meta = _init(None, timeout=1000)
    ongoing = add_partitions(meta, 100, 0, [TP], 10).write
    assert ongoing is not None
    assert not is_timed_out(ongoing, 1010)
    assert is_timed_out(ongoing, 1011)
    decision = abort_timed_out(ongoing, 1011)
    assert decision.error == ErrorCode.none and decision.commit is False
    assert decision.write is not None and decision.write.producer_epoch == 1
    assert end_txn(decision.write, 100, 0, True, 1012).error == ErrorCode.producer_fenced


# ----------------------------------------------------------------------- model run

ops = st.lists(
    st.tuples(st.sampled_from(["init", "add", "commit", "abort", "markers", "tick"]),
              st.integers(0, 2), st.integers(0, 3)),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_racing_instances_never_break_the_state_machine(
    script: list[tuple[str, int, int]],
) -> None:
    """Three producer instances share one transactional id. Whatever they do: every write
    is a legal transition, only the newest instance's requests change state, epochs only
    grow, and markers always name the partitions of the transaction they end."""
    ids = _ids()
    current: TxnMetadata | None = None
    instances: dict[int, tuple[int, int]] = {}  # instance -> (producer id, epoch) it holds
    now = 0
    for action, who, partition in script:
        now += 100
        before = current
        if action == "init":
            decision = init_producer_id(current, "tx", 1000, now, max_timeout_ms=MAX_TIMEOUT,
                                        new_producer_id=lambda: next(ids))
            if decision.error == ErrorCode.none and decision.write is not None:
                instances[who] = (decision.write.producer_id, decision.write.producer_epoch)
        elif action == "markers":
            if current is not None and current.status in (TxnStatus.PREPARE_COMMIT,
                                                          TxnStatus.PREPARE_ABORT):
                current = complete_end(current, now)
            continue
        elif action == "tick":
            if current is not None and is_timed_out(current, now):
                decision = abort_timed_out(current, now)
            else:
                continue
        else:
            pid, epoch = instances.get(who, (-1, -1))
            if action == "add":
                decision = add_partitions(current, pid, epoch, [TopicPartition("t", partition)],
                                          now)
            else:
                decision = end_txn(current, pid, epoch, action == "commit", now)
            newest = current is not None and (pid, epoch) == (current.producer_id,
                                                              current.producer_epoch)
            if not newest:
                assert decision.write is None, "a fenced or unknown instance changed state"
                assert decision.error in (ErrorCode.producer_fenced,
                                          ErrorCode.invalid_producer_id_mapping)
        if decision.write is not None:
            written = decision.write
            if before is not None:
                assert before.status in VALID_PREVIOUS[written.status]
                assert (written.producer_id, written.producer_epoch) >= (
                    before.producer_id, before.producer_epoch) or written.producer_epoch == 0
            if decision.sends_markers:
                assert before is not None and written.partitions == before.partitions
                assert decision.commit == (written.status == TxnStatus.PREPARE_COMMIT)
            current = written


def test_client_epoch_bump_must_name_the_current_epoch() -> None:
    meta = _init(None)
    bumped = _init(meta)
    for expected, error in (((100, 0), ErrorCode.producer_fenced),
                            ((5, 1), ErrorCode.invalid_producer_id_mapping)):
        decision = init_producer_id(bumped, "tx", 60_000, 1, max_timeout_ms=MAX_TIMEOUT,
                                    new_producer_id=lambda: 1, expected=expected)
        assert decision.error == error and decision.write is None
    ok = init_producer_id(bumped, "tx", 60_000, 1, max_timeout_ms=MAX_TIMEOUT,
                          new_producer_id=lambda: 1, expected=(100, 1))
    assert ok.write is not None and ok.write.producer_epoch == 2
