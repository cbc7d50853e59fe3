"""How plans look: table, tree, Mermaid graph, run summary, failure message."""

from __future__ import annotations

import pytest
from phase_helpers import build, phase, plan

from ansible_collections.phasekit.kube.plugins.module_utils.planning import views

ECHO = {"argv": ["true"]}
DOCUMENTS = [
    phase("certs", cluster="ephemeral", description="all certificates", phases=[
        {"name": "ca", "executor": "command", "options": ECHO},
        {"name": "apiserver", "executor": "command", "options": ECHO, "cluster": "management"},
    ]),
    phase("workers", cluster="target", executor="command", options=ECHO),
    plan("deploy", "certs", "workers", description="the whole site"),
]


def test_list_table(tmp_path):
    assert views.list_lines(build(DOCUMENTS, tmp_path, name="deploy", skip=["certs/ca"])) == [
        "PHASE            CLUSTER     HOSTS             EXECUTOR  SOURCE  RUN",
        "certs            ephemeral   -                 (group)   -       yes",
        "certs/ca         ephemeral   ephemeral         command   -       no (skip)",
        "certs/apiserver  management  ephemeral,target  command   -       yes",
        "workers          target      target            command   -       yes",
    ]


def test_tree_table(tmp_path):
    assert views.tree_lines(build(DOCUMENTS, tmp_path, name="deploy", skip=["certs/ca"])) == [
        "plan deploy: the whole site",
        "  certs        (group)  @ephemeral     all certificates",
        "    ca         command  @ephemeral     [not run: skip]",
        "    apiserver  command  @management",
        "  workers      command  @target",
    ]


def test_list_columns_line_up(tmp_path):
    lines = views.list_lines(build(DOCUMENTS, tmp_path, name="deploy", skip=["certs/ca"]))
    assert lines[0].split() == ["PHASE", "CLUSTER", "HOSTS", "EXECUTOR", "SOURCE", "RUN"]
    assert [line.split()[0] for line in lines[1:]] == ["certs", "certs/ca", "certs/apiserver", "workers"]
    assert lines[2].endswith("no (skip)")
    assert "ephemeral,target" in lines[3]
    column = lines[0].index("CLUSTER")
    assert all(line[column - 2:column] == "  " and line[column] != " " for line in lines)


def test_tree_indents_children_and_says_what_does_not_run(tmp_path):
    lines = views.tree_lines(build(DOCUMENTS, tmp_path, name="deploy", only=["certs/apiserver", "workers"]))
    assert lines[0] == "plan deploy: the whole site"
    assert [line.split()[0] for line in lines[1:]] == ["certs", "ca", "apiserver", "workers"]
    assert lines[1].startswith("  certs ") and "[not run: not in only] all certificates" in lines[1]
    assert lines[2].startswith("    ca ") and "@ephemeral" in lines[2]
    assert lines[3].startswith("    apiserver ") and "@management" in lines[3]


def test_mermaid_boxes_children_and_orders_steps(tmp_path):
    lines = views.mermaid_lines(build(DOCUMENTS, tmp_path, name="deploy", skip=["certs/ca"]))
    assert lines[0] == "flowchart TD"
    assert '  subgraph p0_children["certs"]' in lines
    assert '    p1["certs/ca<br/>command @ ephemeral"]:::notrun' in lines
    assert '    p2["certs/apiserver<br/>command @ management"]' in lines
    assert lines[-2:] == ["  p1 --> p2", "  p2 --> p3"]


GRAPH = [
    phase("base", cluster="ephemeral", executor="command", options=ECHO),
    phase("mgmt", cluster="target", executor="command", options=ECHO),
    phase("storage", cluster="ephemeral", executor="command", options=ECHO,
          needs=[{"phase": "base", "wait": "same-cluster"}]),
    phase("addons", cluster="ephemeral", executor="command", options=ECHO, needs=["storage", "mgmt"]),
    plan("site", "base", "mgmt", "storage", "addons"),
]


def test_list_of_a_graph_says_what_each_phase_needs(tmp_path):
    assert views.list_lines(build(GRAPH, tmp_path, name="site")) == [
        "PHASE    CLUSTER    HOSTS      EXECUTOR  SOURCE  NEEDS                RUN",
        "base     ephemeral  ephemeral  command   -       -                    yes",
        "mgmt     target     target     command   -       -                    yes",
        "storage  ephemeral  ephemeral  command   -       base (same cluster)  yes",
        "addons   ephemeral  ephemeral  command   -       storage, mgmt        yes",
    ]


