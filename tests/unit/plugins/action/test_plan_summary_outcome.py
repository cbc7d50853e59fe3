# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""plan_summary with ``outcome``: one cluster host's own result of a run, as Ansible runs the action (task
arguments in, result out); one row per rule."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.action.plan_summary import ActionModule


def run(run_action, **args) -> dict:
    return run_action(ActionModule, "phasekit.kube.plan_summary", args)


@pytest.mark.parametrize("args, expected", [
    ({"outcome": {"result": "changed", "msg": "changed: apps"}}, {"changed": True, "msg": "changed: apps"}),
    ({"outcome": {"result": "ok", "msg": "run: apps"}}, {"changed": False, "msg": "run: apps"}),
    ({"outcome": {"result": "skipped", "msg": "not reached"}}, {"changed": False, "skipped": True, "msg": "not reached"}),
    ({"outcome": {"result": "failed", "msg": "phase apps failed on cluster c1"}},
     {"changed": False, "failed": True, "msg": "phase apps failed on cluster c1"}),
    ({"outcome": "ok"}, {"failed": True, "msg": "option outcome: expected a dictionary (result and msg)"}),
    ({"outcome": {"result": "ok"}, "records": []}, {"failed": True, "msg": "option outcome: not with records"}),
], ids=["changed-reports-changed", "ok-reports-ok", "skipped-skips", "failed-fails-with-its-message",
        "an-outcome-that-is-not-a-mapping-is-refused", "outcome-is-not-mixed-with-a-summary"])
def test_outcome(run_action, args, expected):
    result = run(run_action, **args)
    assert {key: result.get(key) for key in expected} == expected, result


DIFFERS = {"phase": "apps", "host": "target", "result": "changed", "drift": ["ConfigMap demo/x: data.a"]}


@pytest.mark.parametrize("args, expected", [
    ({"lines": ["table"], "records": [DIFFERS], "mode": "status", "plan": "site", "fail_on_drift": True},
     {"failed": True, "msg": "plan site: 1 phase run(s) differ from the clusters, are not ready or could not be "
                             "checked (listed above); plan_fail_on_drift is set"}),
    ({"lines": ["table"], "records": [DIFFERS], "mode": "status", "plan": "site"},
     {"failed": None, "msg": None}),
    ({"lines": ["table"], "records": [DIFFERS], "mode": "run", "fail_on_drift": True},
     {"failed": None, "msg": None}),
    ({"lines": ["table"], "rollout_messages": ["", "rollout apps paused after 1 batch(es)"]},
     {"failed": None, "msg": "rollout apps paused after 1 batch(es)"}),
    ({"records": [DIFFERS], "phases": [{"name": "apps", "executor": "apply", "hosts": ["target"]}], "hosts": ["target"],
      "mode": "status", "fail_on_drift": True},
     {"failed": True, "msg": "1 phase run(s) differ from the clusters, are not ready or could not be checked (listed "
                             "above); plan_fail_on_drift is set"}),
], ids=["the-drift-gate-fails-a-status-that-differs", "without-fail-on-drift-drift-passes",
        "a-run-that-writes-is-not-gated", "a-rollout-message-is-the-message", "the-gate-fails-a-summary-of-steps"])
def test_summary_tail_and_drift_gate(run_action, args, expected):
    result = run(run_action, **args)
    assert {key: result.get(key) for key in expected} == expected, result
