"""The runner on a plan graph (issue #41): what runs where, in what order, and why the rest never started."""

from __future__ import annotations

import threading
import time

import pytest
from phase_helpers import build, run_entry
from phase_helpers import phase as phase_document
from phase_helpers import plan as plan_doc

from ansible_collections.phasekit.kube.plugins.action.run_phases import run_order
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import (
    ALL_CLUSTERS, SAME_CLUSTER, GraphEntry, Need, build_graph)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import Rollout, RolloutOf
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import (
    GraphRun, LiveProgress, Outcome, RolloutRun, run_phases)

AB = ("a", "b")


def phase_doc(name, **spec):
    return phase_document(name, cluster="management", executor="apply", source=[], **spec)


class Script:
    """HostWork that keeps (phase, host, start, end) and answers from a table of (phase, host) -> Outcome."""

    def __init__(self, answers=None, delays=None):
        self.answers, self.delays = answers or {}, delays or {}
        self.calls: dict = {}
        self.lock = threading.Lock()

    def __call__(self, planned, context):
        key = (planned.name, context.host)
        began = time.monotonic()
        time.sleep(self.delays.get(key, self.delays.get(planned.name, 0.0)))
        with self.lock:
            self.calls[key] = (began, time.monotonic())
        return self.answers.get(key, Outcome(changed=True))


def graph_plan(*phases):
    """(name, hosts, needs) -> the run entries and the graph; a need is a name (all clusters) or (name, wait)."""
    entries, graph_entries = [], []
    for position, (name, hosts, needs) in enumerate(phases, start=1):
        entries.append(run_entry(name, "command", hosts))
        graph_entries.append(GraphEntry(name=name, full_name=name, entry=position, hosts=tuple(hosts),
                                        needs=tuple(Need(*need) if isinstance(need, tuple) else Need(need)
                                                    for need in needs)))
    problems = Problems()
    graph = build_graph(graph_entries, problems)
    assert not problems.messages
    return entries, graph


def run(phases, work, *, keep_going=False, phase_concurrency=0, concurrency=8, in_play=AB + ("m",)):
    entries, graph = graph_plan(*phases)
    return run_phases(entries, work, hosts_in_play=list(in_play), concurrency=concurrency,
                      graph=GraphRun(graph, keep_going=keep_going, phase_concurrency=phase_concurrency))


def test_same_cluster_need_releases_each_cluster_on_its_own():
    work = Script(delays={("base", "b"): 0.3, "base": 0.01})
    run([("base", AB, []), ("next", AB, [("base", SAME_CLUSTER)])], work)
    assert work.calls[("next", "a")][0] >= work.calls[("base", "a")][1]
    assert work.calls[("next", "a")][1] < work.calls[("base", "b")][1]   # a did not wait for b


def test_all_clusters_need_waits_for_every_cluster():
    work = Script(delays={("base", "b"): 0.2})
    run([("base", AB, []), ("next", AB, [("base", ALL_CLUSTERS)])], work)
    assert min(work.calls[("next", host)][0] for host in AB) >= work.calls[("base", "b")][1]


def test_independent_phases_run_at_the_same_time():
    work = Script(delays={"one": 0.2, "two": 0.2})
    # a plan is a graph once any phase has needs ("last" here): "one" and "two" need nothing
    run([("one", AB, []), ("two", ("m",), []), ("last", ("m",), ["one"])], work)
    assert work.calls[("two", "m")][0] < work.calls[("one", "a")][1]


def test_phase_concurrency_bounds_the_phases_at_once():
    work = Script(delays={"one": 0.1, "two": 0.1})
    run([("one", ("a",), []), ("two", ("m",), []), ("last", ("m",), ["one"])], work, phase_concurrency=1)
    assert work.calls[("two", "m")][0] >= work.calls[("one", "a")][1]


