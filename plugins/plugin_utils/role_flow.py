# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The rules of the role phasekit.kube.plan: which of its task files a run includes, for the action asked.

The role holds only the includes; ``phasekit.kube.phase_plan`` (option ``flow``) returns these choices once per run,
worked out here, as ``flow`` in its result. Two rules shape the choice (see docs/architecture.md, "The plan role"): a
run shows only tasks that do something for the action asked, and a task runs per host only on the hosts that need one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of

VIEWS = ("list", "tree", "render", "history")  # actions that show the plan and run nothing: a file each
RUNS = ("run", "status", "destroy")  # actions that run the phases (and validate against the clusters)
DRY_RUNS = ("validate", "status")  # the executors run without changing anything


# phase_plan's option flow: the role variables RoleChoices holds.
FLOW_OPTIONS = {"action": {"type": "str", "required": True}, "offline": {"type": "bool", "default": False},
                "show_plan": {"type": "bool", "default": True}, "host_results": {"type": "bool", "default": False}}


@dataclass(frozen=True)
class RoleChoices:
    """What the role variables ask: plan_action, plan_offline, plan_show_plan, plan_host_results."""

    action: str
    offline: bool = False
    show_plan: bool = True
    host_results: bool = False


@dataclass(frozen=True)
class RoleFlow:
    """The role's choices for one run (the role reads them as ``plan_result.flow``)."""

    runs_phases: bool  # run, status, destroy and (online) validate; list, tree, render, offline validate stop at the plan
    dry_run: bool  # validate and status
    has_tasks_phases: bool  # the plan has tasks phases (never for destroy: it runs no task file)
    runs_steps: bool  # a plan with tasks phases runs step by step, on every host (steps.yml)
    steps_in_engine: bool  # plan_host_results and steps: the engine's include runs on every host (steps_now.yml)
    view_tasks: str  # what the action shows before its steps
    engine_tasks: str  # the engine's one include (plan.yml)
    steps: list  # the plan's steps (steps.yml loops over them), each with the task file that runs it (tasks)

    def to_dict(self) -> dict:
        return asdict(self)


def role_flow(choices: RoleChoices, executors: list[str], steps: list[dict] = ()) -> RoleFlow:
    """The task files and switches of a run of ``choices.action`` over a plan whose selected phases have
    ``executors`` and run in ``steps`` (``runner.plan_steps``)."""
    runs_phases = choices.action in RUNS or (choices.action == "validate" and not choices.offline)
    # a phase whose task file the role includes on each host makes the run go in steps
    has_tasks_phases = choices.action != "destroy" and any(not kind_of(name).runs_on_controller for name in executors)
    runs_steps = runs_phases and has_tasks_phases
    steps_in_engine = choices.host_results and runs_steps
    view = view_tasks(choices, runs_phases, runs_steps)
    dry_run = choices.action in DRY_RUNS
    return RoleFlow(runs_phases=runs_phases, dry_run=dry_run, has_tasks_phases=has_tasks_phases,
                    runs_steps=runs_steps, steps_in_engine=steps_in_engine, view_tasks=view,
                    engine_tasks="steps_now.yml" if steps_in_engine else view,
                    steps=[{**step, "tasks": step_tasks(step, dry_run)} for step in steps] if runs_steps else [])


def step_tasks(step: dict, dry_run: bool) -> str:
    """A step's task file: built-in phases run on the controller (step.yml); a tasks phase's step also includes its
    task file on its clusters (step_tasks.yml), except in a dry run (status, validate), where task files do not
    run."""
    return "step.yml" if step.get("controller") or dry_run else "step_tasks.yml"


def view_tasks(choices: RoleChoices, runs_phases: bool, runs_steps: bool) -> str:
    """The engine's task file for the action asked: each holds only what that action prints or runs, so no task of a
    common run is skipped. run.yml and validate_online.yml are list.yml and validate.yml followed by phases.yml; a
    plan with tasks phases runs its phases after the engine, per host (steps.yml), and nothing.yml holds no task."""
    if choices.action in VIEWS:
        return f"{choices.action}.yml"
    if choices.action == "validate":
        return "validate.yml" if not runs_phases or runs_steps else "validate_online.yml"
    if choices.action == "run" and choices.show_plan:
        return "list.yml" if runs_steps else "run.yml"
    return "nothing.yml" if runs_steps else "phases.yml"


def plan_reading(choices: RoleChoices, partial_rollout: bool, render_dest: str | None) -> dict:
    """phase_plan's options for the action asked: what the plan is read for. The views read a plan that may not run
    here; render and validate render the bundles (render per cluster, with helm's releases, to ``render_dest``);
    validate checks every phase of the documents; status reads part of a rollout as well."""
    action = choices.action
    return {"runnable": action not in ("list", "tree", "render"), "render": action in ("render", "validate"),
            "per_cluster": action == "render", "render_helm": action == "render", "check_all": action == "validate",
            "partial_rollout": bool(partial_rollout) or action == "status",
            "render_dest": render_dest if action == "render" else ""}
