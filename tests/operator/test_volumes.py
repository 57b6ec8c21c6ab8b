"""Growing broker volumes (decisions/volumes.py), without a cluster; the handler's side runs
against kmock in test_handlers.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from odradek_operator.decisions.volumes import ClaimState, parse_quantity, plan_volumes

CLAIMS = [ClaimState("data-odr-0", "10Gi", "10Gi"), ClaimState("data-odr-1", "10Gi", "10Gi")]


def test_quantities_are_kubernetes_ones() -> None:
    assert parse_quantity("10Gi") == 10 * 2**30
    assert parse_quantity("1.5G") == 1_500_000_000
    assert parse_quantity("1e9") == 10**9
    assert parse_quantity("512") == 512
    for bad in ("10GB", "", "ten", "-1Gi"):
        with pytest.raises(ValueError, match="not a storage quantity"):
            parse_quantity(bad)


@given(st.integers(0, 2**40), st.sampled_from(["", "Ki", "Mi", "Gi", "k", "M", "G"]))
def test_a_larger_number_is_a_larger_quantity(n: int, suffix: str) -> None:
    assert parse_quantity(f"{n + 1}{suffix}") > parse_quantity(f"{n}{suffix}")


def test_growth_patches_the_claims_first_then_recreates_the_statefulset() -> None:
    first = plan_volumes("20Gi", "10Gi", CLAIMS, True, "standard")
    assert first.expand == ("data-odr-0", "data-odr-1") and not first.recreate
    assert first.template_size == "10Gi"  # the StatefulSet keeps its template meanwhile
    asked = [ClaimState(c.name, "20Gi", "10Gi") for c in CLAIMS]
    second = plan_volumes("20Gi", "10Gi", asked, True, "standard")
    assert second.recreate and second.template_size == "20Gi" and not second.expand
    assert second.expanding == ("data-odr-0", "data-odr-1")
    grown = plan_volumes("20Gi", "20Gi", [ClaimState(c.name, "20Gi", "20Gi") for c in CLAIMS],
                         True, "standard")
    assert grown == plan_volumes("20Gi", "20Gi", [], True, "standard")
    assert not (grown.expand or grown.recreate or grown.expanding or grown.refusal)


def test_what_cannot_be_done_is_said_and_nothing_changes() -> None:
    shrink = plan_volumes("5Gi", "10Gi", CLAIMS, True, "standard")
    assert shrink.refusal is not None and shrink.refusal[0] == "VolumeShrinkUnsupported"
    assert shrink.template_size == "10Gi" and not shrink.expand
    fixed = plan_volumes("20Gi", "10Gi", CLAIMS, False, "local-path")
    assert fixed.refusal is not None and fixed.refusal[0] == "VolumeExpansionUnsupported"
    assert "StorageClass 'local-path' does not allow volume expansion" in fixed.refusal[1]
    assert fixed.template_size == "10Gi" and not fixed.expand


def test_a_new_cluster_takes_the_spec_size() -> None:
    assert plan_volumes("20Gi", None, [], None, None).template_size == "20Gi"
