"""Which plan owns an ApplySet and an applied object: cli-utils' inventory rule for sets (another owner is refused
unless force-adopted), Argo CD's SharedResourceWarning for objects (the first plan keeps it; the others say so)."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import (
    ADOPT_ALL, ADOPT_NONE, ADOPT_UNOWNED, HOST_ANNOTATION, PLAN_ANNOTATION, SINCE_ANNOTATION, PlanOwner,
    kept_by_another_plan, object_claim, set_claim)

SINCE = "2026-11-27T20:00:00Z"
A_ON_H1 = PlanOwner("a", "h1", SINCE)
A_ON_H2 = PlanOwner("a", "h2", "2026-11-27T21:00:00Z")
B_ON_H1 = PlanOwner("b", "h1", "2026-11-27T21:00:00Z")
NO_PHASEPLAN = PlanOwner("", "h1", SINCE)
B_SHARING_THE_PHASE = PlanOwner("b", "h1", SINCE, fellows=frozenset({"a"}))   # plans a and b run the same phase
PARENT = "secrets/site in namespace apps"


def marked(owner: PlanOwner | None, with_since: bool = True) -> dict:
    annotations = owner.annotations(with_since=with_since) if owner else {}
    return {"metadata": {"name": "x", "annotations": annotations}}


@pytest.mark.parametrize("live, us, policy, owner, note, refused", [
    (marked(A_ON_H1), None, ADOPT_UNOWNED, A_ON_H1, "", False),
    (marked(None), None, ADOPT_UNOWNED, None, "", False),
    (None, B_ON_H1, ADOPT_UNOWNED, B_ON_H1, "", False),
    (marked(None), B_ON_H1, ADOPT_NONE, B_ON_H1, "ApplySet secrets/site in namespace apps had no owning plan (made by "
     "an earlier version, by kubectl or by a task outside a plan): it belongs to plan b (host h1) from now on", False),
    (marked(A_ON_H1), PlanOwner("a", "h1", "2026-11-28T00:00:00Z"), ADOPT_NONE, A_ON_H1, "", False),
    (marked(A_ON_H1), B_ON_H1, ADOPT_UNOWNED, A_ON_H1,
     "ApplySet secrets/site in namespace apps belongs to plan a (host h1, since 2026-11-27T20:00:00Z), not to plan b "
     "(host h1); nothing was applied or pruned. Name another applyset for this phase, or set applyset_adopt: all to "
     "take the set over (the other plan is then refused)", True),
    (marked(A_ON_H1), B_ON_H1, ADOPT_NONE, A_ON_H1, "belongs to plan a (host h1", True),
    (marked(A_ON_H1), A_ON_H2, ADOPT_UNOWNED, A_ON_H1, "belongs to plan a (host h1, since 2026-11-27T20:00:00Z), not "
     "to plan a (host h2)", True),
    (marked(A_ON_H1), NO_PHASEPLAN, ADOPT_UNOWNED, A_ON_H1, "not to the phases without a PhasePlan (host h1)", True),
    (marked(A_ON_H1), B_ON_H1, ADOPT_ALL, B_ON_H1, "ApplySet secrets/site in namespace apps taken over from plan a "
     "(host h1, since 2026-11-27T20:00:00Z) (applyset_adopt: all); that plan is refused from now on", False),
    (marked(A_ON_H1), B_SHARING_THE_PHASE, ADOPT_NONE, A_ON_H1, "", False),
], ids=["outside-a-plan-the-set-keeps-its-owner", "outside-a-plan-an-unowned-set-stays-unowned",
        "a-new-set-is-the-plans-without-a-word", "an-unowned-parent-is-taken-by-the-first-plan-and-said",
        "the-owner-keeps-the-set-as-recorded", "another-plan-is-refused-naming-the-owner",
        "another-plan-is-refused-under-strict-too", "the-same-plan-from-another-host-is-refused",
        "phases-without-a-phaseplan-are-another-plan", "force-adopt-takes-the-set-over",
        "a-plan-running-the-same-phase-shares-the-set-which-stays-the-first-plans"])
def test_set_claim(live, us, policy, owner, note, refused):
    claim = set_claim(live, us, policy, PARENT)
    assert (claim.owner, claim.refused) == (owner, refused)
    assert note in claim.note if refused else claim.note == note


@pytest.mark.parametrize("live, us, force_adopt, owner, note", [
    (marked(A_ON_H1, False), None, False, PlanOwner("a", "h1"), ""),
    (marked(None), None, False, None, ""),
    (None, B_ON_H1, False, B_ON_H1, ""),
    (marked(None), B_ON_H1, False, B_ON_H1, ""),
    (marked(A_ON_H1, False), A_ON_H2, False, PlanOwner("a", "h1"), ""),
    (marked(A_ON_H1, False), B_ON_H1, False, PlanOwner("a", "h1"),
     "ConfigMap apps/x is also applied by plan a (host h1); it stays that plan's"),
    (marked(A_ON_H1, False), B_ON_H1, True, B_ON_H1,
     "ConfigMap apps/x taken over from plan a (host h1) (applyset_adopt: all)"),
    (marked(NO_PHASEPLAN, False), B_ON_H1, False, PlanOwner("", "h1"),
     "ConfigMap apps/x is also applied by the phases without a PhasePlan (host h1); it stays that plan's"),
    (marked(A_ON_H1, False), B_SHARING_THE_PHASE, False, PlanOwner("a", "h1"), ""),
], ids=["outside-a-plan-the-marker-is-carried-over", "outside-a-plan-nothing-is-marked",
        "a-new-object-is-the-plans", "an-unmarked-object-is-taken-by-the-first-plan-silently",
        "the-same-plan-from-another-host-keeps-the-first-marker", "another-plans-object-is-shared-not-flipped",
        "force-adopt-takes-the-object-over", "phases-without-a-phaseplan-are-another-plan",
        "a-plan-running-the-same-phase-shares-the-object-silently"])
def test_object_claim(live, us, force_adopt, owner, note):
    claim = object_claim(live, us, force_adopt=force_adopt, what="ConfigMap apps/x")
    assert (claim.owner, claim.note, claim.refused) == (owner, note, False)


@pytest.mark.parametrize("live, us, kept", [
    (marked(A_ON_H1, False), B_ON_H1, "plan a (host h1) applied it first and keeps it"),
    (marked(A_ON_H1, False), A_ON_H2, ""),
    (marked(None), B_ON_H1, ""),
    (marked(A_ON_H1, False), None, ""),
    (marked(A_ON_H1, False), B_SHARING_THE_PHASE, ""),
], ids=["another-plans-object-is-not-deleted", "this-plans-object-is", "an-unmarked-object-is",
        "outside-a-plan-the-marker-is-not-looked-at", "an-object-of-a-plan-running-the-same-phase-is"])
def test_kept_by_another_plan(live, us, kept):
    assert kept_by_another_plan(live, us) == kept


def test_objects_carry_plan_and_host_and_parents_also_since_when():
    assert A_ON_H1.annotations(with_since=False) == {PLAN_ANNOTATION: "a", HOST_ANNOTATION: "h1"}
    assert A_ON_H1.annotations(with_since=True) == {PLAN_ANNOTATION: "a", HOST_ANNOTATION: "h1",
                                                    SINCE_ANNOTATION: SINCE}
    assert PlanOwner.of(marked(A_ON_H1)) == A_ON_H1 and PlanOwner.of({"metadata": {}}) is None
