"""A sliced run by its graph (issue #42): all-clusters needs wait for every slice at the need's barrier, same-cluster
needs stay local, a failure anywhere is told at its node's barrier, and every slice settles every node once."""

from __future__ import annotations

import threading

import pytest
from phase_helpers import run_entry

from ansible_collections.phasekit.kube.plugins.module_utils.coordination.meeting import (
    MeetingFailed, SliceId, Verdict)
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.run_meeting import (
    BarrierWatch, BarrierWord, SliceMeet)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import (
    ALL_CLUSTERS, SAME_CLUSTER, GraphEntry, Need, build_graph)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import GraphRun, Outcome, run_phases
from ansible_collections.phasekit.kube.plugins.module_utils.running.schedule import (
    FAILED, OK, SlicedScheduler)

AB = ("a", "b")
STOPPED = "stopped after a failure ({}); plan_keep_going is false"


def sliced_graph(*phases):
    """(name, hosts here, needs) -> this slice's graph; a need is a name (all clusters) or (name, wait)."""
    entries = [GraphEntry(name=name, full_name=name, entry=position, hosts=tuple(hosts),
                          needs=tuple(Need(*need) if isinstance(need, tuple) else Need(need, ALL_CLUSTERS)
                                      for need in needs))
               for position, (name, hosts, needs) in enumerate(phases, start=1)]
    problems = Problems()
    graph = build_graph(entries, problems, sliced=True)
    assert not problems.messages
    return graph


FAN = [("base", AB, []), ("mon", AB, [("base", SAME_CLUSTER)]), ("apps", AB, ["base"])]


def end_all(scheduler, handed, failed=()):
    for name, host in handed:
        scheduler.ended(name, host, FAILED if (name, host) in failed else OK)


# --- the scheduler


def test_an_all_clusters_dependent_waits_for_every_slice_and_a_same_cluster_one_does_not():
    scheduler = SlicedScheduler(sliced_graph(*FAN))
    end_all(scheduler, scheduler.ready())
    assert scheduler.ready() == [("mon", "a"), ("mon", "b")]      # same-cluster: local
    assert scheduler.settled() == [("base", "")]
    assert scheduler.waiting() and not scheduler.done()
    scheduler.everywhere("base", True)                             # every slice arrived at base's barrier
    assert scheduler.ready() == [("apps", "a"), ("apps", "b")]


def test_a_node_with_none_of_its_clusters_here_is_settled_at_once_and_still_holds_its_dependents():
    scheduler = SlicedScheduler(sliced_graph(("far", (), []), ("near", AB, ["far"])))
    assert not scheduler.ready()
    assert scheduler.settled() == [("far", "")]
    scheduler.everywhere("far", True)
    assert scheduler.ready() == [("near", "a"), ("near", "b")]


def test_a_failure_here_is_told_with_host_names_only_and_its_dependents_settle_as_never_started():
    scheduler = SlicedScheduler(sliced_graph(*FAN))
    end_all(scheduler, scheduler.ready(), failed={("base", "a")})
    assert not scheduler.ready()                                  # without keep_going nothing new starts
    assert scheduler.settled() == [("base", "phase base failed on 1 cluster(s): a"),
                                   ("mon", "phase mon never started on 2 cluster(s): a, b"),
                                   ("apps", "phase apps never started on 2 cluster(s): a, b")]
    assert not scheduler.settled()                                 # each node once
    for name in ("base", "mon", "apps"):
        scheduler.everywhere(name, False, f"{name} stopped")
    assert scheduler.done()


@pytest.mark.parametrize("keep_going, ran, never", [
    (False, [], {("mon", "a"): "needs base, which did not end well everywhere (verdict)",
                 ("side", "a"): STOPPED.format("verdict")}),
    (True, [("side", "a")], {("mon", "a"): "needs base, which did not end well everywhere (verdict)"}),
], ids=["without-keep-going-nothing-new-starts", "keep-going-blocks-only-its-dependents"])
def test_another_slices_verdict_is_a_failure_of_the_node_everywhere(keep_going, ran, never):
    graph = sliced_graph(("base", ("a",), []), ("mon", ("a",), ["base"]), ("side", ("a",), ["gate"]),
                         ("gate", (), []))
    scheduler = SlicedScheduler(graph, keep_going=keep_going)
    end_all(scheduler, scheduler.ready())
    assert scheduler.settled() == [("base", ""), ("gate", "")]
    scheduler.everywhere("base", False, "verdict")                 # another slice stopped the run at base
    scheduler.everywhere("gate", True)
    assert scheduler.ready() == ran
    end_all(scheduler, ran)
    assert {name for name, _why in scheduler.settled()} == {"mon", "side"}
    scheduler.everywhere("mon", False, "verdict")
    scheduler.everywhere("side", not ran)
    assert scheduler.done()
    assert {(name, "a"): scheduler.never_started(name, "a") for name in ("mon", "side")
            if scheduler.never_started(name, "a")} == never


def test_a_halted_run_starts_nothing_and_ends_once_nothing_runs():
    scheduler = SlicedScheduler(sliced_graph(*FAN))
    handed = scheduler.ready()
    scheduler.halt("slice 2/3 is gone")
    end_all(scheduler, handed)
    assert not scheduler.ready() and scheduler.done() and not scheduler.waiting()
    assert scheduler.never_started("apps", "a") == "slice 2/3 is gone"


