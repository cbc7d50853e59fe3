"""A sliced run's side of the meeting (``coordination.run_meeting``) and the runner's barrier after each unit: the
settings refused with the key named, the run ID under AWX and elsewhere, the barrier names, a failure here told to
every slice, another slice's stop or absence stopping this one, and the start check of the plan's cluster names."""

from __future__ import annotations

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.phasekit.kube.plugins.module_utils.coordination.meeting import (
    MeetingFailed, Stopped, Verdict)
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.run_meeting import (
    COORDINATION_OPTIONS, CoordinationSettings, SliceMeet, sliced_run)
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import SliceError, SliceId, is_sliced
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import Rollout, RolloutOf
from ansible_collections.phasekit.kube.plugins.module_utils.planning.validation import cluster_hosts_of
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import Outcome, RolloutRun, run_phases
from phase_helpers import run_entry

GOOD = {"kubeconfig": "/k", "namespace": "meet"}


def validated(value) -> tuple[dict, list[str]]:
    """``coordination`` as Ansible's validator leaves it (run_phases' spec), and its errors."""
    checked = ArgumentSpecValidator({"coordination": {"type": "dict", "default": {}, "options": COORDINATION_OPTIONS}})
    result = checked.validate({"coordination": value})
    return result.validated_parameters["coordination"], [str(error) for error in result.errors]


@pytest.mark.parametrize("value, expected", [
    ("nope", "dictionary requested, could not parse JSON or key=value"),
    ({**GOOD, "lease": 3}, "lease"),
    ({**GOOD, "lease_seconds": "three"}, "lease_seconds"),
])
def test_bad_coordination_settings_are_refused_by_the_validator_naming_the_key(value, expected):
    _value, errors = validated(value)
    assert errors and expected in " ".join(errors)


@pytest.mark.parametrize("value, expected", [
    ({"namespace": "meet"}, "plan_coordination.kubeconfig is required for a sliced run"),
    ({"kubeconfig": "/k"}, "plan_coordination.namespace is required for a sliced run"),
])
def test_a_sliced_run_needs_the_kubeconfig_and_the_namespace(value, expected):
    with pytest.raises(SliceError) as raised:
        CoordinationSettings.parse(validated(value)[0])
    assert str(raised.value).startswith(expected)


def test_the_validator_fills_in_the_defaults_and_converts_strings():
    settings = CoordinationSettings.parse(validated({**GOOD, "lease_seconds": "5"})[0])
    assert (settings.lease_seconds, settings.arrival_timeout, settings.poll, settings.context) == (5, 600.0, 0.2, "")


def test_coordination_settings_reach_the_meeting_and_are_checked_there():
    settings = CoordinationSettings.parse({**GOOD, "context": "mgmt", "lease_seconds": 5, "arrival_timeout": 60})
    meeting = settings.meeting_settings("run-1", "site")
    assert (meeting.namespace, meeting.lease_duration, meeting.arrival_timeout, meeting.plan) == \
        ("meet", 5, 60.0, "site")
    with pytest.raises(SliceError, match=r"^plan_coordination: lease duration 1: expected whole seconds"):
        CoordinationSettings.parse({**GOOD, "lease_seconds": 1}).meeting_settings("run-1", "site")


def test_a_run_is_sliced_only_with_a_slice_of_several():
    assert sliced_run("", GOOD, "", {}, {}) is None            # plan_coordination alone changes nothing
    assert sliced_run("1/1", {}, "", {}, {}) is None
    assert not is_sliced("") and not is_sliced("1/1") and is_sliced("2/3")
    with pytest.raises(SliceError, match=r"plan_slice: '0/3': the slice k must be from 1 to N"):
        is_sliced("0/3")


def test_the_run_id_is_given_or_awxs_workflow_job():
    assert sliced_run("2/3", GOOD, "site-7", {}, {}).run_id == "site-7"
    under_awx = sliced_run("2/3", GOOD, "", {"awx_workflow_job_id": 412, "awx_job_id": 413}, {})
    assert (under_awx.run_id, under_awx.slice) == ("awx-412", SliceId(2, 3))
    with pytest.raises(SliceError, match=r"^plan_slice 2/3: plan_run_id is required"):
        sliced_run("2/3", GOOD, "", {"awx_job_id": 413}, {})
    with pytest.raises(SliceError, match=r"^plan_run_id: 'Site 7' is not a run ID"):
        sliced_run("2/3", GOOD, "Site 7", {}, {})
    with pytest.raises(SliceError, match=r"^plan_slice \*/4: plan_run_id is required"):
        sliced_run("*/4", GOOD, "", {}, {})
    assert str(sliced_run("*/4", GOOD, "site-7", {}, {})) == "*/4"   # as given, until the meeting numbers it


