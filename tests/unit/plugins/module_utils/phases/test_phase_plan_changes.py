"""A preview's plan-wide summary: per phase and cluster what it would add, change and destroy, then the totals."""

from __future__ import annotations

import json

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.module_utils.planning import views
from ansible_collections.phasekit.kube.plugins.module_utils.planning.plan_changes import plan_changes, previews
from ansible_collections.phasekit.kube.plugins.module_utils.running.report import json_report, report_entries

PHASES = [{"name": "crds", "executor": "apply", "hosts": ["target"]},
          {"name": "apps", "executor": "apply", "hosts": ["target"]},
          {"name": "ready", "executor": "wait", "hosts": ["target"]},
          {"name": "seed", "executor": "command", "hosts": ["target"]}]
CRD = {"action": "add", "object": "CustomResourceDefinition gadgets.p4.example.com", "fields": ["absent"]}
NAMESPACE = {"action": "add", "object": "Namespace p4-chk", "fields": ["absent"]}
CHANGED = {"action": "change", "object": "ConfigMap p4-chk/settings", "fields": ["data.colour", "data.size"]}
PRUNED = {"action": "destroy", "object": "ConfigMap p4-chk/old", "fields": []}
RECORDS = [
    {"phase": "crds", "host": "target", "result": "changed", "objects_changed": 2, "changes": [CRD, NAMESPACE]},
    {"phase": "apps", "host": "target", "result": "changed", "objects_changed": 2, "changes": [CHANGED, PRUNED]},
    {"phase": "ready", "host": "target", "result": "ok", "preview": "would wait for 2 objects"},
    {"phase": "seed", "host": "target", "result": "skipped", "msg": "commands do not run in a dry run",
     "preview": "would run: seed.sh"},
]


@pytest.mark.parametrize("mode, check_mode, expected", [
    ("run", True, True), ("status", False, True), ("destroy", True, True),
    ("run", False, False), ("destroy", False, False), ("validate", False, False), ("validate", True, False),
], ids=["check-mode-run-previews", "status-previews", "destroy-check-previews", "a-run-does-not",
        "a-destroy-does-not", "validate-plans-nothing", "validate-in-check-mode-plans-nothing"])
def test_which_runs_preview(mode, check_mode, expected):
    assert previews(mode, check_mode) is expected


@pytest.mark.parametrize("records, totals", [
    (RECORDS, "Plan: 2 to add, 1 to change, 1 to destroy."),
    (RECORDS[:1] + [{"phase": "apps", "host": "target", "result": "failed", "msg": "no"}],
     "Plan: 2 to add, 0 to change, 0 to destroy. Not counted (failed or not run): apps on target, ready on target, "
     "seed on target."),
    ([], "Plan: 0 to add, 0 to change, 0 to destroy. Not counted (failed or not run): crds on target, apps on target, "
         "ready on target, seed on target."),
], ids=["counts-every-phase-and-cluster", "a-failed-phase-is-named-not-counted", "nothing-run-nothing-counted"])
def test_totals_line(records, totals):
    lines = views.summary_lines(PHASES, records, ["target"], mode="run", check_mode=True)
    assert lines[-1] == totals


def test_preview_table_lists_counts_objects_and_what_other_phases_would_do():
    lines = views.summary_lines(PHASES, RECORDS, ["target"], mode="run", check_mode=True)
    preview = lines[lines.index("Preview of the plan (nothing was changed):") + 1:]
    assert [line.split()[:5] for line in preview[:5]] == [
        ["PHASE", "CLUSTER", "ADD", "CHANGE", "DESTROY"],
        ["crds", "target", "2", "0", "0"], ["apps", "target", "0", "1", "1"],
        ["ready", "target", "-", "-", "-"], ["seed", "target", "-", "-", "-"]]
    assert preview[3].endswith("would wait for 2 objects") and preview[4].endswith("would run: seed.sh")
    assert preview[5:11] == ["crds on target:", "  + CustomResourceDefinition gadgets.p4.example.com",
                             "  + Namespace p4-chk", "apps on target:",
                             "  ~ ConfigMap p4-chk/settings: data.colour, data.size", "  - ConfigMap p4-chk/old"]


def test_a_real_run_has_no_preview():
    lines = views.summary_lines(PHASES, RECORDS, ["target"], mode="run", check_mode=False)
    assert not any(line.startswith("Plan:") or line.startswith("Preview") for line in lines)


def test_many_objects_are_shown_up_to_a_limit():
    many = [{"action": "add", "object": f"ConfigMap ns/c{number}"} for number in range(25)]
    records = [{"phase": "crds", "host": "target", "result": "changed", "changes": many}]
    lines = views.summary_lines(PHASES[:1], records, ["target"], mode="run", check_mode=True)
    assert "  ... and 15 more (plan_report_json lists them all)" in lines
    assert lines[-1] == "Plan: 25 to add, 0 to change, 0 to destroy."


def test_json_report_carries_the_same_counts_and_objects_masked():
    secret = "p4-chk"  # a name that happens to be a secret value of the host: masked like the message
    entries = report_entries(PHASES, RECORDS, ["target"], "run", check_mode=True,
                             masks_for=lambda host: Masks({secret}))
    document = json.loads(json_report(entries, plan="site", mode="run", check_mode=True))
    assert document["changes"] == {"add": 2, "change": 1, "destroy": 1, "incomplete": [], "known_after_run": []}
    apps = document["results"][1]["changes"]
    assert (apps["add"], apps["change"], apps["destroy"], apps["counted"]) == (0, 1, 1, True)
    assert secret not in json.dumps(document)
    assert document["results"][2]["changes"] == {"add": 0, "change": 0, "destroy": 0, "counted": False,
                                                 "note": "would wait for 2 objects", "known_after_run": False,
                                                 "objects": []}


def test_json_report_of_a_real_run_has_no_changes():
    entries = report_entries(PHASES, RECORDS, ["target"], "run", check_mode=False)
    document = json.loads(json_report(entries, plan="site", mode="run", check_mode=False))
    assert "changes" not in document and all("changes" not in entry for entry in document["results"])


def test_plan_changes_totals_match_the_line():
    entries = views.summary_entries(PHASES, RECORDS, ["target"], "run", check_mode=True)
    assert plan_changes(entries).totals() == {"add": 2, "change": 1, "destroy": 1, "incomplete": [], "known_after_run": []}


def test_phases_whose_cluster_the_run_makes_are_known_after_the_run_not_counted():
    note = "not previewed: child's kubeconfig is known after the run (Secret ns/kc on host target: not there yet)"
    added = [{"action": "add", "object": "Namespace p4-chk"}]
    records = [{"phase": "crds", "host": "target", "result": "changed", "changes": added},
               {"phase": "apps", "host": "child", "result": "skipped", "preview": note, "kubeconfig_known_after_run": True}]
    phases = [dict(PHASES[0]), dict(PHASES[1], hosts=["child"])]
    lines = views.summary_lines(phases, records, ["target", "child"], mode="run", check_mode=True)
    assert lines[-1] == ("Plan: 1 to add, 0 to change, 0 to destroy. Known after the run (their cluster's kubeconfig "
                         "is made by the run): apps on child."), lines
    entries = report_entries(phases, records, ["target", "child"], "run", check_mode=True)
    document = json.loads(json_report(entries, plan="site", mode="run", check_mode=True))
    assert document["changes"]["known_after_run"] == ["apps on child"]
    assert document["results"][1]["changes"]["note"] == note
