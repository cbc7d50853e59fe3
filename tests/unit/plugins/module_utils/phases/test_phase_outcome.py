# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Each cluster host's own outcome of a run (module_utils/running/outcome.py): one row per rule."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.running.outcome import (
    cluster_outcome, cluster_outcomes, task_result)

PHASES = [{"name": "apps", "executor": "apply", "hosts": ["a", "b"], "origin": "phases/site.yaml document 2 (Phase apps)"},
          {"name": "smoke", "executor": "command", "hosts": ["a", "b"]}]


def rec(phase: str, result: str, host: str = "a", **extra) -> dict:
    return {"phase": phase, "host": host, "executor": "apply", "result": result, "duration": 0.1, **extra}


@pytest.mark.parametrize("records, mode, stopped_by, expected", [
    ([rec("apps", "changed"), rec("smoke", "failed", msg="exit 1")], "run", "",
     ("failed", "phase smoke failed on cluster a: exit 1")),
    ([rec("apps", "failed", msg="refused")], "run", "",
     ("failed", "phase apps failed on cluster a: refused; phase apps is defined in phases/site.yaml document 2")),
    ([rec("apps", "changed"), rec("smoke", "ok")], "run", "", ("changed", "changed: apps")),
    ([rec("apps", "changed")], "destroy", "", ("changed", "changed: apps")),
    ([rec("apps", "changed")], "status", "", ("ok", "status: apps")),
    ([rec("apps", "changed")], "validate", "", ("ok", "validate: apps")),
    ([rec("apps", "not ready")], "status", "", ("ok", "status: apps")),
    ([rec("apps", "ok"), rec("smoke", "ok")], "run", "", ("ok", "run: apps, smoke")),
    ([rec("apps", "skipped", resumed=True), rec("smoke", "ok")], "run", "", ("ok", "run: smoke")),
    ([rec("apps", "skipped", resumed=True)], "run", "", ("skipped", "no phase ran here (skipped: apps)")),
    ([], "run", "apps", ("skipped", "not reached: the run stopped at phase apps")),
    ([], "run", "", ("skipped", "not reached: no phase of the run list ran on this cluster")),
], ids=["a-failed-phase-fails-the-cluster", "the-failure-names-the-phase-document", "a-change-is-changed",
        "destroy-deleting-is-changed", "status-compares-so-ok", "validate-compares-so-ok", "not-ready-is-read-so-ok",
        "phases-that-ran-are-ok", "resumed-phases-do-not-count", "only-resumed-is-skipped",
        "never-reached-after-a-stop-is-skipped", "no-phase-here-is-skipped"])
def test_cluster_outcome(records, mode, stopped_by, expected):
    outcome = cluster_outcome(records, mode, PHASES, stopped_by)
    assert (outcome["result"], outcome["msg"]) == expected


def test_every_host_of_the_play_has_an_outcome_from_its_own_records():
    outcomes = cluster_outcomes([rec("apps", "changed", "a"), rec("apps", "failed", "b", msg="boom")], ["a", "b", "c"],
                                "run", PHASES, "apps")
    assert {host: outcome["result"] for host, outcome in outcomes.items()} == {
        "a": "changed", "b": "failed", "c": "skipped"}
    assert outcomes["b"]["msg"].startswith("phase apps failed on cluster b: boom")


@pytest.mark.parametrize("outcome, expected", [
    ({"result": "ok", "msg": "run: apps"}, {"changed": False, "msg": "run: apps"}),
    ({"result": "changed", "msg": "changed: apps"}, {"changed": True, "msg": "changed: apps"}),
    ({"result": "failed", "msg": "phase apps failed"}, {"changed": False, "failed": True, "msg": "phase apps failed"}),
    ({"result": "skipped", "msg": "not reached"},
     {"changed": False, "skipped": True, "skip_reason": "not reached", "msg": "not reached"}),
    ({}, {"changed": False, "skipped": True, "skip_reason": "not reached: no phase of the run list ran on this cluster",
          "msg": "not reached: no phase of the run list ran on this cluster"}),
], ids=["ok-is-ok", "changed-is-changed", "failed-fails-the-task", "skipped-skips-the-task",
        "a-host-without-an-outcome-is-skipped"])
def test_task_result(outcome, expected):
    assert task_result(outcome) == expected