class FakeMeeting:
    """What SliceMeet asks of a Meeting, answered from a table: barrier -> exception to raise at its wait."""

    def __init__(self, raises=None, names=None):
        self.raises = raises or {}
        self.names = names or {}
        self.calls = []
        self.slice = SliceId(1, 3)
        self.settings = type("Settings", (), {"run_id": "r1"})()

    def wait(self, barrier):
        self.calls.append(("wait", barrier))
        if barrier in self.raises:
            raise self.raises[barrier]
        return 0.5

    def stop(self, reason, barrier):
        self.calls.append(("stop", barrier, reason))

    def publish(self, key, value):
        self.calls.append(("publish", key, value))

    def read(self, key):
        return self.names


def work(answers):
    def run(entry, context):
        return answers.get((entry.name, context.host), Outcome())
    return run


def test_every_unit_ends_on_every_slice_before_the_next_and_a_failure_here_stops_them_all():
    meeting = FakeMeeting()
    phases = [run_entry("one", "apply", "ab"), run_entry("two", "apply", "ab"), run_entry("three", "apply", "ab")]
    report = run_phases(phases, work({("two", "b"): Outcome(failed=True, msg="boom")}), hosts_in_play=list("ab"),
                        meet=SliceMeet(meeting, "run"))
    assert meeting.calls == [("wait", "run one"), ("stop", "run two", "phase two failed on 1 cluster(s): b")]
    assert (report.stopped_by, report.slices_stop) == ("two", "")
    assert {record.phase for record in report.records} == {"one", "two"}


@pytest.mark.parametrize("raised, said", [
    (Stopped(Verdict("run one", "phase one failed on 1 cluster(s): c", "2/3"), "r1"),
     "run r1: stopped at barrier 'run one' by slice 2/3: phase one failed on 1 cluster(s): c: this slice (1/3) "
     "stops there too; no later phase starts"),
    (MeetingFailed("run r1: slice 1/3 at barrier 'run one': slice 3/3 stopped renewing"),
     "run r1: slice 1/3 at barrier 'run one': slice 3/3 stopped renewing"),
])
def test_another_slices_stop_or_absence_stops_this_slice_there(raised, said):
    meeting = FakeMeeting(raises={"run one": raised})
    report = run_phases([run_entry("one", "apply", "ab"), run_entry("two", "apply", "ab")], work({}),
                        hosts_in_play=list("ab"), meet=SliceMeet(meeting, "run"))
    assert (report.stopped_by, report.slices_stop) == ("one", said)
    assert {record.phase for record in report.records} == {"one"}


def test_at_the_start_a_cluster_name_no_slice_has_is_refused():
    meeting = FakeMeeting(names={1: ["fleet"], 2: ["fleet", "mgmt"]})
    SliceMeet(meeting, "run").start(["fleet"], ["mgmt"])
    assert meeting.calls == [("publish", "names", ["fleet"]), ("wait", "run start")]
    with pytest.raises(SliceError, match=r"no slice has a host or group named 'mgnt'"):
        SliceMeet(meeting, "run").start(["fleet"], ["mgnt"])


def test_a_sliced_inventory_lacks_other_slices_hosts_without_a_problem():
    groups = {"all": ["a"], "fleet": ["a"], "far": []}
    for sliced, expected in ((False, 2), (True, 0)):
        problems = Problems()
        inventory = Inventory(groups=groups, sliced=sliced)
        assert cluster_hosts_of("elsewhere", "spec.cluster", inventory, problems) == []
        assert cluster_hosts_of("far", "spec.cluster", inventory, problems) == []
        assert cluster_hosts_of("fleet", "spec.cluster", inventory, problems) == ["a"]
        assert len(problems.messages) == expected