def test_tree_of_a_graph_says_what_each_phase_needs(tmp_path):
    lines = views.tree_lines(build(GRAPH, tmp_path, name="site"))
    assert lines[3].split()[0] == "storage" and lines[3].endswith("[needs base (same cluster)]")
    assert lines[4].endswith("[needs storage, mgmt]")


def test_mermaid_of_a_graph_draws_its_needs_not_the_plan_order(tmp_path):
    lines = views.mermaid_lines(build(GRAPH, tmp_path, name="site"))
    edges = [line for line in lines if "->" in line]
    assert edges == ["  p0 -. same cluster .-> p2", "  p2 --> p3", "  p1 --> p3"]


PHASES = [
    {"name": "certs", "executor": None, "hosts": []},
    {"name": "certs/ca", "executor": "command", "hosts": ["ephemeral"]},
    {"name": "spread", "executor": "apply", "hosts": ["ephemeral", "target"]},
    {"name": "late", "executor": "apply", "hosts": ["target", "elsewhere"]},
]


@pytest.mark.parametrize("records, mode, expected", [
    ([{"phase": "certs/ca", "host": "ephemeral", "result": "changed", "duration": 1.23},
      {"phase": "spread", "host": "ephemeral", "result": "ok", "duration": 75, "objects_changed": 0},
      {"phase": "spread", "host": "target", "result": "changed", "duration": 2, "objects_changed": 3}],
     "run",
     [["certs/ca", "ephemeral", "changed", "1.2s", "-", "127.0.0.1:6443"],
      ["spread", "ephemeral", "ok", "1m15s", "0", "127.0.0.1:6443"],
      ["spread", "target", "changed", "2.0s", "3", "[::1]:6444"],
      ["late", "target", "not", "run", "-", "-", "[::1]:6444"],
      ["late", "elsewhere", "not", "in", "play", "-", "-", "-"]]),
    ([{"phase": "spread", "host": "target", "result": "changed", "duration": 2, "objects_changed": 3},
      {"phase": "spread", "host": "ephemeral", "result": "ok", "duration": 1}],
     "status",
     [["certs/ca", "ephemeral", "not", "run", "-", "-", "127.0.0.1:6443"],
      ["spread", "ephemeral", "in", "sync", "1.0s", "-", "127.0.0.1:6443"],
      ["spread", "target", "differs", "2.0s", "3", "[::1]:6444"],
      ["late", "target", "not", "run", "-", "-", "[::1]:6444"],
      ["late", "elsewhere", "not", "in", "play", "-", "-", "-"]]),
    ([{"phase": "late", "host": "target", "result": "changed", "duration": 2, "objects_changed": 4},
      {"phase": "spread", "host": "target", "result": "ok", "duration": 1, "objects_changed": 0},
      {"phase": "spread", "host": "ephemeral", "result": "changed", "duration": 1, "objects_changed": 2},
      {"phase": "certs/ca", "host": "ephemeral", "result": "skipped", "duration": 0}],
     "destroy",
     [["late", "target", "destroyed", "2.0s", "4", "[::1]:6444"],
      ["late", "elsewhere", "not", "in", "play", "-", "-", "-"],
      ["spread", "ephemeral", "destroyed", "1.0s", "2", "127.0.0.1:6443"],
      ["spread", "target", "nothing", "left", "1.0s", "0", "[::1]:6444"],
      ["certs/ca", "ephemeral", "skipped", "0.0s", "-", "127.0.0.1:6443"]]),
], ids=["run-rows-per-phase-and-host-in-plan-order", "status-says-in-sync-or-differs",
        "destroy-rows-in-reverse-order"])
def test_summary(records, mode, expected):
    # elsewhere was never resolved: no server to show
    servers = {"ephemeral": "127.0.0.1:6443", "target": "[::1]:6444"}
    lines = views.summary_lines(PHASES, records, ["ephemeral", "target"], mode=mode, servers=servers)
    assert lines[0].split() == ["PHASE", "CLUSTER", "RESULT", "DURATION", "CHANGED", "SERVER"]
    table = lines[:lines.index("")] if "" in lines else lines  # a preview (status) adds its plan after a blank
    assert [line.split() for line in table[1:]] == expected


