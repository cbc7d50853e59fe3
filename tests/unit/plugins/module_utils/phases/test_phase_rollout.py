# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Rollouts: the batch rules (Ansible's serial), the document checks, and the runner's batches, budget, soak and
stop after N batches; one row per rule."""

from __future__ import annotations

import pytest
from phase_helpers import build, phase, plan, run_entry

from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import (
    Rollout, RolloutOf, batch_sizes, over_budget, parse_rollout, plan_batches)
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import (
    FAILED, Outcome, RolloutRun, run_phases)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import (
    batch_lines, plan_failure_message, rollout_plan_lines, rollout_stop_message, summary_lines)

HOSTS = [f"h{i:02d}" for i in range(20)]
ECHO = {"argv": ["true"]}


@pytest.mark.parametrize("count, batches, expected", [
    (20, [1, "10%", "100%"], [1, 2, 17]),
    (20, [1, 5], [1, 5, 5, 5, 4]),
    (20, ["30%"], [6, 6, 6, 2]),
    (3, ["10%"], [1, 1, 1]),
    (20, [50], [20]),
    (0, [1], []),
    (500, [1, "10%", "100%"], [1, 50, 449]),
], ids=["canary-then-percentages", "last-size-repeats", "percent-of-all-not-of-the-rest", "percent-at-least-one",
        "larger-than-the-fleet", "no-cluster-no-batch", "bench-shape"])
def test_batch_sizes_follow_ansible_serial(count, batches, expected):
    assert batch_sizes(count, batches) == expected


@pytest.mark.parametrize("order, expected", [
    ("inventory", ["b", "c", "a"]), ("reverse_inventory", ["a", "c", "b"]), ("sorted", ["a", "b", "c"]),
    ("reverse_sorted", ["c", "b", "a"]),
], ids=["inventory", "reverse-inventory", "sorted", "reverse-sorted"])
def test_order(order, expected):
    assert [host for batch in plan_batches(["b", "c", "a"], Rollout((1,), order=order), "p") for host in batch] \
        == expected


def test_shuffle_is_the_same_on_every_run_so_a_resume_finds_its_batches():
    first = plan_batches(HOSTS, Rollout((1, "25%"), order="shuffle"), "cni")
    assert first == plan_batches(list(reversed(HOSTS)), Rollout((1, "25%"), order="shuffle"), "cni")
    assert sorted(host for batch in first for host in batch) == HOSTS
    assert first != plan_batches(HOSTS, Rollout((1, "25%"), order="inventory"), "cni")


@pytest.mark.parametrize("failed, size, budget, stops", [
    (0, 5, 0, False), (1, 5, 0, True), (1, 4, 25, False), (2, 4, 25, True), (2, 4, 49, True), (1, 1, 100, False),
], ids=["none-failed", "zero-budget-any-failure", "equal-is-not-over", "over", "ansible-49-for-two-of-four",
        "hundred-never-stops"])
def test_failure_budget_is_exceeded_not_reached(failed, size, budget, stops):
    assert over_budget(failed, size, budget) is stops


@pytest.mark.parametrize("value, problem", [
    ({"batches": [1, "10%"], "max_fail_percentage": 10, "pause": 5, "order": "shuffle"}, None),
    ({"batches": "25%"}, None),
    ("10%", "field spec.rollout: expected a mapping with batches"),
    ({}, "field spec.rollout.batches: missing"),
    ({"batches": []}, "field spec.rollout.batches: expected at least one batch size"),
    ({"batches": [1, 0]}, "field spec.rollout.batches[1]: expected a whole number of clusters"),
    ({"batches": ["0%"]}, "field spec.rollout.batches[0]: expected a whole number"),
    ({"batches": ["150%"]}, "field spec.rollout.batches[0]: expected a whole number"),
    ({"batches": [True]}, "field spec.rollout.batches[0]: expected a whole number"),
    ({"batches": [1], "max_fail_percentage": 101}, "field spec.rollout.max_fail_percentage: expected a percentage"),
    ({"batches": [1], "pause": "1m"}, "field spec.rollout.pause: expected a number of seconds"),
    ({"batches": [1], "order": "random"}, "field spec.rollout.order: unknown order 'random'"),
    ({"batches": [1], "paus": 3}, "field spec.rollout.paus: unknown field (did you mean 'pause'?)"),
], ids=["every-field", "one-size-like-serial", "not-a-mapping", "batches-required", "no-size", "zero-clusters",
        "zero-percent", "over-hundred-percent", "boolean", "budget-over-100", "pause-not-seconds", "unknown-order",
        "unknown-field"])
def test_rollout_fields_are_checked_naming_the_field(value, problem):
    problems = Problems()
    parsed = parse_rollout(value, lambda name: "p.yaml document 1 (Phase cni) field spec.rollout"
                                               + (f".{name}" if name else ""), problems)
    if problem is None:
        assert not problems and parsed is not None
    else:
        assert parsed is None and any(problem in message for message in problems.messages), problems.messages


class Work:
    """HostWork from a table of (phase, host) -> Outcome; records every call in order."""

    def __init__(self, answers=None):
        self.answers = answers or {}
        self.calls = []

    def __call__(self, phase, context):
        host = context.host
        self.calls.append((phase.name, host))
        return self.answers.get((phase.name, host), Outcome(changed=True))


def rollout_phases(hosts=HOSTS, batches=(1, "10%", "100%"), budget=0.0, pause=0.0, after=True):
    rollout = RolloutOf("cni", Rollout(tuple(batches), budget, pause), list(hosts)).to_dict()
    phases = [run_entry("cni", None, (), rollout=rollout),
              run_entry("cni/apply", "apply", hosts, rollout=rollout),
              run_entry("cni/ready", "wait", hosts, rollout=rollout)]
    if after:
        phases.append(run_entry("apps", "apply", hosts, rollout=None))
    return phases


def batches_of(calls, phase="cni/apply"):
    return [host for name, host in calls if name == phase]


def test_a_batch_runs_the_whole_subtree_before_the_next_batch_starts():
    work = Work()
    report = run_phases(rollout_phases(), work, hosts_in_play=HOSTS, concurrency=1)
    # batch 1 (h00): apply then ready; batch 2 (h01, h02): apply, ready; batch 3: the rest; then the next phase
    assert work.calls[:6] == [("cni/apply", "h00"), ("cni/ready", "h00"), ("cni/apply", "h01"),
                              ("cni/apply", "h02"), ("cni/ready", "h01"), ("cni/ready", "h02")]
    assert [name for name, _host in work.calls[-20:]] == ["apps"] * 20
    assert [(b.number, len(b.hosts), b.ran) for b in report.batches] == [(1, 1, True), (2, 2, True), (3, 17, True)]
    assert {record.details["rollout"]["batch"] for record in report.records if record.phase == "cni/ready"} \
        == {1, 2, 3}
    assert not report.stopped_by and not report.stop


def test_the_budget_stops_at_the_batch_that_exceeds_it_and_no_later_cluster_is_touched():
    work = Work({("cni/apply", "h02"): Outcome(failed=True, msg="boom")})
    report = run_phases(rollout_phases(), work, hosts_in_play=HOSTS, concurrency=4)
    touched = {host for _name, host in work.calls}
    assert touched == {"h00", "h01", "h02"}
    # the barrier that went over the budget is the last: no later phase of the batch starts, on any cluster
    assert work.calls[-2:] == [("cni/apply", "h01"), ("cni/apply", "h02")] or \
        work.calls[-2:] == [("cni/apply", "h02"), ("cni/apply", "h01")]
    assert report.stopped_by == "cni"
    assert report.stop["batch"] == 2 and report.stop["untouched"] == HOSTS[3:]
    assert report.stop["failed"] == {"h02": "phase cni/apply: boom"}
    message = rollout_stop_message(report.stop, "site")
    assert message.startswith("plan site: rollout of phase cni stopped at batch 2 of 3: 1 of 2 cluster(s) failed "
                              "(50% > max_fail_percentage 0%): h02: phase cni/apply: boom; 17 cluster(s) never "
                              "touched: h03, h04")
    assert report.failed_hosts() == {"h02": "phase cni/apply failed on cluster h02: boom"}


def test_a_tolerated_failure_fails_its_cluster_and_the_rollout_goes_on():
    work = Work({("cni/apply", "h05"): Outcome(failed=True, msg="boom")})
    report = run_phases(rollout_phases(budget=10), work, hosts_in_play=HOSTS, concurrency=4)
    assert not report.stopped_by
    assert ("apps", "h05") not in work.calls and ("apps", "h06") in work.calls   # the failed one takes no later phase
    assert report.failed_hosts().keys() == {"h05"}


def test_stop_after_ends_the_run_and_resumed_batches_do_not_count():
    work = Work()
    report = run_phases(rollout_phases(), work, hosts_in_play=HOSTS, rollouts=RolloutRun(stop_after=2))
    assert {host for _name, host in work.calls} == {"h00", "h01", "h02"}
    assert report.stop["paused"] and report.stop["untouched"] == HOSTS[3:] and report.batches_run == 2
    assert "paused after batch 2 of 3 (plan_rollout_stop_after" in rollout_stop_message(report.stop)

    class Resumed(Work):
        def __call__(self, phase, context):
            host = context.host
            self.calls.append((phase.name, host))
            if host in ("h00", "h01", "h02"):
                return Outcome(skipped=True, details={"resumed": True})
            return Outcome(changed=True)

    resumed = Resumed()
    report = run_phases(rollout_phases(), resumed, hosts_in_play=HOSTS, rollouts=RolloutRun(stop_after=1))
    assert [b.ran for b in report.batches] == [False, False, True]
    assert report.batches_run == 1 and not report.stop    # batch 3 was the last and ran: nothing left to pause before


def test_soak_fails_a_cluster_whose_objects_stop_being_current():
    now = [0.0]
    seen = []

    def watch(phases, host):
        seen.append((now[0], host, [phase.name for phase in phases]))
        return "Deployment kube-system/cni: InProgress: 0 of 1 updated" if host == "h01" and now[0] >= 5 else None

    def sleep(seconds):
        now[0] += seconds

    recorded = []
    report = run_phases(rollout_phases(HOSTS[:5], batches=(1, 2), pause=12), Work(), hosts_in_play=HOSTS, sleep=sleep,
                        recorded=lambda phase, record: recorded.append((record.phase, record.host, record.result)),
                        rollouts=RolloutRun(watch=watch, clock=lambda: now[0], poll=5),
                        concurrency=2)
    # batch 1 soaks 12 s, looked at at 0, 5, 10 and 12 s; h01 of batch 2 fails the first look of its soak
    pause_of = [b.soak for b in report.batches]
    assert pause_of[0].startswith("12s, 4 check(s): every object stayed Current"), pause_of
    # ... and the soak ends there: the rollout is over its budget
    hosts_seen = [host for _t, host, _phases in seen]   # a batch's clusters are looked at in parallel
    assert hosts_seen[:4] == ["h00"] * 4 and sorted(hosts_seen[4:]) == ["h01", "h02"], hosts_seen
    assert seen[0][2] == ["cni/apply", "cni/ready"]
    assert report.stopped_by == "cni" and report.stop["batch"] == 2
    failed = [r for r in report.records if r.result == FAILED]
    assert [(r.phase, r.host) for r in failed] == [("cni/ready", "h01")]
    assert "during the 12s soak after batch 2 of 3" in failed[0].msg
    assert ("cni/ready", "h01", "failed") in recorded    # its run record says so too


def test_no_soak_in_check_mode_status_and_after_the_last_batch():
    looks = []

    def watch(_phases, host):
        looks.append(host)
    run_phases(rollout_phases(pause=30), Work(), hosts_in_play=HOSTS, rollouts=RolloutRun(pause=False, watch=watch))
    assert looks == []
    report = run_phases(rollout_phases(pause=30), Work(), hosts_in_play=HOSTS, dry_run=True, status_mode=True)
    assert [b.soak for b in report.batches] == ["", "", ""]


def test_status_reports_every_batch_even_past_a_failure():
    work = Work({("cni/apply", "h00"): Outcome(failed=True, msg="cannot check")})
    report = run_phases(rollout_phases(), work, hosts_in_play=HOSTS, dry_run=True, status_mode=True)
    assert not report.stopped_by and len({host for _n, host in work.calls}) == 20


def test_limit_makes_batches_of_the_clusters_in_play():
    in_play = HOSTS[:10]
    work = Work()
    report = run_phases(rollout_phases(), work, hosts_in_play=in_play)
    assert [len(b.hosts) for b in report.batches] == [1, 1, 8]
    assert {host for _n, host in work.calls} == set(in_play)


def test_views_show_the_batches_and_one_summary_line_per_batch():
    phases = [entry.to_dict() for entry in rollout_phases(budget=0)]   # the views read the run list's JSON
    lines = rollout_plan_lines(phases, HOSTS[:12])
    assert lines[0].startswith("rollout of phase cni: 12 cluster(s) in play in 3 batch(es) [1, '10%', '100%']")
    assert lines[1:] == ["  batch 1: h00", "  batch 2: h01", "  batch 3: h02 .. h11 (10)"]
    records = [{"phase": "cni/apply", "host": "h00", "result": "changed",
                "rollout": {"phase": "cni", "batch": 1, "of": 3}},
               {"phase": "cni/apply", "host": "h01", "result": "failed", "msg": "x",
                "rollout": {"phase": "cni", "batch": 2, "of": 3}}]
    rows = batch_lines(phases, records, HOSTS[:12])
    assert rows[1].split() == ["cni", "1/3", "h00", "1", "changed", "-"]
    assert "stopped: 1 of 1 cluster(s) failed" in rows[2] and "failed: h01" in rows[2]
    assert "not run (rollout stopped after batch 2)" in rows[3]
    assert plan_failure_message(records[1:]) == "phase cni/apply failed on cluster h01 in batch 2 of 3 of the " \
                                                "rollout of cni: x"


def test_a_rollout_phase_the_plan_runs_twice_is_two_rollouts_each_at_its_position(tmp_path):
    documents = [phase("cni", cluster="workload", rollout={"batches": [1]},
                       phases=[{"name": "apply", "executor": "command", "options": ECHO}]),
                 phase("check", cluster="workload", executor="command", options=ECHO),
                 plan("site", "cni", "check", "cni")]
    built = build(documents, tmp_path, name="site")
    assert [(p["name"], (p["rollout"] or {}).get("phase")) for p in (planned.to_dict() for planned in built.phases)] == [
        ("cni#1", "cni#1"), ("cni/apply#1", "cni#1"), ("check", None), ("cni#2", "cni#2"), ("cni/apply#2", "cni#2")]
    work = Work()
    report = run_phases([planned.run_entry() for planned in built.phases], work, hosts_in_play=["child-a", "child-b"],
                        concurrency=1)
    # each run of the rollout goes batch by batch at its own position, around the phase between them
    assert work.calls == [("cni/apply#1", "child-a"), ("cni/apply#1", "child-b"), ("check", "child-a"),
                          ("check", "child-b"), ("cni/apply#2", "child-a"), ("cni/apply#2", "child-b")]
    assert [(b.rollout, b.number) for b in report.batches] == [("cni#1", 1), ("cni#1", 2), ("cni#2", 1), ("cni#2", 2)]


@pytest.mark.parametrize("in_play, check_mode, expected", [
    (HOSTS[:12], True, ["  batch 1: h00", "  batch 2: h01", "  batch 3: h02 .. h11 (10)"]),
    (HOSTS[:3], True, ["  batch 1: h00", "  batch 2: h01", "  batch 3: h02"]),
    (HOSTS[:12], False, []),
], ids=["a-preview-lists-the-batches-in-order", "limit-makes-the-preview-s-batches", "a-real-run-has-no-preview"])
def test_a_preview_lists_each_rollout_s_batches_for_the_clusters_in_play(in_play, check_mode, expected):
    lines = summary_lines([entry.to_dict() for entry in rollout_phases()], [], in_play, "run", check_mode=check_mode)
    assert [line for line in lines if line.startswith("  batch ")] == expected
    if check_mode:
        assert lines[-1].startswith("Plan: 0 to add") and lines[-2] == expected[-1]
