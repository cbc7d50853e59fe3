"""Selection rules, one row per rule (kubeadm's workflow runner, plus start_at)."""

from __future__ import annotations

import pytest
from phase_helpers import build, phase, plan

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.entry_names import entry_name
from ansible_collections.phasekit.kube.plugins.module_utils.planning.selection import (
    RolloutCut, Step, cut_rollouts, select_phases)

# foo (bar, baz), qux: kubeadm's own test tree, in run order.
NAMES = ["foo", "foo/bar", "foo/baz", "qux"]
DEEP = ["a", "a/b", "a/b/c", "a/d", "e"]


@pytest.mark.parametrize("names, only, skip, start_at, expected", [
    (NAMES, [], [], None, ["foo", "foo/bar", "foo/baz", "qux"]),
    (NAMES, ["foo/baz", "qux"], [], None, ["foo/baz", "qux"]),
    (NAMES, ["foo"], [], None, ["foo", "foo/bar", "foo/baz"]),
    (NAMES, ["foo/bar"], [], None, ["foo/bar"]),
    (NAMES, [], ["foo/bar", "qux"], None, ["foo", "foo/baz"]),
    (NAMES, [], ["foo"], None, ["qux"]),
    (NAMES, ["foo"], ["foo/bar"], None, ["foo", "foo/baz"]),
    (NAMES, ["foo/bar"], ["foo"], None, []),
    (NAMES, [], [], "foo/baz", ["foo/baz", "qux"]),
    (NAMES, [], [], "foo", ["foo", "foo/bar", "foo/baz", "qux"]),
    (NAMES, ["foo"], [], "foo/baz", ["foo/baz"]),
    (NAMES, [], ["foo/baz"], "foo/baz", ["qux"]),
    (NAMES, ["qux", "foo/bar"], [], None, ["foo/bar", "qux"]),
    (DEEP, ["a/b"], [], None, ["a/b", "a/b/c"]),
    (DEEP, [], ["a/b"], None, ["a", "a/d", "e"]),
    (DEEP, ["a"], ["a/b/c"], "a/b", ["a/b", "a/d"]),
    (["ab", "ab-c", "a"], ["a"], [], None, ["a"]),
], ids=[
    "no-options-selects-everything",
    "only-selects-named-phases",
    "only-brings-descendants",
    "only-child-does-not-bring-parent",
    "skip-removes-named-phases",
    "skip-removes-descendants",
    "skip-wins-after-only",
    "skip-of-ancestor-wins-over-only-child",
    "start-at-drops-earlier-phases",
    "start-at-first-phase-keeps-everything",
    "start-at-combines-with-only",
    "start-at-on-skipped-phase-resumes-after-it",
    "order-is-run-order-not-option-order",
    "only-nested-two-levels",
    "skip-nested-two-levels",
    "only-skip-start-at-together",
    "descendant-means-path-not-prefix",
])
def test_selection(names, only, skip, start_at, expected):
    reasons = select_phases(names, only, skip, start_at)
    assert [name for name in names if reasons[name] is None] == expected


@pytest.mark.parametrize("only, skip, start_at, expected", [
    (["foo"], [], None, {"qux": "not in only"}),
    ([], ["foo"], None, {"foo": "skip", "foo/bar": "skip", "foo/baz": "skip"}),
    ([], [], "qux", {"foo": "before start_at", "foo/bar": "before start_at", "foo/baz": "before start_at"}),
    (["qux"], ["qux"], None, {"foo": "not in only", "foo/bar": "not in only", "foo/baz": "not in only",
                              "qux": "skip"}),
], ids=["reason-only", "reason-skip", "reason-start-at", "first-reason-is-kept"])
def test_reasons(only, skip, start_at, expected):
    reasons = select_phases(NAMES, only, skip, start_at)
    assert {name: reason for name, reason in reasons.items() if reason} == expected


@pytest.mark.parametrize("only, skip, start_at, bad", [
    (["invalid"], [], None, "invalid"),
    ([], ["invalid"], None, "invalid"),
    ([], [], "invalid", "invalid"),
    (["bar"], [], None, "bar"),
    (["foo/"], [], None, "foo/"),
], ids=["invalid-only", "invalid-skip", "invalid-start-at", "short-name-of-child-is-invalid", "trailing-slash"])
def test_invalid_phase_name(only, skip, start_at, bad):
    with pytest.raises(PhasekitError, match=f"^invalid phase name: {bad}"):
        select_phases(NAMES, only, skip, start_at)