@pytest.mark.parametrize("mode, check_mode, kept, changed, unchanged", [
    ("destroy", False, False, "destroyed", "nothing left"),
    ("destroy", True, False, "would be destroyed", "nothing left"),
    ("destroy", False, True, "destroyed, namespace kept", "namespace kept"),
    ("destroy", True, True, "would be destroyed, namespace would be kept", "namespace would be kept"),
    ("status", False, False, "differs", "in sync"),
    ("run", True, False, "changed", "ok"),
], ids=["destroy-says-destroyed", "destroy-in-check-mode-says-would-be-destroyed",
        "destroy-says-a-namespace-was-kept", "destroy-in-check-mode-says-a-namespace-would-be-kept",
        "status-says-differs", "a-run-in-check-mode-keeps-its-words"])
def test_summary_words(mode, check_mode, kept, changed, unchanged):
    held = {"kept_namespaces": [{"name": "apps", "counts": {"Secret": 1}}]} if kept else {}
    records = [{"phase": "spread", "host": "target", "result": "changed", "duration": 1, "objects_changed": 2,
                **held},
               {"phase": "spread", "host": "ephemeral", "result": "ok", "duration": 1, **held}]
    entries = views.summary_entries(PHASES, records, ["ephemeral", "target"], mode=mode, check_mode=check_mode)
    labels = {(entry["phase"], entry["cluster"]): entry["label"] for entry in entries}
    assert labels[("spread", "target")] == changed and labels[("spread", "ephemeral")] == unchanged
    lines = views.summary_lines(PHASES, records, ["ephemeral", "target"], mode=mode, check_mode=check_mode)
    assert any(line.split()[:2] == ["spread", "target"] and f" {changed} " in line for line in lines)


@pytest.mark.parametrize("records, expected", [
    ([{"phase": "a", "host": "x", "result": "ok"}], None),
    ([{"phase": "a", "host": "x", "result": "ok"}, {"phase": "b", "host": "y", "result": "failed", "msg": "boom"}],
     "phase b failed on cluster y: boom"),
    ([{"phase": "b", "host": "y", "result": "failed", "msg": "boom"},
      {"phase": "b", "host": "z", "result": "failed", "msg": "bang"}],
     "phase b failed on cluster y: boom; also failed: b on z"),
], ids=["no-failure", "names-phase-and-cluster", "lists-other-failures"])
def test_failure_message(records, expected):
    assert views.plan_failure_message(records) == expected


@pytest.mark.parametrize("phases, expected", [
    ([{"name": "b", "origin": "phases/site.yaml document 2 (Phase b)"}],
     "phase b failed on cluster y: boom; phase b is defined in phases/site.yaml document 2"),
    ([{"name": "b", "origin": "plan document 1"}], "phase b failed on cluster y: boom; phase b is defined in plan document 1"),
    ([{"name": "other", "origin": "phases/site.yaml document 1 (Phase other)"}, {"name": "b"}],
     "phase b failed on cluster y: boom"),
], ids=["names-the-failed-phases-document", "an-inline-document-is-named-too", "without-an-origin-names-none"])
def test_failure_message_names_the_phases_document(phases, expected):
    records = [{"phase": "b", "host": "y", "result": "failed", "msg": "boom"}]
    assert views.plan_failure_message(records, phases) == expected


@pytest.mark.parametrize("record, line", [
    ({"phase": "apps", "host": "target", "result": "changed", "drift": ["ConfigMap demo/x: data.a"]},
     "apps on target: differs: ConfigMap demo/x: data.a"),
    ({"phase": "chart", "host": "target", "result": "changed"}, "chart on target: differs: would change"),
    ({"phase": "wait", "host": "a", "result": "not ready", "msg": "1 of 1 objects not ready"},
     "wait on a: not ready: 1 of 1 objects not ready"),
    ({"phase": "apps", "host": "b", "result": "failed", "msg": "cannot reach the API server"},
     "apps on b: could not be checked: cannot reach the API server"),
    ({"phase": "apps", "host": "c", "result": "changed", "drift": [f"ConfigMap n/{i}: absent" for i in range(12)]},
     "apps on c: differs: " + "; ".join(f"ConfigMap n/{i}: absent" for i in range(10)) + "; and 2 more objects"),
], ids=["apply-differs", "helm-would-change", "not-ready", "unreachable", "capped"])
def test_drift_lines(record, line):
    others = [{"phase": "ok", "host": "x", "result": "ok"},
              {"phase": "s", "host": "x", "result": "skipped", "msg": "commands do not run"}]
    assert views.drift_lines([record, *others]) == [line]


