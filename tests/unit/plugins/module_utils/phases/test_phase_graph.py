"""Plans as graphs (issue #41): the needs contract, the graph's rules and the scheduler's, one row per rule."""

from __future__ import annotations

import pytest
from phase_helpers import build, phase, plan

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import (
    ALL_CLUSTERS, SAME_CLUSTER, TASKS_IN_GRAPH, Edge, GraphEntry, Need, build_graph, graph_entries, parse_needs)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems
from ansible_collections.phasekit.kube.plugins.module_utils.running.schedule import FAILED, OK, SKIPPED, Scheduler

AB = ("a", "b")


def entry(name, hosts=AB, needs=(), *, position=None, full_name=None, root=True, rollout=None, reason=None):
    """A run list entry; a need is a name (all clusters) or (name, wait)."""
    parsed = tuple(Need(*need, where=f"doc {name} field spec.needs") if isinstance(need, tuple)
                   else Need(need, ALL_CLUSTERS, f"doc {name} field spec.needs") for need in needs)
    return GraphEntry(name=name, full_name=full_name or name.partition("#")[0], entry=position or 0, hosts=hosts,
                      needs=parsed, root=root, rollout=rollout, reason=reason, where=f"doc {name} field spec.needs")


def numbered(*entries):
    """Entries each from its own plan entry, unless one says otherwise."""
    return [e if e.entry else GraphEntry(**{**e.__dict__, "entry": index + 1}) for index, e in enumerate(entries)]


def graph_of(*entries):
    problems = Problems()
    graph = build_graph(numbered(*entries), problems)
    return graph, problems.messages


# --- the contract: spec.needs

@pytest.mark.parametrize("value, expected, problem", [
    (None, (), None),
    (["base"], (Need("base", ALL_CLUSTERS, "needs[0]"),), None),
    ([{"phase": "base", "wait": "same-cluster"}], (Need("base", SAME_CLUSTER, "needs[0]"),), None),
    ([{"phase": "base"}], (Need("base", ALL_CLUSTERS, "needs[0]"),), None),
    ("base", (), "needs: expected a list of phase names or {phase, wait} mappings, got a string"),
    ([3], (), "needs[0]: expected a phase name or a mapping"),
    ([{"phase": "base", "wait": "each"}], (), "needs[0].wait: expected same-cluster or all-clusters, got 'each'"),
    ([{"wait": "same-cluster"}], (), "needs[0].phase: expected a phase's full name, got nothing"),
    ([{"phase": "base", True: "same-cluster"}], (Need("base", ALL_CLUSTERS, "needs[0]"),),
     "needs[0].True: unknown field"),
], ids=[
    "no-needs",
    "a-name-waits-for-all-clusters",
    "same-cluster-is-written-out",
    "a-mapping-without-wait-waits-for-all-clusters",
    "not-a-list-is-refused",
    "an-entry-neither-name-nor-mapping-is-refused",
    "an-unknown-wait-is-refused",
    "a-mapping-without-phase-is-refused",
    "yaml-on-key-read-as-true-is-an-unknown-field",
])
def test_parse_needs(value, expected, problem):
    problems = Problems()
    assert parse_needs(value, lambda below: f"needs{below}", problems) == expected
    if problem is None:
        assert not problems
    else:
        assert any(message.startswith(problem) for message in problems.messages), problems.messages


# --- the graph

LINE = [entry("ns"), entry("crds"), entry("cni")]