def test_invalid_phase_name_suggests():
    with pytest.raises(PhasekitError, match=r"invalid phase name: foo/bax \(did you mean 'foo/baz'\?\)"):
        select_phases(NAMES, ["foo/bax"])


# A plan that runs some phases again: check, deploy (with a child), check, deploy, deploy/web, check, once.
# Each run of a repeated phase is an entry of its own: name#k; a phase that runs once keeps its name.
REPEATED = [
    Step("check#1", "check", 0), Step("deploy#1", "deploy", 1), Step("deploy/web#1", "deploy/web", 1),
    Step("check#2", "check", 2), Step("deploy#2", "deploy", 3), Step("deploy/web#2", "deploy/web", 3),
    Step("deploy/web#3", "deploy/web", 4), Step("check#3", "check", 5), Step("once", "once", 6),
]
ALL_REPEATED = [step.name for step in REPEATED]
DEPLOYS = ["deploy#1", "deploy/web#1", "deploy#2", "deploy/web#2", "deploy/web#3"]


@pytest.mark.parametrize("only, skip, start_at, expected", [
    ([], [], None, ALL_REPEATED),
    (["check"], [], None, ["check#1", "check#2", "check#3"]),
    (["check#2"], [], None, ["check#2"]),
    ([], ["check"], None, DEPLOYS + ["once"]),
    ([], ["check#1", "check#3"], None,
     ["deploy#1", "deploy/web#1", "check#2", "deploy#2", "deploy/web#2", "deploy/web#3", "once"]),
    (["deploy"], [], None, DEPLOYS),
    (["deploy#1"], [], None, ["deploy#1", "deploy/web#1"]),
    (["deploy/web"], [], None, ["deploy/web#1", "deploy/web#2", "deploy/web#3"]),
    ([], ["deploy#1"], None,
     ["check#1", "check#2", "deploy#2", "deploy/web#2", "deploy/web#3", "check#3", "once"]),
    ([], [], "check#2", ["check#2", "deploy#2", "deploy/web#2", "deploy/web#3", "check#3", "once"]),
    ([], [], "deploy/web#3", ["deploy/web#3", "check#3", "once"]),
    ([], [], "once", ["once"]),
    (["check"], ["check#3"], "check#2", ["check#2"]),
], ids=[
    "every-entry-runs",
    "only-full-name-selects-every-entry",
    "only-entry-name-selects-that-entry",
    "skip-full-name-skips-every-entry",
    "skip-entry-names-skips-those-entries",
    "only-parent-brings-descendants-of-every-entry",
    "only-parent-entry-brings-the-descendants-of-that-plan-entry-only",
    "only-child-full-name-selects-each-of-its-entries",
    "skip-parent-entry-keeps-its-other-entries",
    "start-at-an-entry-of-a-repeated-phase",
    "start-at-a-later-entry-of-a-repeated-child",
    "start-at-a-phase-that-runs-once-by-its-full-name",
    "only-skip-start-at-with-entries",
])
def test_selection_of_repeated_phases(only, skip, start_at, expected):
    reasons = select_phases(REPEATED, only, skip, start_at)
    assert [name for name in ALL_REPEATED if reasons[name] is None] == expected


def test_start_at_the_full_name_of_a_repeated_phase_lists_its_entries():
    with pytest.raises(PhasekitError, match=r"^start_at: phase check runs 3 times in this plan; name the entry to "
                                            r"start at: check#1, check#2, check#3$"):
        select_phases(REPEATED, start_at="check")


@pytest.mark.parametrize("bad, suggestion", [("check#4", "check#3"), ("chek", "check")],
                         ids=["entry-that-does-not-exist", "misspelt-full-name"])
def test_unknown_entry_names_are_invalid(bad, suggestion):
    with pytest.raises(PhasekitError, match=f"^invalid phase name: {bad} \\(did you mean '{suggestion}'"):
        select_phases(REPEATED, only=[bad])


@pytest.mark.parametrize("full_name, occurrence, expected", [
    ("check", None, "check"), ("check", 2, "check#2"), ("a/b", 3, "a/b#3"),
], ids=["once", "repeated", "repeated-child"])
def test_entry_names(full_name, occurrence, expected):
    assert entry_name(full_name, occurrence) == expected


# A rollout (apps: web then smoke, batch by batch) between two phases without one: the site.
ROLLOUT_STEPS = ["base", "apps", "apps/web", "apps/smoke", "after"]
ROLLOUTS = {"apps": ["apps/web", "apps/smoke"]}   # the phases under it that do something (apps only holds them)