@pytest.mark.parametrize("fail_on_drift, mode, check_mode, applies", [
    (True, "status", False, True),
    (True, "run", True, True),
    (True, "run", False, False),
    (True, "validate", False, False),
    (True, "destroy", True, False),
    (False, "status", False, False),
], ids=["status-is-judged", "a-run-in-check-mode-is-judged", "a-run-that-writes-is-not", "validate-is-not",
        "destroy-is-not", "not-asked-for-judges-nothing"])
def test_drift_gate_applies(fail_on_drift, mode, check_mode, applies):
    assert views.drift_gate_applies(fail_on_drift, mode, check_mode) is applies


DIFFERS = {"phase": "apps", "host": "target", "result": "changed", "drift": ["ConfigMap demo/x: data.a"]}
VERDICT = "1 phase run(s) differ from the clusters, are not ready or could not be checked (listed above); " \
          "plan_fail_on_drift is set"


@pytest.mark.parametrize("records, plan_name, expected", [
    ([{"phase": "apps", "host": "target", "result": "ok"}], "site", []),
    ([DIFFERS], "site", ["", "apps on target: differs: ConfigMap demo/x: data.a", f"plan site: {VERDICT}"]),
    ([DIFFERS], "", ["", "apps on target: differs: ConfigMap demo/x: data.a", VERDICT]),
], ids=["nothing-drifted-says-nothing", "drift-listed-then-the-verdict-naming-the-plan", "no-plan-name-no-prefix"])
def test_drift_verdict(records, plan_name, expected):
    assert views.drift_verdict(records, plan_name) == expected


@pytest.mark.parametrize("messages, verdict, expected", [
    ([], [], []),
    ([""], [], []),
    (["", "rollout apps stopped"], [], ["", "rollout apps stopped"]),
    (["rollout apps stopped"], ["", "drift", "verdict"], ["", "rollout apps stopped", "", "drift", "verdict"]),
    ([], ["", "drift", "verdict"], ["", "drift", "verdict"]),
], ids=["nothing-ended-the-run", "empty-messages-left-out", "a-rollout-message-after-a-blank-line",
        "the-rollout-before-the-drift", "the-drift-alone"])
def test_summary_tail(messages, verdict, expected):
    assert views.summary_tail(messages, verdict) == expected


LAST = {"run": "r1", "action": "run", "result": "ok", "started": "2026-11-24T14:45:01Z", "by": "ci@runner"}


@pytest.mark.parametrize("same_bundle, suffix", [
    (True, ""),
    (False, " (bundle changed since)"),
    (None, " (bundle not compared)"),
], ids=["same-digest-says-nothing-more", "another-digest-says-the-bundle-changed",
        "no-digest-to-compare-does-not-claim-a-change"])
def test_last_run_label(same_bundle, suffix):
    assert views.last_run_label({**LAST, "same_bundle": same_bundle}) == \
        "ok 2026-11-24T14:45:01Z by ci@runner" + suffix


@pytest.mark.parametrize("phases, selected, rendered, expected", [
    (4, 4, [{"objects": [1, 2]}, {"objects": [3]}, {"objects": []}], "4 phases valid (4 selected); 3 bundles render to 3 objects"),
    (2, 1, [{"objects": None}, {"command": ["x"]}], "2 phases valid (1 selected); 2 bundles render to 0 objects"),
    (1, 0, [], "1 phases valid (0 selected); 0 bundles render to 0 objects"),
], ids=["objects-counted", "a-bundle-without-objects-counts-none", "nothing-rendered"])
def test_validate_says_what_it_checked_in_one_line(phases, selected, rendered, expected):
    assert views.validated_line(phases, selected, rendered) == expected


@pytest.mark.parametrize("graph_file, expected", [
    (None, ["tree", "", "flowchart TD"]),
    ("out/graph.md", ["tree", "", "Mermaid graph written to out/graph.md"]),
], ids=["the-graph-printed", "the-graph-written"])
def test_tree_view_prints_the_graph_or_where_it_went(graph_file, expected):
    assert views.tree_view(["tree"], ["flowchart TD"], graph_file) == expected


@pytest.mark.parametrize("files, expected", [
    (None, ["---", "kind: A"]),
    (["a.yaml", "b.yaml"], ["Rendered bundles written to 2 file(s) in out"]),
], ids=["the-yaml-printed", "the-files-written"])
def test_render_view_prints_the_yaml_or_where_it_went(files, expected):
    assert views.render_view("---\nkind: A\n", files, "out") == expected


def test_rollout_view_says_when_nothing_rolls_out():
    assert (views.rollout_view([]), views.rollout_view(["b1"])) == (["no phase rolls out in batches"], ["b1"])
