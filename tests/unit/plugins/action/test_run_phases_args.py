# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""run_phases refuses bad numbers before any plan is read or cluster touched, as Ansible runs the action (task
arguments in, result out), word for word; one row per rule."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.action.run_phases import ActionModule, checked_reports
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

NO_PLAN = {"plan": {"not": "read"}}  # the numbers are refused before the plan is looked at


def run(run_action, **args) -> dict:
    return run_action(ActionModule, "phasekit.kube.run_phases", {**NO_PLAN, **args})


@pytest.mark.parametrize("args, msg", [
    pytest.param({"cluster_concurrency": 257}, "cluster_concurrency must be between 1 and 256, got 257",
                 id="cluster_concurrency_over_256"),
    pytest.param({"cluster_concurrency": -1}, "cluster_concurrency must be between 1 and 256, got -1",
                 id="cluster_concurrency_below_1"),
    pytest.param({"rollout_stop_after": -1}, "rollout_stop_after (plan_rollout_stop_after) must be 0 (no stop) or a "
                 "number of batches, got -1", id="rollout_stop_after_negative"),
    pytest.param({"lock_timeout": -0.5}, "lock_timeout (plan_lock_timeout) must be 0 (fail at once) or more seconds, "
                 "and lock_duration (plan_lock_duration) at least 5 seconds; got -0.5 and 120",
                 id="lock_timeout_negative"),
    pytest.param({"lock_duration": 4}, "lock_timeout (plan_lock_timeout) must be 0 (fail at once) or more seconds, "
                 "and lock_duration (plan_lock_duration) at least 5 seconds; got 0 and 4",
                 id="lock_duration_under_5_seconds"),
])
def test_bad_numbers_are_refused_word_for_word(run_action, args, msg):
    result = run(run_action, **args)
    assert result.get("failed") is True
    assert result["msg"] == msg


@pytest.mark.parametrize("args, problem", [
    pytest.param({"report_json": "/no/such/dir/r.json"},
                 "report_json (plan_report_json): cannot write the report /no/such/dir/r.json: its directory "
                 "/no/such/dir does not exist (create it first)", id="a_report_in_a_missing_directory_is_refused"),
    pytest.param({"report_junit": "/"}, "report_junit (plan_report_junit): cannot write the report /: it is a "
                 "directory (expected a file path)", id="a_report_that_is_a_directory_is_refused"),
])
def test_report_paths_are_refused_before_the_plan_is_read(run_action, args, problem):
    result = run(run_action, **args)
    assert result.get("failed") is True
    assert result["msg"] == problem


@pytest.mark.parametrize("mode, asked, expected", [
    pytest.param("run", {"report_json": "/tmp/r.json"}, {"report_json": "/tmp/r.json"}, id="a_run_writes_its_reports"),
    pytest.param("history", {"report_json": "/no/such/dir/r.json"}, {}, id="history_writes_no_report_nor_checks_one"),
    pytest.param("run", {}, {}, id="no_report_asked_none_written"),
])
def test_checked_reports(mode, asked, expected):
    args = {"mode": mode, "report_json": "", "report_junit": "", "report_timeline": "", **asked}
    assert checked_reports(args) == expected


def test_checked_reports_raises_for_people():
    with pytest.raises(PhasekitError, match=r"^report_timeline \(plan_report_timeline\): cannot write the report"):
        checked_reports({"mode": "status", "report_json": "", "report_junit": "", "report_timeline": "/no/dir/t.html"})