@pytest.mark.parametrize("keep_going, ran, never", [
    (False, {("base", "a"), ("base", "b"), ("side", "m")},
     {("next", "a"): "needs base, which failed on a",
      ("next", "b"): "stopped after a failure (phase base failed on a); plan_keep_going is false",
      ("after", "m"): "stopped after a failure (phase base failed on a); plan_keep_going is false"}),
    (True, {("base", "a"), ("base", "b"), ("side", "m"), ("next", "b"), ("after", "m")},
     {("next", "a"): "needs base, which failed on a"}),
], ids=["without-keep-going-nothing-new-starts", "keep-going-runs-what-does-not-need-the-failure"])
def test_a_failure_blocks_its_dependents(keep_going, ran, never):
    # base ends on b after it failed on a: otherwise next may start on b first, and the rows would race
    work = Script(answers={("base", "a"): Outcome(failed=True, msg="no")}, delays={"side": 0.1, ("base", "b"): 0.05})
    report = run([("base", AB, []), ("side", ("m",), []), ("next", AB, [("base", SAME_CLUSTER)]),
                  ("after", ("m",), ["side"])], work, keep_going=keep_going)
    assert set(work.calls) == ran
    assert report.never_started == never
    assert report.stopped_by == "base"


def test_records_keep_plan_order_whatever_order_pairs_ended_in():
    work = Script(delays={("one", "a"): 0.15})
    report = run([("one", AB, []), ("two", ("m",), []), ("last", ("m",), ["two"])], work)
    assert [(record.phase, record.host) for record in report.records] == [
        ("one", "a"), ("one", "b"), ("two", "m"), ("last", "m")]


def test_hosts_out_of_play_satisfy_needs_without_a_record():
    work = Script()
    report = run([("base", AB, []), ("next", AB, [("base", SAME_CLUSTER)])], work, in_play=("a",))
    assert set(work.calls) == {("base", "a"), ("next", "a")}
    assert {record.host for record in report.records} == {"a"} and not report.never_started


def test_a_plan_without_graph_keeps_the_barrier():
    work = Script(delays={("one", "b"): 0.1})
    entries, _graph = graph_plan(("one", AB, []), ("two", AB, []))
    run_phases(entries, work, hosts_in_play=list(AB), concurrency=4)
    assert min(work.calls[("two", host)][0] for host in AB) >= work.calls[("one", "b")][1]


def test_two_hosts_of_one_cluster_are_refused_before_either_writes_however_they_become_ready():
    """``app`` needs ``base`` on the same cluster, and base ends on a long before b: a's pair of app is ready alone.
    The guard still sees app's hosts together (a and b reach one cluster) and refuses both before either runs."""
    guarded = []

    def guard(entry, hosts):
        guarded.append((entry.name, tuple(hosts)))
        return "a and b are one cluster" if entry.name == "app" and {"a", "b"} <= set(hosts) else None

    entries, graph = graph_plan(("base", AB, []), ("app", AB, [("base", SAME_CLUSTER)]), ("side", ("m",), []))
    work = Script(delays={("base", "b"): 0.2})
    lines = []
    report = run_phases(entries, work, hosts_in_play=list(AB) + ["m"], concurrency=8, guard=guard,
                        graph=GraphRun(graph, keep_going=True),
                        progress=lambda phase, _barrier, records, _seconds: lines.append(
                            (phase.name, sorted(record.host for record in records))))
    assert not [key for key in work.calls if key[0] == "app"], work.calls
    assert [line for line in lines if line[0] == "app"] == [("app", ["a", "b"])]    # one line, once
    assert {(record.host, record.result) for record in report.records if record.phase == "app"} == {
        ("a", "failed"), ("b", "failed")}
    assert [hosts for name, hosts in guarded if name == "app"] == [("a", "b")]    # asked once, for both


ROLLED = ("a", "b", "m")


