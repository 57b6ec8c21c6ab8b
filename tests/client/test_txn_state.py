"""The transactional producer's state machine against a model: any sequence of API calls,
completions and errors leaves it in the state the model predicts, raises the error the model
predicts (fatal, abortable or illegal), and forgets the transaction's partitions when it
ends."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from odradek.client.errors import BrokerResponseError, ErrorCode, KafkaClientError
from odradek.client.metadata import TopicPartition
from odradek.client.txn_state import (
    IllegalTransactionState,
    TransactionAbortable,
    TransactionFatal,
    TxnState,
    TxnStateMachine,
    classify,
)

U, R, T, C, A, AE, F = ("Uninitialized", "Ready", "InTransaction", "Committing", "Aborting",
                        "AbortableError", "FatalError")

#: The model: for each call, the states it is legal in and where it leads. Written out per
#: call (not per transition, as the implementation is), so the two are independent.
CALLS: dict[str, dict[str, str]] = {
    "init": {U: R},
    "begin": {R: T},
    "send": {T: T},
    "commit": {T: C, C: C},
    "abort": {T: A, AE: A, A: A},
}
METHODS = {"init": "initialized", "begin": "begin", "send": "check_sendable",
           "commit": "begin_commit", "abort": "begin_abort"}


def expected_error(state: str) -> type[KafkaClientError]:
    if state == F:
        return TransactionFatal
    if state == AE:
        return TransactionAbortable
    return IllegalTransactionState


class TxnModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.machine = TxnStateMachine("tx")
        self.model = U
        self.model_partitions: set[TopicPartition] = set()

    @rule(call=st.sampled_from(sorted(CALLS)))
    def api_call(self, call: str) -> None:
        method = getattr(self.machine, METHODS[call])
        legal = CALLS[call]
        if self.model in legal:
            method()
            if call == "begin":
                self.model_partitions = set()
            self.model = legal[self.model]
        else:
            with pytest.raises(expected_error(self.model)):
                method()

    @precondition(lambda self: self.model in (C, A))
    @rule()
    def end_txn_succeeded(self) -> None:
        self.machine.completed()
        self.model = R
        self.model_partitions = set()

    @rule(code=st.sampled_from([ErrorCode.unknown_producer_id,
                                ErrorCode.out_of_order_sequence_number,
                                ErrorCode.message_too_large,
                                ErrorCode.group_authorization_failed]))
    def abortable_error(self, code: ErrorCode) -> None:
        self.machine.on_error(BrokerResponseError(code))
        if self.model in (T, C, AE):
            self.model = AE

    @rule(code=st.sampled_from([ErrorCode.producer_fenced, ErrorCode.invalid_producer_epoch]))
    def fatal_error(self, code: ErrorCode) -> None:
        self.machine.on_error(BrokerResponseError(code))
        self.model = F

    @rule(partitions=st.sets(st.integers(0, 5), max_size=4))
    def add_partitions(self, partitions: set[int]) -> None:
        tps = [TopicPartition("t", p) for p in partitions]
        missing = self.machine.missing(tps)
        assert set(missing) == set(tps) - self.model_partitions
        assert missing == sorted(missing)
        if self.model in (T, C):
            self.machine.added(missing)
            self.model_partitions |= set(tps)

    @invariant()
    def same_state(self) -> None:
        assert self.machine.state.value == self.model
        assert self.machine.may_drain == (self.model in (T, C))
        if self.model in (R, U):
            assert not self.machine.partitions
            assert not self.machine.needs_end_txn
        assert self.machine.partitions == self.model_partitions


TestTxnModel = TxnModel.TestCase
TestTxnModel.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)


def test_classification_follows_the_java_client() -> None:
    assert classify(ErrorCode.none) == "ok"
    for code in (ErrorCode.producer_fenced, ErrorCode.invalid_producer_epoch,
                 ErrorCode.transactional_id_authorization_failed):
        assert classify(code) == "fatal"
    for code in (ErrorCode.concurrent_transactions, ErrorCode.coordinator_load_in_progress,
                 ErrorCode.not_coordinator, ErrorCode.coordinator_not_available):
        assert classify(code) == "retry"
    for code in (ErrorCode.unknown_producer_id, ErrorCode.group_authorization_failed,
                 ErrorCode.illegal_generation):
        assert classify(code) == "abortable"


def test_errors_carry_their_cause() -> None:
    machine = TxnStateMachine("tx")
    machine.initialized()
    machine.begin()
    cause = BrokerResponseError(ErrorCode.unknown_producer_id, "produce")
    machine.on_error(cause)
    assert machine.state is TxnState.ABORTABLE_ERROR
    with pytest.raises(TransactionAbortable) as abortable:
        machine.begin_commit()
    assert abortable.value.__cause__ is cause
    machine.begin_abort()
    machine.completed()
    assert machine.error is None
    fenced = BrokerResponseError(ErrorCode.producer_fenced, "EndTxn")
    machine.fatal(fenced)
    with pytest.raises(TransactionFatal) as fatal:
        machine.begin()
    assert fatal.value.__cause__ is fenced
