"""Pure decisions: ISR-aware restarts, roll order, drains, rebalances, topic plans, resets,
broker readiness."""

from __future__ import annotations

from typing import Any

import pytest
from odradek_operator.decisions.cluster_plan import (
    PodState,
    decide_rebalance,
    decide_replicas,
    decide_restart,
)
from odradek_operator.decisions.config_change import (
    describe_config_changes,
    plan_dynamic_config,
    restart_relevant_config,
    split_config,
)
from odradek_operator.decisions.offsets import compute_lag, compute_reset, reset_partitions
from odradek_operator.decisions.placement import (
    broker_load,
    plan_drain,
    plan_rebalance,
    plan_replication_factor,
)
from odradek_operator.decisions.readiness import (
    ReadinessRefresh,
    readiness_refresh,
    readiness_status,
)
from odradek_operator.decisions.restart import restart_order, restart_verdict
from odradek_operator.decisions.state import ClusterState, PartitionState
from odradek_operator.decisions.topic_plan import ObservedTopic, plan_topic
from odradek_operator.handlers.topic import topic_result
from odradek_operator.kafka.groups import reset_already_done
from odradek_operator.kafka.topics import TopicOutcome
from odradek_operator.spec import ClusterRef, ResetSpec, TopicSpec


def state(*parts: PartitionState, brokers=(0, 1, 2), controller=0, min_isr=None, default=2,
          reassigning=frozenset()) -> ClusterState:
    return ClusterState(frozenset(brokers), controller, parts, min_isr or {}, default,
                        reassigning)


def p(topic: str, partition: int, replicas, isr) -> PartitionState:
    return PartitionState(topic, partition, tuple(replicas), tuple(isr), replicas[0])


# ---------------------------------------------------------------- restart


def test_restart_allowed_when_every_partition_keeps_min_isr():
    s = state(p("t", 0, [0, 1, 2], [0, 1, 2]), p("t", 1, [1, 2, 0], [1, 2, 0]))
    assert restart_verdict(s, 1).allowed


def test_restart_blocked_when_a_partition_would_drop_below_min_isr():
    s = state(p("t", 0, [0, 1, 2], [0, 1]), p("t", 1, [1, 2, 0], [1, 2, 0]))
    verdict = restart_verdict(s, 1)
    assert not verdict.allowed
    assert [(b.topic, b.partition) for b in verdict.blocking] == [("t", 0)]
    assert "t-0" in verdict.reason() and "min.insync.replicas" in verdict.reason()


def test_restart_of_a_replica_outside_the_isr_is_allowed():
    s = state(p("t", 0, [0, 1, 2], [0, 1]))
    assert restart_verdict(s, 2).allowed


def test_topic_min_isr_override_is_honoured():
    s = state(p("t", 0, [0, 1, 2], [0, 1]), min_isr={"t": 1}, default=2)
    assert restart_verdict(s, 1).allowed


def test_partition_that_no_restart_can_keep_writable_does_not_block_forever():
    s = state(p("solo", 0, [1], [1]), default=1)
    verdict = restart_verdict(s, 1)
    assert verdict.allowed and [u.topic for u in verdict.unavoidable] == ["solo"]


def test_unregistered_broker_may_always_restart():
    s = state(p("t", 0, [0, 1, 2], [0, 1]), brokers=(0, 1))
    assert restart_verdict(s, 2).allowed


def test_controller_rolls_last():
    assert restart_order([2, 0, 1], controller=1) == [0, 2, 1]
    assert restart_order([2, 0], controller=1) == [0, 2]


def test_decide_restart_restarts_a_broken_outdated_pod_first():
    pods = [PodState(0, "new", True), PodState(1, "old", True), PodState(2, "old", False)]
    decision = decide_restart(pods, "new", None)
    assert decision.restart == 2


def test_decide_restart_waits_for_isr_and_reports_why():
    pods = [PodState(i, "old", True) for i in range(3)]
    s = state(p("t", 0, [0, 1, 2], [1, 2]), controller=2)
    decision = decide_restart(pods, "new", s)
    # broker 0 is not in the ISR: it may go first; the controller (2) goes last.
    assert decision.restart == 0 and decision.pending == (0, 1, 2)
    s = state(p("t", 0, [0, 1, 2], [0, 1]), controller=2)
    decision = decide_restart(pods, "new", s)
    assert decision.restart is None and "below min.insync.replicas" in decision.waiting_for