def rollout_plan(budget: float = 0.0, others=(("apps", ROLLED, (Need("cni", SAME_CLUSTER),)),)):
    """A rollout ``cni`` in batches [1, 100%] over a, b and m (one child, ``cni/apply``), then ``others``:
    (name, hosts, needs) each. The run entries and the graph."""
    rollout = RolloutOf("cni", Rollout((1, "100%"), budget, 0.0), list(ROLLED)).to_dict()
    entries = [run_entry("cni", None, (), rollout=rollout), run_entry("cni/apply", "command", ROLLED, rollout=rollout),
               *(run_entry(name, "command", hosts) for name, hosts, _needs in others)]
    graph = build_graph([GraphEntry("cni", "cni", 1, (), (), True, "cni"),
                         GraphEntry("cni/apply", "cni/apply", 1, ROLLED, (), False, "cni"),
                         *(GraphEntry(name, name, position, hosts, needs)
                           for position, (name, hosts, needs) in enumerate(others, start=2))], Problems())
    return entries, graph


def test_a_rollout_is_one_node_run_batch_by_batch_before_its_dependents():
    entries, graph = rollout_plan()
    work = Script(delays={"cni/apply": 0.05})
    report = run_phases(entries, work, hosts_in_play=list(ROLLED), concurrency=4, graph=GraphRun(graph))
    assert [batch.hosts for batch in report.batches] == [["a"], ["b", "m"]]
    for host in ROLLED:
        assert work.calls[("apps", host)][0] >= work.calls[("cni/apply", host)][1]
    assert {(record.phase, record.host) for record in report.records} == {
        (name, host) for name in ("cni/apply", "apps") for host in ROLLED}


def test_a_rollout_releases_each_batch_to_its_dependents_while_later_batches_run():
    entries, graph = rollout_plan()
    work = Script(delays={("cni/apply", "b"): 0.3, ("cni/apply", "m"): 0.3})
    run_phases(entries, work, hosts_in_play=list(ROLLED), concurrency=4, graph=GraphRun(graph))
    assert work.calls[("apps", "a")][0] < work.calls[("cni/apply", "b")][1]   # batch 1 (a) went on during batch 2


def test_a_failure_within_the_rollout_budget_blocks_only_that_cluster():
    entries, graph = rollout_plan(budget=100.0)
    work = Script(answers={("cni/apply", "a"): Outcome(failed=True, msg="broken")})
    report = run_phases(entries, work, hosts_in_play=list(ROLLED), concurrency=4, graph=GraphRun(graph))
    assert {host for phase, host in work.calls if phase == "apps"} == {"b", "m"}
    assert not report.stopped_by


@pytest.mark.parametrize("keep_going, second_batch", [(False, False), (True, True)],
                         ids=["a-failure-elsewhere-starts-no-more-batches", "keep-going-runs-every-batch"])
def test_a_running_rollout_starts_no_batch_after_a_failure_elsewhere(keep_going, second_batch):
    # a graph (last needs other; cni and other need nothing): other fails on m while batch 1 (a) runs
    entries, graph = rollout_plan(others=(("other", ("m",), ()), ("last", ("m",), (Need("other"),))))
    work = Script(answers={("other", "m"): Outcome(failed=True, msg="no")}, delays={("cni/apply", "a"): 0.2})
    report = run_phases(entries, work, hosts_in_play=list(ROLLED), concurrency=4,
                        graph=GraphRun(graph, keep_going=keep_going))
    assert (("cni/apply", "b") in work.calls) is second_batch
    assert [batch.ran for batch in report.batches] == [True, second_batch]


def test_live_lines_of_a_slow_batch_count_only_its_clusters_while_other_phases_run():
    # batch 2 (b, m) outlasts the live lines' delay while apps runs on a (released by batch 1) on the same pool:
    # each line counts the batch's clusters, never a cluster of another phase (once a KeyError on the rollout's thread)
    entries, graph = rollout_plan()
    lines = []
    work = Script(delays={("cni/apply", "b"): 0.4, ("cni/apply", "m"): 0.4, ("apps", "a"): 0.6})
    report = run_phases(entries, work, hosts_in_play=list(ROLLED), concurrency=4, graph=GraphRun(graph),
                        live=LiveProgress(show=lambda planned, _barrier, count: lines.append((planned.name, count)),
                                          after=0.1, every=0.1))
    assert {(record.phase, record.host) for record in report.records} == {
        (name, host) for name in ("cni/apply", "apps") for host in ROLLED}
    batch_two = [count for name, count in lines if name == "cni/apply" and count.clusters == 2]
    assert batch_two and all(count.slowest in ("b", "m") for count in batch_two), lines


