"""Selection rules, one row per rule (kubeadm's workflow runner, plus start_at)."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.phases.selection import select_phases

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