def test_decide_restart_waits_for_not_ready_pods_and_unreachable_kafka():
    pods = [PodState(0, "old", True), PodState(1, "new", False)]
    assert "pod 1" in decide_restart(pods, "new", None).waiting_for
    pods = [PodState(0, "old", True), PodState(1, "new", True)]
    assert "reachable" in decide_restart(pods, "new", None).waiting_for


def test_nothing_to_restart_when_all_pods_current():
    pods = [PodState(0, "r", True), PodState(1, "r", True)]
    assert decide_restart(pods, "r", None).pending == ()


# ---------------------------------------------------------------- scaling and placement


def test_scale_down_drains_the_highest_ordinals_first():
    s = state(p("t", 0, [0, 3], [0, 3]), p("t", 1, [3, 4], [3, 4]), p("t", 2, [1, 2], [1, 2]),
              brokers=range(5), default=1)
    decision = decide_replicas(3, 5, s)
    assert decision.statefulset_replicas == 5 and decision.phase == "Draining"
    assert set(decision.moves) == {("t", 0), ("t", 1)}
    for replicas in decision.moves.values():
        assert set(replicas) <= {0, 1, 2} and len(set(replicas)) == 2
    assert decision.moves[("t", 0)][0] == 0  # the preferred leader stays put


def test_scale_down_proceeds_once_leaving_brokers_are_empty():
    s = state(p("t", 0, [0, 1], [0, 1]), brokers=range(4), default=1)
    assert decide_replicas(2, 4, s).statefulset_replicas == 2


def test_scale_down_refused_when_replication_factor_cannot_be_met():
    s = state(p("big", 0, [0, 1, 2], [0, 1, 2]), default=1)
    decision = decide_replicas(2, 3, s)
    assert decision.phase == "ScaleDownBlocked" and decision.statefulset_replicas == 3
    assert "big (RF 3)" in decision.message


def test_scale_down_waits_for_running_reassignments_and_for_kafka():
    s = state(p("t", 0, [0, 2], [0, 2]), reassigning=frozenset({("t", 0)}))
    assert decide_replicas(2, 3, s).phase == "Draining"
    assert decide_replicas(2, 3, None).phase == "WaitingForKafka"


def test_scale_down_mid_move_is_draining_not_blocked():
    # The reassignment is listed as done, but metadata still shows old + new replicas.
    s = state(p("t", 0, [0, 1, 3], [0, 1, 3]), p("t", 1, [1, 2, 3, 0], [1, 2, 3, 0]),
              p("t", 2, [2, 0, 1], [2, 0, 1]), brokers=range(4), default=1)
    decision = decide_replicas(3, 4, s)
    assert decision.phase == "Draining" and decision.statefulset_replicas == 4
    assert "1 partition" in decision.message


def test_scale_up_is_immediate():
    assert decide_replicas(5, 3, None).statefulset_replicas == 5


def test_drain_refusal_names_every_topic():
    plan = plan_drain({("b", 0): (0, 2)}, [2], [0, 1, 2])
    assert plan.possible and plan.moves == {("b", 0): (0, 1)}
    plan = plan_drain({("a", 0): (0, 1, 2), ("b", 0): (0, 1)}, [1, 2], [0, 1, 2])
    assert plan.impossible == {"a": 3, "b": 2}


def test_rebalance_spreads_replicas_onto_new_brokers_evenly():
    assignment = {("t", i): ((i % 3), ((i + 1) % 3)) for i in range(12)}
    moves = plan_rebalance(assignment, range(6))
    after = {**assignment, **moves}
    load = broker_load(after, range(6))
    assert max(load.values()) - min(load.values()) <= 1
    assert all(len(set(r)) == len(r) for r in after.values())


def test_rebalance_is_empty_when_balanced():
    assignment = {("t", i): (i % 3,) for i in range(3)}
    assert plan_rebalance(assignment, range(3)) == {}