def test_a_rollout_whose_thread_raises_fails_the_clusters_it_did_not_reach():
    entries, graph = rollout_plan()

    def batch_done(batch):
        if batch.number == 1:
            raise RuntimeError("boom")

    work = Script()
    report = run_phases(entries, work, hosts_in_play=list(ROLLED), concurrency=4, graph=GraphRun(graph),
                        rollouts=RolloutRun(batch_done=batch_done))
    failed = {(record.phase, record.host): record.msg for record in report.records if record.result == "failed"}
    assert set(failed) == {("cni/apply", "b"), ("cni/apply", "m")}
    assert all("unexpected error in rollout cni (RuntimeError): boom" in msg for msg in failed.values())
    assert report.stopped_by == "cni/apply"
    assert ("apps", "b") not in work.calls and ("apps", "m") not in work.calls
    assert report.never_started[("apps", "b")] == "needs cni, which failed on b"


@pytest.mark.parametrize("mode, check_mode, expected, by_graph", [
    ("run", False, ["ns", "app", "cni"], True),
    ("run", True, ["ns", "app", "cni"], False),
    ("validate", False, ["ns", "app", "cni"], False),
    ("status", False, ["ns", "app", "cni"], False),
    ("destroy", False, ["cni", "app", "ns"], False),
], ids=["a-run-goes-by-the-graph", "check-mode-is-a-line-in-graph-order", "validate-is-a-line-in-graph-order",
        "status-is-a-line-in-graph-order", "destroy-is-reverse-graph-order"])
def test_run_order_of_a_graph_plan(tmp_path, mode, check_mode, expected, by_graph):
    documents = [phase_doc("cni", needs=["app"]), phase_doc("ns"), phase_doc("app", needs=["ns"]),
                 plan_doc("site", "cni", "ns", "app")]
    built = build(documents, tmp_path)
    phases, graph = run_order(built, [planned.run_entry() for planned in built.selected],
                              {"mode": mode, "keep_going": False, "phase_concurrency": 0, "phases": None}, check_mode)
    assert [entry.name for entry in phases] == expected
    assert (graph is not None) == by_graph


def test_run_order_of_a_line_is_the_plan_order(tmp_path):
    built = build([phase_doc("b"), phase_doc("a"), plan_doc("site", "b", "a")], tmp_path)
    phases, graph = run_order(built, [planned.run_entry() for planned in built.selected],
                              {"mode": "run", "keep_going": False, "phase_concurrency": 0, "phases": None}, False)
    assert [entry.name for entry in phases] == ["b", "a"] and graph is None


def test_a_negative_phase_concurrency_is_refused(tmp_path):
    built = build([phase_doc("a"), plan_doc("site", "a")], tmp_path)
    with pytest.raises(PhasekitError, match=r"phase_concurrency \(plan_phase_concurrency\) must be 0 \(no bound\) or"):
        run_order(built, [], {"mode": "run", "keep_going": False, "phase_concurrency": -1, "phases": None}, False)


def test_a_step_of_a_graph_plan_is_a_line_in_graph_order(tmp_path):
    built = build([phase_doc("b", needs=["a"]), phase_doc("a"), plan_doc("site", "b", "a")], tmp_path)
    phases, graph = run_order(built, [planned.run_entry() for planned in built.selected],
                              {"mode": "run", "keep_going": False, "phase_concurrency": 0, "phases": ["a", "b"]}, False)
    assert [entry.name for entry in phases] == ["a", "b"] and graph is None