@pytest.mark.parametrize("entries, edges, order", [
    (LINE, {"ns": [], "crds": [Edge("ns", ALL_CLUSTERS)], "cni": [Edge("crds", ALL_CLUSTERS)]}, ["ns", "crds", "cni"]),
    ([entry("base"), entry("cni", needs=["base"]), entry("storage", needs=["base"])],
     {"base": [], "cni": [Edge("base", ALL_CLUSTERS)], "storage": [Edge("base", ALL_CLUSTERS)]},
     ["base", "cni", "storage"]),
    ([entry("late", needs=["early"]), entry("early")],
     {"late": [Edge("early", ALL_CLUSTERS)], "early": []}, ["early", "late"]),
    ([entry("base"), entry("mon", needs=[("base", SAME_CLUSTER)])],
     {"base": [], "mon": [Edge("base", SAME_CLUSTER)]}, ["base", "mon"]),
    ([entry("mgmt", hosts=("m",)), entry("addons", needs=["mgmt"])],
     {"mgmt": [], "addons": [Edge("mgmt", ALL_CLUSTERS)]}, ["mgmt", "addons"]),
    ([entry("check#1", position=1), entry("apply", needs=["check#1"], position=2),
      entry("check#2", position=3, needs=["apply"])],
     {"check#1": [], "apply": [Edge("check#1", ALL_CLUSTERS)], "check#2": [Edge("apply", ALL_CLUSTERS)]},
     ["check#1", "apply", "check#2"]),
    ([entry("base"), entry("addons", hosts=(), position=2, needs=["base"]),
      entry("addons/cni", position=2, root=False), entry("addons/lb", position=2, root=False)],
     {"base": [], "addons/cni": [Edge("base", ALL_CLUSTERS)], "addons/lb": [Edge("addons/cni", ALL_CLUSTERS)]},
     ["base", "addons/cni", "addons/lb"]),
    ([entry("certs", hosts=(), position=1), entry("certs/ca", position=1, root=False),
      entry("certs/leaf", position=1, root=False), entry("app", needs=["certs"], position=2)],
     {"certs/ca": [], "certs/leaf": [Edge("certs/ca", ALL_CLUSTERS)],
      "app": [Edge("certs/ca", ALL_CLUSTERS), Edge("certs/leaf", ALL_CLUSTERS)]},
     ["certs/ca", "certs/leaf", "app"]),
    ([entry("roll", rollout="roll", position=1), entry("roll/x", rollout="roll", position=1, root=False),
      entry("after", needs=[("roll", SAME_CLUSTER)], position=2)],
     {"roll": [], "after": [Edge("roll", SAME_CLUSTER)]}, ["roll", "after"]),
    ([entry("old", reason="before start_at"), entry("new", needs=["old"])], {"new": []}, ["new"]),
    ([entry("ns"), entry("crds", reason="skip"), entry("cni")],
     {"ns": [], "cni": [Edge("ns", ALL_CLUSTERS)]}, ["ns", "cni"]),
], ids=[
    "no-needs-is-todays-line",
    "needs-are-the-only-predecessors",
    "list-position-orders-output-not-runs",
    "same-cluster-edge-kept",
    "cross-group-need",
    "repeated-entries-named-by-run",
    "entry-descendants-run-in-line-after-entry-needs",
    "need-on-a-group-waits-for-its-subtree",
    "rollout-subtree-is-one-node",
    "need-before-start-at-is-satisfied",
    "line-over-the-selected-entries",
])
def test_graph(entries, edges, order):
    graph, problems = graph_of(*entries)
    assert problems == []
    assert {name: node.needs for name, node in graph.nodes.items()} == edges
    assert graph.order == order
    assert graph.destroy_order() == list(reversed(order))


@pytest.mark.parametrize("entries, problem", [
    ([entry("a", needs=["c"]), entry("b", needs=["a"]), entry("c", needs=["b"])],
     "doc a field spec.needs: the phases' needs make a cycle: a -> b -> c -> a (needs in doc a field spec.needs; "
     "doc b field spec.needs; doc c field spec.needs)"),
    ([entry("a", needs=["a"])], "the phases' needs make a cycle: a -> a"),
    ([entry("a"), entry("b", needs=["bse"])], "doc b field spec.needs: phase b needs 'bse', which this plan does "
                                              "not run"),
    ([entry("base", reason="skip"), entry("b", needs=["base"])],
     "doc b field spec.needs: phase b needs base, which the selection leaves out (base: skip)"),
    ([entry("base", reason="not in only"), entry("b", needs=["base"])],
     "phase b needs base, which the selection leaves out (base: not in only)"),
    ([entry("base", hosts=("a",)), entry("b", needs=[("base", SAME_CLUSTER)])],
     "phase b waits for base on the same cluster, but base does not run on b: use wait: all-clusters"),
    ([entry("g", hosts=(), position=1), entry("g/x", position=1, root=False, needs=["base"]), entry("base")],
     "phase g/x is run as part of a plan entry that names an ancestor of it"),
], ids=[
    "cycle-named-with-path-and-documents",
    "self-need-is-a-cycle",
    "unknown-need-named-with-document-and-field",
    "need-removed-by-skip-is-refused",
    "need-removed-by-only-is-refused",
    "same-cluster-need-must-run-on-the-dependents-clusters",
    "needs-on-a-nested-phase-are-refused",
])
def test_graph_refused(entries, problem):
    _graph, problems = graph_of(*entries)
    assert any(problem in message for message in problems), problems


