"""Growing the brokers' volumes when ``spec.storage.size`` grows (pure).

A StatefulSet's ``volumeClaimTemplates`` cannot change, so a larger size is carried out the
way Elastic's and other operators do it: each existing claim is patched to the new size (the
StorageClass must allow expansion: ``allowVolumeExpansion: true``), and once every claim asks
for it the StatefulSet is deleted with its pods left running (orphaned) and applied again with
the new template, which adopts them — no broker restarts. Until then the StatefulSet is kept
at the size its template has. Volumes never shrink (Kafka data does not fit back), and a
StorageClass that cannot expand is said so in a condition, the brokers untouched.

Quantities are Kubernetes' (``10Gi``, ``500M``, ``1e9``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["ClaimState", "VolumePlan", "parse_quantity", "plan_volumes"]

_SUFFIXES = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
             "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
             "Ei": 2**60}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(?:e([0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?)$")


def parse_quantity(text: str) -> int:
    """Bytes of a storage quantity; ValueError for anything else."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise ValueError(f"not a storage quantity: {text!r}")
    number, exponent, suffix = match.groups()
    scale = 10 ** int(exponent) if exponent else _SUFFIXES[suffix or ""]
    return int(Fraction(number) * scale)  # exact: a float loses bytes of large sizes


@dataclass(frozen=True)
class ClaimState:
    name: str
    requested: str  # spec.resources.requests.storage
    capacity: str | None  # status.capacity.storage (None: not bound yet)


@dataclass(frozen=True)
class VolumePlan:
    template_size: str  # the size the StatefulSet is applied with this time
    expand: tuple[str, ...] = ()  # claims to patch to the spec's size
    recreate: bool = False  # delete the StatefulSet (orphaning pods) to change its template
    expanding: tuple[str, ...] = ()  # claims whose capacity has not reached the size yet
    refusal: tuple[str, str] | None = None  # (reason, message)


def plan_volumes(desired: str, template: str | None, claims: Sequence[ClaimState],
                 expandable: bool | None, storage_class: str | None) -> VolumePlan:
    """``template``: the existing StatefulSet's claim size (None: none exists yet);
    ``expandable``: the StorageClass's allowVolumeExpansion (None: unknown/absent)."""
    if template is None:
        return VolumePlan(desired)
    want, have = parse_quantity(desired), parse_quantity(template)
    if want < have:
        return VolumePlan(template, refusal=(
            "VolumeShrinkUnsupported",
            f"spec.storage.size {desired} is below the volumes' {template}: volumes cannot "
            "shrink; set it back to at least that"))
    short = [c for c in claims if parse_quantity(c.requested) < want]
    # Bound claims still below the size (an unbound claim is not expanding, only new).
    expanding = tuple(sorted(c.name for c in claims
                             if c.capacity is not None and parse_quantity(c.capacity) < want))
    if want == have and not short:
        return VolumePlan(template, expanding=expanding)
    if short and not expandable:
        where = f"StorageClass {storage_class!r}" if storage_class else \
            "the default StorageClass"
        return VolumePlan(template, refusal=(
            "VolumeExpansionUnsupported",
            f"{where} does not allow volume expansion (allowVolumeExpansion); the volumes "
            f"stay at {template}. Use a StorageClass that can expand, or set "
            f"spec.storage.size back to {template}"))
    if short:
        return VolumePlan(template, expand=tuple(sorted(c.name for c in short)),
                          expanding=expanding)
    return VolumePlan(desired, recreate=True, expanding=expanding)