class FleetMeet:
    """The Meet protocol of slice 1 of 2, the other slice's answers given: its rollout clusters, its failures."""

    def __init__(self, other_clusters, other_failed=None, other_ran=True):
        self.other_clusters = other_clusters
        self.other_failed = other_failed or {}
        self.other_ran = other_ran
        self.calls = []

    def __call__(self, unit, stopping):
        self.calls.append(("unit", unit, stopping))
        return ""

    def fleet(self, rollout, clusters):
        self.calls.append(("fleet", rollout, tuple(clusters)))
        return sorted(set(clusters) | set(self.other_clusters))

    def batch(self, rollout, number, failed, ran):
        self.calls.append(("batch", rollout, number, tuple(failed), ran))
        return sorted(set(failed) | set(self.other_failed.get(number, ()))), ran or self.other_ran


def sliced_rollout(mine, budget=0.0):
    rollout = RolloutOf("cni", Rollout((1, 2, "100%"), budget, 0.0), list(mine)).to_dict()
    return [run_entry("cni", None, (), rollout=rollout), run_entry("cni/apply", "apply", mine, rollout=rollout),
            run_entry("apps", "apply", mine, rollout=None)]


def test_a_rollouts_batches_are_the_fleets_and_each_slice_runs_its_share():
    mine, theirs = ["h1", "h3", "h5"], ["h2", "h4", "h6"]
    calls = []
    meet = FleetMeet(theirs)

    def work(entry, context):
        calls.append((entry.name, context.host))
        return Outcome(changed=True)

    report = run_phases(sliced_rollout(mine), work, hosts_in_play=mine, concurrency=1, meet=meet)
    # the fleet's batches (1, 2, the rest), as one controller makes them of h1..h6; this slice runs its own hosts
    assert [batch.hosts for batch in report.batches] == [["h1"], ["h2", "h3"], ["h4", "h5", "h6"]]
    assert [host for name, host in calls if name == "cni/apply"] == ["h1", "h3", "h5"]
    assert [call[:3] for call in meet.calls if call[0] == "batch"] == \
        [("batch", "cni", 1), ("batch", "cni", 2), ("batch", "cni", 3)]
    assert not report.stopped_by


def test_another_slices_failures_count_against_the_one_budget_and_stop_every_slice_at_that_batch():
    mine = ["h1", "h3", "h5"]
    meet = FleetMeet(["h2", "h4", "h6"], other_failed={2: ["h2"]})
    calls = []

    def work(entry, context):
        calls.append((entry.name, context.host))
        return Outcome(changed=True)

    report = run_phases(sliced_rollout(mine), work, hosts_in_play=mine, concurrency=1, meet=meet)
    assert report.stopped_by == "cni" and report.stop["batch"] == 2
    assert report.stop["failed"] == {"h2": "failed on another slice of this run"}
    assert report.stop["untouched"] == ["h4", "h5", "h6"]
    assert [host for name, host in calls] == ["h1", "h3"]          # no later cluster touched, "apps" never started
    assert meet.calls[-1] == ("unit", "cni", report.stop["reason"])   # told to every slice at the rollout's barrier


def test_stop_after_counts_the_fleets_batches_also_those_that_ran_only_on_another_slice():
    # batch 1 is h1 (this slice), batch 2 is h2 and h3; stop after 2 batches: this slice runs h1 and h3, never h5
    mine = ["h1", "h3", "h5"]
    calls = []

    def work(entry, context):
        calls.append((entry.name, context.host))
        return Outcome(changed=True)

    rollouts = RolloutRun(stop_after=2)
    report = run_phases(sliced_rollout(mine), work, hosts_in_play=mine, concurrency=1,
                        meet=FleetMeet(["h2", "h4", "h6"]), rollouts=rollouts)
    assert [host for name, host in calls] == ["h1", "h3"]
    assert report.stop["batch"] == 2 and report.stop["paused"]
    # a slice with no cluster in the fleet's first batch still counts it: it stops at the same batch
    calls.clear()
    theirs = run_phases(sliced_rollout(["h2", "h4", "h6"]), work, hosts_in_play=["h2", "h4", "h6"], concurrency=1,
                        meet=FleetMeet(mine), rollouts=RolloutRun(stop_after=2))
    assert [host for name, host in calls] == ["h2"]
    assert theirs.stop["batch"] == 2 and theirs.stop["untouched"] == ["h4", "h5", "h6"]