def test_decide_rebalance_runs_once_per_replica_count_when_all_brokers_joined():
    s = state(p("t", 0, [0, 1], [0, 1]), p("t", 1, [1, 0], [1, 0]), brokers=range(4))
    assert decide_rebalance(4, s, None)
    assert decide_rebalance(4, s, 4) is None
    assert decide_rebalance(5, s, None) is None  # broker 4 not registered yet


def test_replication_factor_grows_and_shrinks_keeping_the_leader():
    assignment = {("t", 0): (0,), ("t", 1): (1,)}
    grown = plan_replication_factor(assignment, "t", 3, range(3))
    assert {tp: r[0] for tp, r in grown.items()} == {("t", 0): 0, ("t", 1): 1}
    assert all(len(set(r)) == 3 for r in grown.values())
    shrunk = plan_replication_factor({("t", 0): (2, 0, 1)}, "t", 1, range(3))
    assert shrunk == {("t", 0): (2,)}
    with pytest.raises(ValueError, match="needs at least"):
        plan_replication_factor(assignment, "t", 4, range(3))


# ---------------------------------------------------------------- config changes


def test_dynamic_keys_apply_live_static_keys_restart():
    config = {"log.retention.ms": "1000", "num.partitions": "3"}
    static, dynamic = split_config(config)
    assert static == {"num.partitions": "3"} and dynamic == {"log.retention.ms": "1000"}
    assert restart_relevant_config(config, dynamic_supported=True) == static
    assert restart_relevant_config(config, dynamic_supported=False) == config


def test_dynamic_plan_sets_changes_and_deletes_dropped_keys():
    plan = plan_dynamic_config({"log.retention.ms": "5", "min.insync.replicas": "2"},
                               {"log.retention.ms": "5", "message.max.bytes": "10"})
    assert plan.operations == (("min.insync.replicas", "set", "2"),
                               ("message.max.bytes", "delete", None))
    assert plan_dynamic_config({"num.partitions": "3"}, {}).empty


# ---------------------------------------------------------------- topics


def topic_spec(**kw: Any) -> TopicSpec:
    values: dict[str, Any] = {"cluster": ClusterRef(bootstrap_servers="h:1"), "topic_name": "t",
              "partitions": 3, "replication_factor": 2, "config": {}}
    values.update(kw)
    return TopicSpec(**values)


def observed(partitions=3, rf=2, overrides=None) -> ObservedTopic:
    return ObservedTopic("t", "id", {i: tuple((i + j) % 3 for j in range(rf))
                                     for i in range(partitions)}, overrides or {})


def test_missing_topic_is_created_unless_brokers_are_too_few():
    assert plan_topic(topic_spec(), None, frozenset({0, 1})).create
    plan = plan_topic(topic_spec(replication_factor=3), None, frozenset({0, 1}))
    assert not plan.create and plan.refusals[0][0] == "InsufficientBrokers"


def test_partitions_grow_but_never_shrink():
    assert plan_topic(topic_spec(partitions=5), observed(), frozenset({0, 1, 2})).grow_to == 5
    plan = plan_topic(topic_spec(partitions=2), observed(), frozenset({0, 1, 2}))
    assert plan.grow_to is None and not plan.create and not plan.reassignment


def test_partitions_added_outside_are_reported_with_what_would_fix_it():
    """Kafka cannot remove partitions: the Topic says so and asks for the spec to follow,
    never suggesting that the operator will repair it (or that the topic be recreated)."""
    plan = plan_topic(topic_spec(partitions=2), observed(partitions=3), frozenset({0, 1, 2}))
    assert plan.refusals == (("MorePartitionsThanSpec",
                              "topic t has 3 partitions, more than spec.partitions 2: Kafka "
                              "cannot remove partitions; set spec.partitions to 3"),)
    result = topic_result(topic_spec(partitions=2), TopicOutcome(plan, observed(partitions=3)),
                          4)
    ready = {c.type: c for c in result.conditions}["Ready"]
    assert (ready.status, ready.reason) == (False, "MorePartitionsThanSpec")
    assert result.status["partitions"] == 3


