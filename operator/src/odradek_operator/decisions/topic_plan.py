"""What a Topic reconcile must do, given the spec and what the cluster holds.

The plan is computed before anything is sent, so a refusal (the topic has more partitions
than the spec, which Kafka cannot undo; not enough brokers for the replication factor) is
reported without touching the topic, and the rest of the spec (configs) is still applied.
Unknown config keys are the exception: Kafka refuses a whole create or alter for one of them,
so nothing is sent and every unknown key is named (Kafka's refusal names only the first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..spec import TopicSpec
from .placement import plan_replication_factor

__all__ = ["ObservedTopic", "TopicPlan", "plan_topic", "unknown_config_names"]


@dataclass(frozen=True)
class ObservedTopic:
    name: str
    topic_id: str | None
    assignment: Mapping[int, tuple[int, ...]]  # partition -> replicas
    #: Configs set on the topic itself (DYNAMIC_TOPIC_CONFIG); defaults are not drift.
    overrides: Mapping[str, str]
    reassigning: bool = False
    #: Every topic config name the cluster knows (DescribeConfigs lists defaults too).
    config_names: frozenset[str] = frozenset()

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    @property
    def replication_factor(self) -> int:
        """The most common replica count (they differ only mid-reassignment)."""
        counts = [len(r) for r in self.assignment.values()]
        return max(set(counts), key=counts.count) if counts else 0


@dataclass(frozen=True)
class TopicPlan:
    create: bool = False
    grow_to: int | None = None
    config_changes: tuple[tuple[str, str, str | None], ...] = ()
    reassignment: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    #: (reason, message) for what the spec asks and the cluster cannot do.
    refusals: tuple[tuple[str, str], ...] = ()

    @property
    def in_sync(self) -> bool:
        return not (self.create or self.grow_to or self.config_changes or self.reassignment)


def unknown_config_names(config: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """The keys of ``config`` that are not topic configs of the cluster, all of them (Kafka
    names only the first it meets); none when the cluster's names are not known."""
    return sorted(set(config) - known) if known else []


def plan_topic(spec: TopicSpec, observed: ObservedTopic | None, brokers: frozenset[int],
               config_names: frozenset[str] = frozenset()) -> TopicPlan:
    """``config_names``: the topic configs the cluster knows; a spec naming others changes
    nothing (Kafka would refuse the whole create or alter) and every unknown key is named."""
    unknown = unknown_config_names(spec.config, config_names)
    if unknown:
        return TopicPlan(refusals=((
            "InvalidConfig", f"Unknown topic config name{'s' if len(unknown) > 1 else ''}: "
                             f"{', '.join(unknown)} (spec.config of topic {spec.topic_name})"),))
    if observed is None:
        refusals: tuple[tuple[str, str], ...] = ()
        if spec.replication_factor > len(brokers):
            refusals = (("InsufficientBrokers",
                         f"replication factor {spec.replication_factor} needs that many "
                         f"brokers; the cluster has {len(brokers)}"),)
            return TopicPlan(refusals=refusals)
        return TopicPlan(create=True)

    refused: list[tuple[str, str]] = []
    grow_to = None
    if spec.partitions > observed.partitions:
        grow_to = spec.partitions
    elif spec.partitions < observed.partitions:
        # Partitions added outside Kubernetes (or a spec lowered before the CRD's rule that
        # refuses a decrease): nothing here can repair it, so say what would.
        refused.append(("MorePartitionsThanSpec",
                        f"topic {observed.name} has {observed.partitions} partitions, more "
                        f"than spec.partitions {spec.partitions}: Kafka cannot remove "
                        f"partitions; set spec.partitions to {observed.partitions}"))

    changes: list[tuple[str, str, str | None]] = [
        (key, "set", value) for key, value in sorted(spec.config.items())
        if observed.overrides.get(key) != value]
    changes += [(key, "delete", None) for key in sorted(observed.overrides)
                if key not in spec.config]

    reassignment: dict[tuple[str, int], tuple[int, ...]] = {}
    if not observed.reassigning and any(
            len(r) != spec.replication_factor for r in observed.assignment.values()):
        try:
            reassignment = plan_replication_factor(
                {(observed.name, p): r for p, r in observed.assignment.items()},
                observed.name, spec.replication_factor, brokers)
        except ValueError as exc:
            refused.append(("InsufficientBrokers", str(exc)))
    return TopicPlan(False, grow_to, tuple(changes), reassignment, tuple(refused))