# --- the scheduler

def simulate(entries, failed=(), *, phases=None, clusters=None, keep_going=False):
    """Run the scheduler to its end, every pair started in one call ending before the next; the waves started."""
    graph, problems = graph_of(*entries)
    assert problems == []
    scheduler = Scheduler(graph, phase_concurrency=phases, cluster_concurrency=clusters, keep_going=keep_going)
    waves = []
    while True:
        wave = scheduler.ready()
        if not wave:
            break
        waves.append(wave)
        for name, host in wave:
            for each in (host if isinstance(host, tuple) else (host,)):
                scheduler.ended(name, each, FAILED if (name, each) in failed else OK)
    assert scheduler.done()
    return waves, scheduler


PIPELINE = [entry("base"), entry("mon", needs=[("base", SAME_CLUSTER)])]
FAN = [entry("base"), entry("cni", needs=["base"]), entry("lb", needs=["base"])]


@pytest.mark.parametrize("entries, failed, options, waves", [
    (LINE, (), {}, [[("ns", "a"), ("ns", "b")], [("crds", "a"), ("crds", "b")], [("cni", "a"), ("cni", "b")]]),
    (FAN, (), {}, [[("base", "a"), ("base", "b")], [("cni", "a"), ("cni", "b"), ("lb", "a"), ("lb", "b")]]),
    (FAN, (), {"phases": 1}, [[("base", "a"), ("base", "b")], [("cni", "a"), ("cni", "b")], [("lb", "a"), ("lb", "b")]]),
    (FAN, (), {"clusters": 3}, [[("base", "a"), ("base", "b")], [("cni", "a"), ("cni", "b"), ("lb", "a")],
                                [("lb", "b")]]),
    ([entry("m", hosts=("m",)), entry("w", needs=["m"])], (), {}, [[("m", "m")], [("w", "a"), ("w", "b")]]),
    ([entry("roll", rollout="roll"), entry("after", needs=[("roll", SAME_CLUSTER)])], (), {},
     [[("roll", AB)], [("after", "a"), ("after", "b")]]),
], ids=[
    "line-runs-in-todays-order-with-a-barrier-per-phase",
    "independent-phases-run-at-the-same-time",
    "phase-concurrency-bounds-running-phases",
    "cluster-concurrency-bounds-running-pairs",
    "cross-group-need-waits-for-all-its-clusters",
    "rollout-handed-out-once-for-its-clusters",
])
def test_schedule(entries, failed, options, waves):
    assert simulate(entries, failed, **options)[0] == waves


def test_same_cluster_need_releases_each_cluster_as_it_ends():
    graph, _problems = graph_of(*PIPELINE)
    scheduler = Scheduler(graph)
    assert scheduler.ready() == [("base", "a"), ("base", "b")]
    scheduler.ended("base", "b", OK)
    assert scheduler.ready() == [("mon", "b")]       # a is still running base: b goes on alone
    scheduler.ended("base", "a", SKIPPED)            # skipped satisfies a need
    assert scheduler.ready() == [("mon", "a")]


def test_a_same_cluster_dependent_on_fewer_clusters_ignores_the_others():
    graph, _problems = graph_of(entry("base"), entry("one", hosts=("a",), needs=[("base", SAME_CLUSTER)]))
    scheduler = Scheduler(graph)
    assert scheduler.ready() == [("base", "a"), ("base", "b")]
    scheduler.ended("base", "b", OK)                 # b is not one's cluster
    scheduler.ended("base", "a", OK)
    assert scheduler.ready() == [("one", "a")]


def test_all_clusters_need_waits_for_the_last_cluster():
    graph, _problems = graph_of(*FAN)
    scheduler = Scheduler(graph)
    scheduler.ready()
    scheduler.ended("base", "a", OK)
    assert scheduler.ready() == []
    scheduler.ended("base", "b", OK)
    assert [pair[0] for pair in scheduler.ready()] == ["cni", "cni", "lb", "lb"]