# --- the walk, with the other slices played by a table


class Slices:
    """A graph run's barriers (``NodeBarriers``): each node told settled here gets the other slices' word at once,
    a verdict from the ``verdicts`` table (node -> reason), or ``gone`` (the meeting fails at that node)."""

    def __init__(self, verdicts=None, gone=""):
        self.verdicts, self.gone = verdicts or {}, gone
        self.told: list = []
        self.closed = False
        self.answer = None

    def watch(self, told):
        self.answer = told
        return self

    def settled(self, node, why):
        self.told.append((node, why))
        if node == self.gone:
            self.answer("", MeetingFailed("slice 2/3 left the run"))
        elif why or node in self.verdicts:
            reason = self.verdicts.get(node, why)
            self.answer(node, BarrierWord(ok=False, reason=reason, elsewhere=node in self.verdicts))
        else:
            self.answer(node, BarrierWord(ok=True))

    def close(self):
        self.closed = True


def walk(slices, answers=None, keep_going=False):
    phases = [("base", AB, []), ("mon", AB, [("base", SAME_CLUSTER)]), ("apps", AB, ["base"]),
              ("far", (), []), ("last", AB, ["far", "apps"])]
    calls = []
    lock = threading.Lock()

    def work(planned, context):
        with lock:
            calls.append((planned.name, context.host))
        return (answers or {}).get((planned.name, context.host), Outcome(changed=True))
    entries = [run_entry(name, "command", hosts) for name, hosts, _needs in phases]
    report = run_phases(entries, work, hosts_in_play=list(AB), concurrency=4,
                        graph=GraphRun(sliced_graph(*phases), keep_going=keep_going), meet=slices)
    return report, {name for name, _host in calls}


def test_every_node_is_settled_once_and_all_clusters_needs_wait_for_the_slices_word():
    slices = Slices()
    report, ran = walk(slices)
    assert ran == {"base", "mon", "apps", "last"}
    assert sorted(slices.told) == sorted([(name, "") for name in ("base", "mon", "apps", "far", "last")])
    assert slices.closed and not report.slices_stop and not report.stopped_by


def test_another_slices_verdict_stops_this_one_and_says_where():
    slices = Slices(verdicts={"base": "run r1: stopped at barrier 'run base' by slice 2/3: phase base failed on "
                                      "1 cluster(s): c5"})
    report, ran = walk(slices)
    assert ran <= {"base", "mon"}          # mon (same-cluster) may start before the word comes; apps never
    assert "base" in ran
    assert report.stopped_by == "base"
    assert report.slices_stop.endswith("phase base failed on 1 cluster(s): c5: this slice stops there too; "
                                       "no later phase starts")
    assert {node for node, _why in slices.told} == {"base", "mon", "apps", "far", "last"}


def test_a_failure_here_is_told_at_its_barrier_and_nothing_after_it_starts():
    slices = Slices()
    report, ran = walk(slices, answers={("base", "b"): Outcome(failed=True, msg="secret detail")})
    assert "apps" not in ran and "last" not in ran
    assert ("base", "phase base failed on 1 cluster(s): b") in slices.told       # never a record's message
    assert report.stopped_by == "base" and not report.slices_stop


def test_a_slice_gone_stops_the_run_with_the_meetings_word():
    report, ran = walk(Slices(gone="base"), keep_going=True)
    assert "apps" not in ran and "last" not in ran
    assert report.slices_stop == "slice 2/3 left the run"
    assert report.never_started[("apps", "a")] == "the slices' meeting failed: slice 2/3 left the run"


# --- the barrier watch's thread, on a meeting played by a table


class TableMeeting:
    """What a BarrierWatch asks of a Meeting: barrier -> what ``check`` answers, in turn (the last one stays)."""

    def __init__(self, checks):
        self.checks = checks
        self.calls: list = []
        self.slice = SliceId(1, 3)
        self.settings = type("Settings", (), {"run_id": "r1", "poll": 0.01})()

    def arrive(self, barrier):
        self.calls.append(("arrive", barrier))

    def stop(self, reason, barrier):
        self.calls.append(("stop", barrier, reason))

    def check(self, barrier):
        answers = self.checks[barrier]
        return answers.pop(0) if len(answers) > 1 else answers[0]


def test_the_watch_arrives_or_stops_once_per_node_and_tells_each_word():
    meeting = TableMeeting({"run base": [False, True], "run mon": [Verdict("run mon", "phase mon failed", "2/3")]})
    words: list = []
    done = threading.Event()

    def told(node, word):
        words.append((node, word))
        if len(words) == 2:
            done.set()
    watch = BarrierWatch(SliceMeet(meeting, "run"), told)
    watch.settled("base", "")
    watch.settled("mon", "phase mon never started on 1 cluster(s): a")
    assert done.wait(5)
    watch.close()
    assert meeting.calls == [("arrive", "run base"), ("stop", "run mon", "phase mon never started on 1 cluster(s): a")]
    assert dict(words) == {"base": BarrierWord(ok=True), "mon": BarrierWord(
        ok=False, reason="run r1: stopped at barrier 'run mon' by slice 2/3: phase mon failed", elsewhere=True)}