def test_config_changed_event_tells_set_keys_from_removed_ones():
    plan = plan_topic(topic_spec(config={"retention.ms": "100", "cleanup.policy": "compact"}),
                      observed(overrides={"retention.ms": "5", "segment.bytes": "9",
                                          "flush.ms": "1"}),
                      frozenset({0, 1, 2}))
    result = topic_result(topic_spec(), TopicOutcome(plan, observed()), 2)
    assert ("Normal", "ConfigChanged", "topic configs of t: set cleanup.policy, retention.ms; "
            "removed flush.ms, segment.bytes") in result.events
    assert describe_config_changes([("a", "delete", None)]) == "removed a"


def test_config_drift_is_set_back_and_foreign_overrides_removed():
    plan = plan_topic(topic_spec(config={"retention.ms": "100"}),
                      observed(overrides={"retention.ms": "5", "segment.bytes": "9"}),
                      frozenset({0, 1, 2}))
    assert plan.config_changes == (("retention.ms", "set", "100"),
                                   ("segment.bytes", "delete", None))


TOPIC_CONFIGS = frozenset({"retention.ms", "cleanup.policy", "segment.bytes"})


def test_every_unknown_config_key_is_reported_and_nothing_is_changed():
    spec = topic_spec(config={"retention.ms": "1", "retention.msec": "2", "cleanup": "x"})
    for existing in (None, observed(partitions=2)):
        plan = plan_topic(spec, existing, frozenset({0, 1, 2}), TOPIC_CONFIGS)
        assert plan.refusals == (("InvalidConfig", "Unknown topic config names: cleanup, "
                                  "retention.msec (spec.config of topic t)"),)
        assert plan.in_sync  # no create, no grow, no config change: Kafka would refuse all
    single = plan_topic(topic_spec(config={"retension.ms": "1"}), None, frozenset({0, 1}),
                        TOPIC_CONFIGS)
    assert single.refusals[0][1].startswith("Unknown topic config name: retension.ms ")
    # The cluster's names unknown (no topic to ask): Kafka's own refusal decides.
    assert plan_topic(spec, None, frozenset({0, 1})).create


def test_replication_factor_change_is_a_reassignment():
    plan = plan_topic(topic_spec(replication_factor=3), observed(), frozenset({0, 1, 2}))
    assert len(plan.reassignment) == 3 and all(len(r) == 3 for r in plan.reassignment.values())
    assert plan_topic(topic_spec(), observed(), frozenset({0, 1, 2})).in_sync


# ---------------------------------------------------------------- offsets


def test_lag_is_end_minus_committed_and_totals():
    rows, total = compute_lag({("t", 0): 5, ("t", 1): 10}, {("t", 0): 9, ("t", 1): 10,
                                                            ("t", 2): 4})
    assert [(r.partition, r.lag) for r in rows] == [(0, 4), (1, 0), (2, None)]
    assert total == 4


@pytest.mark.parametrize(("strategy", "extra", "expected"), [
    ("earliest", {}, [2, 2]),
    ("latest", {}, [50, 60]),
    ("offset", {"offset": 40}, [40, 40]),
    ("offset", {"offset": 1000}, [50, 60]),  # clamped to the end
    ("shiftBy", {"shift_by": -15}, [5, 2]),  # clamped to the log start
    ("timestamp", {"timestamp_ms": 1}, [30, 60]),  # no record that new: the end
])
def test_reset_targets(strategy, extra, expected):
    reset = ResetSpec("r1", strategy, **extra)
    parts = [("t", 0), ("t", 1)]
    moves = compute_reset(reset, parts, {("t", 0): 20, ("t", 1): 10},
                          {("t", 0): 2, ("t", 1): 2}, {("t", 0): 50, ("t", 1): 60},
                          {("t", 0): 30, ("t", 1): None})
    assert [m.target for m in moves] == expected
    assert [m.current for m in moves] == [20, 10]


def test_reset_partitions_cover_named_topics_or_the_committed_ones():
    reset = ResetSpec("r", "earliest", topics=("b",))
    parts = {"a": (0, 1), "b": (0,)}
    assert reset_partitions(reset, (), {("a", 0): 1}, parts) == [("b", 0)]
    assert reset_partitions(ResetSpec("r", "earliest"), (), {("a", 0): 1}, parts) == \
        [("a", 0), ("a", 1)]


