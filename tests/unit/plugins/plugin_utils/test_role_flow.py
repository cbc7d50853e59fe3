# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which task files of the role phasekit.kube.plan a run includes: one row per rule."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.plugin_utils.role_flow import RoleChoices, plan_reading, role_flow

PLAIN = ["apply", "wait"]
WITH_TASKS = ["apply", "tasks"]


@pytest.mark.parametrize("choices, executors, engine, view", [
    (RoleChoices("list"), PLAIN, "list.yml", "list.yml"),
    (RoleChoices("tree"), WITH_TASKS, "tree.yml", "tree.yml"),
    (RoleChoices("render"), PLAIN, "render.yml", "render.yml"),
    (RoleChoices("history"), PLAIN, "history.yml", "history.yml"),
    (RoleChoices("validate", offline=True), PLAIN, "validate.yml", "validate.yml"),
    (RoleChoices("validate"), PLAIN, "validate_online.yml", "validate_online.yml"),
    (RoleChoices("validate"), WITH_TASKS, "validate.yml", "validate.yml"),
    (RoleChoices("run"), PLAIN, "run.yml", "run.yml"),
    (RoleChoices("run", show_plan=False), PLAIN, "phases.yml", "phases.yml"),
    (RoleChoices("run"), WITH_TASKS, "list.yml", "list.yml"),
    (RoleChoices("run", show_plan=False), WITH_TASKS, "nothing.yml", "nothing.yml"),
    (RoleChoices("status"), PLAIN, "phases.yml", "phases.yml"),
    (RoleChoices("status"), WITH_TASKS, "nothing.yml", "nothing.yml"),
    (RoleChoices("destroy"), WITH_TASKS, "phases.yml", "phases.yml"),
    (RoleChoices("run", host_results=True), WITH_TASKS, "steps_now.yml", "list.yml"),
    (RoleChoices("run", host_results=True), PLAIN, "run.yml", "run.yml"),
    (RoleChoices("list", host_results=True), WITH_TASKS, "list.yml", "list.yml"),
], ids=["list-shows-the-table", "tree-shows-the-tree", "render-shows-the-bundles", "history-shows-the-runs",
        "offline-validate-stops-at-the-plan", "online-validate-then-the-dry-run", "validate-with-tasks-phases-steps",
        "run-shows-the-plan-then-runs", "run-without-the-plan-runs", "run-with-tasks-phases-shows-the-plan-then-steps",
        "run-with-tasks-phases-without-the-plan-no-task", "status-runs", "status-with-tasks-phases-steps",
        "destroy-runs-no-task-file", "host-results-steps-in-the-engine", "host-results-without-tasks-phases-as-a-run",
        "host-results-of-a-view-is-the-view"])
def test_the_engine_includes_the_file_of_the_action(choices, executors, engine, view):
    flow = role_flow(choices, executors)
    assert (flow.engine_tasks, flow.view_tasks) == (engine, view)


@pytest.mark.parametrize("choices, executors, switch, expected", [
    (RoleChoices("run"), PLAIN, "runs_phases", True),
    (RoleChoices("validate", offline=True), PLAIN, "runs_phases", False),
    (RoleChoices("validate"), PLAIN, "runs_phases", True),
    (RoleChoices("render"), PLAIN, "runs_phases", False),
    (RoleChoices("status"), PLAIN, "dry_run", True),
    (RoleChoices("validate"), PLAIN, "dry_run", True),
    (RoleChoices("run"), PLAIN, "dry_run", False),
    (RoleChoices("destroy"), WITH_TASKS, "has_tasks_phases", False),
    (RoleChoices("list"), WITH_TASKS, "has_tasks_phases", True),
    (RoleChoices("list"), WITH_TASKS, "runs_steps", False),
    (RoleChoices("run"), WITH_TASKS, "runs_steps", True),
    (RoleChoices("run", host_results=True), WITH_TASKS, "steps_in_engine", True),
    (RoleChoices("run"), WITH_TASKS, "steps_in_engine", False),
], ids=["run-runs-phases", "offline-validate-runs-none", "online-validate-runs-phases", "render-runs-none",
        "status-is-a-dry-run", "validate-is-a-dry-run", "run-writes", "destroy-has-no-tasks-phases",
        "tasks-phases-found-for-views", "a-view-runs-no-steps", "a-run-with-tasks-phases-steps",
        "host-results-steps-in-the-engine", "without-host-results-steps-after-it"])
def test_switches(choices, executors, switch, expected):
    assert role_flow(choices, executors).to_dict()[switch] is expected


CONTROLLER_STEP = {"controller": True, "phases": [{"name": "apps"}]}
TASKS_STEP = {"controller": False, "phases": [{"name": "look"}]}


@pytest.mark.parametrize("choices, executors, steps, expected", [
    (RoleChoices("run"), WITH_TASKS, [CONTROLLER_STEP, TASKS_STEP], ["step.yml", "step_tasks.yml"]),
    (RoleChoices("status"), WITH_TASKS, [CONTROLLER_STEP, TASKS_STEP], ["step.yml", "step.yml"]),
    (RoleChoices("validate"), WITH_TASKS, [TASKS_STEP], ["step.yml"]),
    (RoleChoices("run"), PLAIN, [CONTROLLER_STEP], []),
    (RoleChoices("list"), WITH_TASKS, [CONTROLLER_STEP, TASKS_STEP], []),
], ids=["a-tasks-step-includes-its-task-file", "status-runs-no-task-file", "validate-runs-no-task-file",
        "no-steps-without-tasks-phases", "a-view-has-no-steps"])
def test_each_step_names_its_task_file(choices, executors, steps, expected):
    flow = role_flow(choices, executors, steps)
    assert [step["tasks"] for step in flow.steps] == expected
    assert [step["phases"] for step in flow.steps] == [step["phases"] for step in steps][:len(expected)]


# what the role's plan task read the plan for, per plan_action (the role's Jinja until issue 38 moved it here)
READ_AS = {  # action: (runnable, render, per_cluster and render_helm, check_all)
    "list": (False, False, False, False), "tree": (False, False, False, False), "render": (False, True, True, False),
    "validate": (True, True, False, True), "run": (True, False, False, False), "status": (True, False, False, False),
    "destroy": (True, False, False, False), "history": (True, False, False, False),
}


@pytest.mark.parametrize("action", READ_AS)
def test_the_plan_is_read_for_what_the_action_does(action):
    runnable, render, per_cluster, check_all = READ_AS[action]
    reading = plan_reading(RoleChoices(action), partial_rollout=False, render_dest="out")
    assert reading == {"runnable": runnable, "render": render, "per_cluster": per_cluster, "render_helm": per_cluster,
                       "check_all": check_all, "partial_rollout": action == "status",
                       "render_dest": "out" if action == "render" else ""}


def test_partial_rollout_given_holds_for_every_action():
    assert all(plan_reading(RoleChoices(action), True, "")["partial_rollout"] for action in READ_AS)
