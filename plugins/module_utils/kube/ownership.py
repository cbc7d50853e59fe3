# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which set an existing object belongs to, and whether an ApplySet may take it over (``applyset_adopt``).

cli-utils' inventory policies (airshipctl's ``inventoryPolicy``) mapped onto ApplySets:

==============  =====================  ==========================================================
applyset_adopt  cli-utils policy       an existing object is applied when it is
==============  =====================  ==========================================================
``none``        ``strict``             already in this set
``unowned``     ``adopt``              in this set, or in no set
``all``         ``force-adopt``        anywhere: it is taken over from any other set
==============  =====================  ==========================================================

An object that does not exist yet is always applied. An object belongs to the
ApplySet its ``applyset.kubernetes.io/part-of`` label names; without that label,
to the cli-utils inventory its ``config.k8s.io/owning-inventory`` annotation
names (what airshipctl's applier wrote), which counts as this set when the
inventory id is the set's name: an airshipctl phase's inventory id is the
phase's name, and so is the ApplySet of the phase read from airshipctl's
documents. Prune deletes only this set's members, so cli-utils' rule that
``force-adopt`` may also prune objects another inventory took is moot here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.kube.applyset import PART_OF_LABEL

ADOPT_NONE, ADOPT_UNOWNED, ADOPT_ALL = "none", "unowned", "all"
ADOPT_POLICIES = (ADOPT_NONE, ADOPT_UNOWNED, ADOPT_ALL)
INVENTORY_ANNOTATION = "config.k8s.io/owning-inventory"   # cli-utils' owner of an object
# airshipctl's inventoryPolicy values -> applyset_adopt
INVENTORY_POLICIES = {"strict": ADOPT_NONE, "adopt": ADOPT_UNOWNED, "force-adopt": ADOPT_ALL}

THIS_SET, NO_SET, OTHER_SET = "this", "none", "other"


@dataclass(frozen=True)
class Owner:
    """Where an existing object belongs: this set, no set, or another set (``by``: its label or annotation)."""

    relation: str
    by: str = ""

    def describe(self) -> str:
        if self.relation == NO_SET:
            return "exists and is in no ApplySet"
        return f"belongs to {self.by}"


def live_owner(live: dict, set_id: str, set_name: str) -> Owner:
    """The owner of a live object, for the ApplySet with this id whose parent has this name."""
    metadata = live.get("metadata") or {}
    part_of = (metadata.get("labels") or {}).get(PART_OF_LABEL)
    if part_of:
        return Owner(THIS_SET if part_of == set_id else OTHER_SET, f"ApplySet {part_of} (label {PART_OF_LABEL})")
    inventory = (metadata.get("annotations") or {}).get(INVENTORY_ANNOTATION)
    if inventory:
        return Owner(THIS_SET if inventory == set_name else OTHER_SET,
                     f"cli-utils inventory {inventory!r} (annotation {INVENTORY_ANNOTATION})")
    return Owner(NO_SET)


def may_adopt(policy: str, owner: Owner) -> bool:
    """cli-utils' CanApply: whether the set may apply an existing object with this owner."""
    if owner.relation == THIS_SET or policy == ADOPT_ALL:
        return True
    return owner.relation == NO_SET and policy == ADOPT_UNOWNED