def test_rollout_batches_release_same_cluster_dependents():
    graph, _problems = graph_of(entry("roll", rollout="roll"), entry("after", needs=[("roll", SAME_CLUSTER)]))
    scheduler = Scheduler(graph)
    assert scheduler.ready() == [("roll", AB)]
    scheduler.ended("roll", "a", OK)                 # batch 1 ended: its cluster goes on
    assert scheduler.ready() == [("after", "a")]
    scheduler.ended("roll", "b", OK)
    assert scheduler.ready() == [("after", "b")]


def test_a_failure_the_rollout_budget_tolerates_blocks_only_that_clusters_dependents():
    graph, _problems = graph_of(entry("roll", rollout="roll"), entry("after", needs=[("roll", SAME_CLUSTER)]),
                                entry("other"))
    scheduler = Scheduler(graph)
    assert scheduler.ready() == [("roll", AB), ("other", "a"), ("other", "b")]
    scheduler.ended("roll", "a", FAILED, tolerated=True)     # batch 1 failed on a, within the budget
    assert scheduler.ready() == []
    assert scheduler.never_started("after", "a") == "needs roll, which failed on a"
    scheduler.ended("roll", "b", OK)
    assert scheduler.ready() == [("after", "b")]              # not stopped: the run goes on elsewhere
    assert scheduler.failure is None


def test_a_failure_without_tolerance_stops_what_has_not_started():
    graph, _problems = graph_of(entry("roll", rollout="roll"), entry("after", needs=[("roll", SAME_CLUSTER)]))
    scheduler = Scheduler(graph)
    scheduler.ready()
    scheduler.ended("roll", "a", FAILED)
    scheduler.ended("roll", "b", OK)
    assert scheduler.ready() == []
    assert scheduler.never_started("after", "b").startswith("stopped after a failure (phase roll failed on a)")


def test_rollout_waits_until_each_of_its_clusters_may_start_or_never_will():
    graph, _problems = graph_of(entry("base"), entry("roll", rollout="roll", needs=[("base", SAME_CLUSTER)]))
    scheduler = Scheduler(graph, keep_going=True)
    scheduler.ready()
    scheduler.ended("base", "b", OK)
    assert scheduler.ready() == []                   # a has not ended base: the rollout is not split
    scheduler.ended("base", "a", FAILED)
    assert scheduler.ready() == [("roll", ("b",))]   # a never will: the rollout runs on b alone
    assert scheduler.never_started("roll", "a") == "needs base, which failed on a"


BRANCHES = [entry("base"), entry("mon", needs=[("base", SAME_CLUSTER)]), entry("other"),
            entry("late", needs=["other"])]


@pytest.mark.parametrize("entries, failed, keep_going, started, never", [
    (PIPELINE, {("base", "a")}, True, {("base", "a"), ("base", "b"), ("mon", "b")},
     {("mon", "a"): "needs base, which failed on a"}),
    (FAN, {("base", "a")}, True, {("base", "a"), ("base", "b")},
     {("cni", "b"): "needs base, which failed on a", ("lb", "a"): "needs base, which failed on a"}),
    ([entry("base"), entry("mid", needs=[("base", SAME_CLUSTER)]), entry("top", needs=["mid"])],
     {("base", "a")}, True, {("base", "a"), ("base", "b"), ("mid", "b")},
     {("mid", "a"): "needs base, which failed on a",
      ("top", "b"): "needs mid, which never started on a (needs base, which failed on a)"}),
    (BRANCHES, {("base", "a")}, True,
     {("base", "a"), ("base", "b"), ("other", "a"), ("other", "b"), ("mon", "b"), ("late", "a"), ("late", "b")},
     {("mon", "a"): "needs base, which failed on a"}),
    (BRANCHES, {("base", "a")}, False, {("base", "a"), ("base", "b"), ("other", "a"), ("other", "b")},
     {("mon", "a"): "needs base, which failed on a",
      ("mon", "b"): "stopped after a failure (phase base failed on a); plan_keep_going is false",
      ("late", "a"): "stopped after a failure (phase base failed on a); plan_keep_going is false"}),
], ids=[
    "same-cluster-failure-stops-dependents-on-that-cluster-only",
    "all-clusters-failure-stops-dependents-everywhere",
    "failure-propagates-down-the-graph",
    "keep-going-runs-independent-branches",
    "without-keep-going-nothing-new-starts",
])
def test_failure(entries, failed, keep_going, started, never):
    _waves, scheduler = simulate(entries, failed, keep_going=keep_going)
    assert scheduler.started == started
    for (name, host), reason in never.items():
        assert scheduler.never_started(name, host) == reason
    for name, host in started:
        assert scheduler.never_started(name, host) is None


