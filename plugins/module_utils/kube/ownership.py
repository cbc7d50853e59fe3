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

Plans (the phase engine) also say who applies: a ``PlanOwner`` (the plan's
name and the cluster host, opaque strings here) recorded as annotations

- on an ApplySet's parent: the set belongs to one plan on one cluster host
  (``set_claim``): another plan, or the same plan from another host, is refused
  before anything is written, unless it force-adopts (``applyset_adopt: all``)
  or runs the very phase that took the set (plans of one site sharing a phase);
  a parent without them (an older version's, kubectl's, a standalone task's)
  is taken by the first plan that uses it;
- on every object a plan applies: the first plan keeps it (``object_claim``);
  another plan's apply carries the first plan's marker over and reports the
  object as shared (Argo CD's SharedResourceWarning), and never prunes it.

A task outside a plan (no ``PlanOwner``) carries over whatever marker it finds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.kube.applyset import PART_OF_LABEL

ADOPT_NONE, ADOPT_UNOWNED, ADOPT_ALL = "none", "unowned", "all"
ADOPT_POLICIES = (ADOPT_NONE, ADOPT_UNOWNED, ADOPT_ALL)
INVENTORY_ANNOTATION = "config.k8s.io/owning-inventory"   # cli-utils' owner of an object
# airshipctl's inventoryPolicy values -> applyset_adopt
INVENTORY_POLICIES = {"strict": ADOPT_NONE, "adopt": ADOPT_UNOWNED, "force-adopt": ADOPT_ALL}

THIS_SET, NO_SET, OTHER_SET = "this", "none", "other"

PLAN_ANNOTATION = "phasekit.kube/plan"          # the plan that owns a set (its parent) or first applied an object
HOST_ANNOTATION = "phasekit.kube/host"          # ... and the cluster host it ran for
SINCE_ANNOTATION = "phasekit.kube/owned-since"  # when that plan took the set (UTC, the controller's clock)
OWNER_ANNOTATIONS = (PLAN_ANNOTATION, HOST_ANNOTATION, SINCE_ANNOTATION)


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


# ---------------------------------------------------------------- plans: who applies

@dataclass(frozen=True)
class PlanOwner:
    """A plan on one cluster host, as the annotations of what it applies record it ("" plan: no PhasePlan)."""

    plan: str
    host: str
    since: str = ""
    # other plans of the same documents that run the applying phase: what it applies is theirs too
    fellows: frozenset = field(default=frozenset(), compare=False)

    def owns_with(self, recorded: "PlanOwner") -> bool:
        """Whether what ``recorded`` names is this plan's: the same plan, or one that runs the same phase."""
        return recorded.plan == self.plan or recorded.plan in self.fellows

    def describe(self, *, with_since: bool = True) -> str:
        name = f"plan {self.plan}" if self.plan else "the phases without a PhasePlan"
        since = f", since {self.since}" if self.since and with_since else ""
        return f"{name} (host {self.host}{since})"

    def annotations(self, *, with_since: bool) -> dict:
        marks = {PLAN_ANNOTATION: self.plan, HOST_ANNOTATION: self.host}
        if with_since and self.since:
            marks[SINCE_ANNOTATION] = self.since
        return marks

    @classmethod
    def of(cls, obj: dict | None) -> "PlanOwner | None":
        """The owner an object's annotations record; None when they record none."""
        annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
        if PLAN_ANNOTATION not in annotations:
            return None
        return cls(annotations[PLAN_ANNOTATION], annotations.get(HOST_ANNOTATION, ""),
                   annotations.get(SINCE_ANNOTATION, ""))


@dataclass(frozen=True)
class Claim:
    """What one apply does about an owner marker: the owner to record, and what to tell the user (if anything)."""

    owner: PlanOwner | None     # None: record no marker
    note: str = ""              # said once: a set taken, an object shared
    refused: bool = False


def set_claim(live: dict | None, us: PlanOwner | None, policy: str, parent: str) -> Claim:
    """Who owns an ApplySet after this run uses it; ``live`` is its parent (None: a new set).

    The set belongs to one plan on one host: another is refused unless it force-adopts (``all``).
    """
    recorded = PlanOwner.of(live)
    if us is None:   # a task outside a plan: the set stays whoever's it was
        return Claim(recorded)
    if recorded is None:
        note = "" if live is None else (f"ApplySet {parent} had no owning plan (made by an earlier version, by kubectl "
                                        f"or by a task outside a plan): it belongs to "
                                        f"{us.describe(with_since=False)} from now on")
        return Claim(us, note)
    if recorded.host == us.host and us.owns_with(recorded):
        return Claim(recorded)
    if policy == ADOPT_ALL:
        return Claim(us, f"ApplySet {parent} taken over from {recorded.describe()} (applyset_adopt: all); "
                         f"that plan is refused from now on")
    return Claim(recorded, f"ApplySet {parent} belongs to {recorded.describe()}, not to {us.describe(with_since=False)}; "
                           f"nothing was applied or pruned. Name another applyset for this phase, or set "
                           f"applyset_adopt: all to take the set over (the other plan is then refused)",
                 refused=True)


def object_claim(live: dict | None, us: PlanOwner | None, *, force_adopt: bool, what: str) -> Claim:
    """The owner marker an applied object carries; ``live`` is the object (None: new, or not readable).

    The first plan to apply an object keeps it: another plan's apply carries that marker over and reports the
    object as shared, unless its set force-adopts (``applyset_adopt: all``), which takes the object over.
    """
    recorded = PlanOwner.of(live)
    if us is None or (recorded is not None and us.owns_with(recorded)):
        return Claim(recorded)   # outside a plan, or this plan's (from this host or another): kept as it is
    if recorded is None:
        return Claim(us)
    if force_adopt:
        return Claim(us, f"{what} taken over from {recorded.describe()} (applyset_adopt: all)")
    return Claim(recorded, f"{what} is also applied by {recorded.describe()}; it stays that plan's")


def kept_by_another_plan(live: dict, us: PlanOwner | None) -> str:
    """Why prune or destroy must not delete this object ("": they may): another plan applied it first."""
    recorded = PlanOwner.of(live)
    if us is None or recorded is None or us.owns_with(recorded):
        return ""
    return f"{recorded.describe()} applied it first and keeps it"