@pytest.mark.parametrize("only, skip, start_at, expected", [
    ([], [], None, []),
    ([], [], "apps", []),
    ([], [], "after", []),
    (["apps"], [], None, []),
    ([], ["apps"], None, []),
    (["apps/web", "apps/smoke"], [], None, []),
    (["base"], [], None, []),
    ([], [], "apps/smoke", [RolloutCut("apps", ("apps/smoke",), (("apps/web", "before start_at"),))]),
    (["apps/smoke"], [], None, [RolloutCut("apps", ("apps/smoke",), (("apps/web", "not in only"),))]),
    ([], ["apps/web"], None, [RolloutCut("apps", ("apps/smoke",), (("apps/web", "skip"),))]),
    ([], ["apps/smoke"], None, [RolloutCut("apps", ("apps/web",), (("apps/smoke", "skip"),))]),
], ids=[
    "no-selection-runs-every-rollout-whole",
    "start-at-the-rollout-phase-runs-it-whole",
    "start-at-after-the-rollout-leaves-it-out-whole",
    "only-the-rollout-phase-brings-its-whole-subtree",
    "skip-the-rollout-phase-leaves-it-out-whole",
    "only-every-phase-under-a-group-rollout-is-whole",
    "only-outside-the-rollout-leaves-it-out-whole",
    "start-at-inside-a-rollout-cuts-it",
    "only-inside-a-rollout-cuts-it",
    "skip-an-early-phase-of-a-rollout-cuts-it",
    "skip-a-late-phase-of-a-rollout-cuts-it",
])
def test_cut_rollouts(only, skip, start_at, expected):
    assert cut_rollouts(ROLLOUTS, select_phases(ROLLOUT_STEPS, only, skip, start_at)) == expected


def rollout_site(rollout=True):
    """The issue's site as documents: base, the rollout apps (web, smoke; or under plan_rollout), after."""
    command = {"executor": "command", "options": {"argv": ["true"]}}
    return [phase("base", cluster="workload", **command),
            phase("apps", cluster="workload", **({"rollout": {"batches": [1, "100%"]}} if rollout else {}),
                  phases=[{"name": "web", **command}, {"name": "smoke", **command}]),
            phase("after", cluster="workload", **command),
            plan("site", "base", "apps", "after")]


@pytest.mark.parametrize("selection, refused", [
    ({"start_at": "apps/smoke"}, "plan_start_at=apps/smoke runs only part of the rollout of phase apps: apps/smoke "
                                 "would run batch by batch without apps/web (before start_at)."),
    ({"only": ["apps/smoke", "after"]}, "plan_only=apps/smoke,after runs only part of the rollout of phase apps: "
                                        "apps/smoke would run batch by batch without apps/web (not in only)."),
    ({"skip": ["apps/web"]}, "plan_skip=apps/web runs only part of the rollout of phase apps"),
    ({"start_at": "apps/smoke", "rollout": {"batches": [1]}, "site": rollout_site(rollout=False)},
     "plan_start_at=apps/smoke runs only part of the rollout of phase apps"),
    ({"start_at": "apps/smoke", "whole_rollouts": False}, None),
    ({"start_at": "apps/smoke", "site": rollout_site(rollout=False)}, None),
    ({"start_at": "apps"}, None),
    ({"only": ["apps"], "skip": ["base"]}, None),
], ids=[
    "a-run-refuses-start-at-inside-a-rollout",
    "a-run-refuses-only-inside-a-rollout",
    "a-run-refuses-skip-inside-a-rollout",
    "a-run-refuses-a-cut-of-the-default-rollout",
    "partial-rollout-lets-it-run",
    "start-at-inside-a-phase-without-rollout-runs",
    "start-at-the-rollout-phase-runs",
    "only-the-rollout-phase-runs",
])
def test_a_run_refuses_a_selection_that_cuts_a_rollout(tmp_path, selection, refused):
    selection = {"whole_rollouts": True, **selection}
    documents = selection.pop("site", None) or rollout_site()
    if refused is None:
        build(documents, tmp_path, name="site", **selection)
        return
    with pytest.raises(PhasekitError) as raised:
        build(documents, tmp_path, name="site", **selection)
    assert str(raised.value).startswith(refused)
    assert "run with plan_resume=true instead" in str(raised.value)
    assert str(raised.value).endswith("to run part of the rollout anyway, set plan_partial_rollout=true")