def test_scheduler_is_deterministic():
    entries = [entry(f"p{index}", needs=["p0"] if index else ()) for index in range(6)]
    assert simulate(entries, phases=2, clusters=3)[0] == simulate(entries, phases=2, clusters=3)[0]


# --- the planner

def test_plan_without_needs_is_todays_run_order(tmp_path):
    apply = {"executor": "apply", "source": []}
    documents = [phase("ns", cluster="management", **apply),
                 phase("certs", cluster="workload", phases=[{"name": "ca", **apply}, {"name": "leaf", **apply}]),
                 phase("check", cluster="target", **apply),
                 plan("site", "check", "ns", "certs", "check")]
    planned = build(documents, tmp_path).selected
    graph = build_graph(graph_entries(planned), Problems())
    assert graph.is_line
    assert graph.order == [entry.name for entry in planned if entry.placement.hosts] == [
        "check#1", "ns", "certs/ca", "certs/leaf", "check#2"]
    assert graph.destroy_order() == ["check#2", "certs/leaf", "certs/ca", "ns", "check#1"]


def test_documents_without_a_plan_make_one_entry_per_top_level_phase(tmp_path):
    apply = {"executor": "apply", "source": []}
    documents = [phase("certs", cluster="workload", phases=[{"name": "ca", **apply}, {"name": "leaf", **apply}]),
                 phase("app", cluster="workload", **apply)]
    entries = graph_entries(build(documents, tmp_path).selected)
    assert [(entry.name, entry.entry, entry.root) for entry in entries] == [
        ("certs", 1, True), ("certs/ca", 1, False), ("certs/leaf", 1, False), ("app", 2, True)]


def test_planner_gives_a_graph_plan_its_graph(tmp_path):
    documents = [phase("ns", cluster="management", executor="apply", source=[]),
                 phase("cni", cluster="management", executor="apply", source=[], needs=["ns"]),
                 phase("dns", cluster="management", executor="apply", source=[]), plan("site", "ns", "cni", "dns")]
    built = build(documents, tmp_path)
    assert built.graph is not None and not built.graph.is_line
    assert built.graph.nodes["cni"].needs == [Edge("ns", ALL_CLUSTERS)]
    assert built.graph.nodes["dns"].needs == []


def test_planner_keeps_a_line_without_a_graph(tmp_path):
    documents = [phase("ns", cluster="management", executor="apply", source=[]),
                 phase("cni", cluster="management", executor="apply", source=[]), plan("site", "ns", "cni")]
    assert build(documents, tmp_path).graph is None


@pytest.mark.parametrize("needs, problems, where", [
    (["nss"], ["needs 'nss', which this plan does not run (did you mean 'ns'?)"], "(Phase cni) field spec.needs"),
    ([{"phase": "ns", "wait": "later"}], ["needs[0].wait: expected same-cluster or all-clusters"],
     "(Phase cni) field spec.needs"),
    (["ns"], [f"phase cni: {TASKS_IN_GRAPH}"], "(Phase cni) field spec.executor"),
], ids=["graph-problems-refused-before-anything-runs", "needs-shape-checked-like-every-field",
        "tasks-phase-in-a-graph-plan-refused"])
def test_planner_refuses_bad_graph_plans(tmp_path, needs, problems, where):
    cni = {"executor": "tasks", "source": "cni.yml"} if problems[0].startswith("phase cni") else \
        {"executor": "apply", "source": []}
    if "source" in cni and cni["source"] == "cni.yml":
        (tmp_path / "cni.yml").write_text("[]\n")
    documents = [phase("ns", cluster="management", executor="apply", source=[]),
                 phase("cni", cluster="management", needs=needs, **cni), plan("site", "ns", "cni")]
    with pytest.raises(PhasekitError) as raised:
        build(documents, tmp_path, runnable=True)
    message = str(raised.value)
    for problem in problems:
        assert problem in message
    assert where in message