def test_a_reset_runs_once_per_id_and_a_dry_run_does_not_use_its_id_up():
    real, dry = ResetSpec("r1", "earliest"), ResetSpec("r1", "earliest", dry_run=True)
    assert not reset_already_done(real, None)
    assert reset_already_done(real, {"id": "r1", "dryRun": False})
    assert not reset_already_done(ResetSpec("r2", "earliest"), {"id": "r1", "dryRun": False})
    # A dry run of r1 does not count as r1 having run; it does for another dry run.
    assert not reset_already_done(real, {"id": "r1", "dryRun": True})
    assert reset_already_done(dry, {"id": "r1", "dryRun": True})


# ---------------------------------------------------------------- broker readiness


def broker_statefulset(ready: int | None, *, component="broker", owner_kind="BrokerCluster",
                       owner_version="odradek.dev/v1beta1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "odr", "namespace": "kafka",
                         "labels": {"app.kubernetes.io/component": component},
                         "ownerReferences": [{"apiVersion": owner_version,
                                              "kind": owner_kind, "name": "odr",
                                              "uid": "u", "controller": True}]},
            "spec": {"replicas": 3},
            "status": {} if ready is None else {"readyReplicas": ready}}


def test_a_broker_statefulset_event_refreshes_its_owning_cluster():
    assert readiness_refresh("MODIFIED", broker_statefulset(2)) == \
        ReadinessRefresh("kafka", "odr", 2)
    # The StatefulSet controller drops readyReplicas when no pod is ready.
    assert readiness_refresh("MODIFIED", broker_statefulset(None)) == \
        ReadinessRefresh("kafka", "odr", 0)
    assert readiness_refresh(None, broker_statefulset(3)) == ReadinessRefresh("kafka", "odr", 3)
    # Not a BrokerCluster's brokers, or gone with its cluster: nothing to refresh.
    assert readiness_refresh("MODIFIED", broker_statefulset(1, component="zookeeper")) is None
    assert readiness_refresh("MODIFIED", broker_statefulset(1, owner_kind="Other")) is None
    assert readiness_refresh("DELETED", broker_statefulset(0)) is None
    assert readiness_refresh("MODIFIED", broker_statefulset(1, owner_version="other.io/v1")) \
        is None


def test_a_statefulset_owned_through_the_deprecated_version_is_still_followed():
    """A StatefulSet written before the upgrade to v1beta1 names its owner as v1alpha1 until
    the next reconcile re-applies it: readiness must not stop following it meanwhile."""
    old = broker_statefulset(2, owner_version="odradek.dev/v1alpha1")
    assert readiness_refresh("MODIFIED", old) == ReadinessRefresh("kafka", "odr", 2)


def test_ready_replicas_follow_a_lost_broker_at_once_and_ready_turns_false():
    ready = {"type": "Ready", "status": "True", "reason": "ClusterReady",
             "message": "3 brokers ready, all partitions fully replicated",
             "lastTransitionTime": "2026-11-27T20:00:00Z"}
    healthy = {"type": "Degraded", "status": "False", "reason": "Healthy"}
    cluster: dict[str, Any] = {
        "metadata": {"name": "odr", "generation": 4}, "spec": {"replicas": 3},
        "status": {"readyReplicas": 3, "conditions": [ready, healthy]}}
    update = readiness_status(ReadinessRefresh("kafka", "odr", 2), cluster)
    assert update is not None and update["readyReplicas"] == 2
    conditions = {c["type"]: c for c in update["conditions"]}
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"],
            conditions["Ready"]["message"]) == ("False", "BrokersNotReady", "2/3 brokers ready")
    assert conditions["Degraded"]["reason"] == "Healthy"  # other conditions kept
    # Back to full strength: the count follows, Ready is the reconcile's (it asks Kafka).
    cluster["status"]["readyReplicas"] = 2
    assert readiness_status(ReadinessRefresh("kafka", "odr", 3), cluster) == \
        {"readyReplicas": 3}
    # Already current, or the cluster is being deleted: nothing to write.
    assert readiness_status(ReadinessRefresh("kafka", "odr", 2), cluster) is None
    cluster["metadata"]["deletionTimestamp"] = "2026-11-27T21:00:00Z"
    assert readiness_status(ReadinessRefresh("kafka", "odr", 1), cluster) is None
