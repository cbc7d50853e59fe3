# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.phase_plan: phase and plan documents -> the ordered run list.

Reads no kubeconfig and contacts no cluster: the inventory is read from the
task's variables (host and group names, and ``kube_parent`` of hosts that a
``kubeconfig`` phase names), nothing else.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import redact
from ansible_collections.phasekit.kube.plugins.module_utils.phases import views
from ansible_collections.phasekit.kube.plugins.module_utils.phases.planner import Plan
from ansible_collections.phasekit.kube.plugins.module_utils.phases.runner import plan_steps
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import PhasekitAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import (
    PLAN_SOURCE_MUTUALLY_EXCLUSIVE, PLAN_SOURCE_REQUIRED_ONE_OF, PLAN_SOURCE_SPEC, executors, plan_for_task)

ARGUMENT_SPEC = {**PLAN_SOURCE_SPEC, "render": {"type": "bool", "default": False}}


class ActionModule(PhasekitAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = PLAN_SOURCE_MUTUALLY_EXCLUSIVE
    REQUIRED_ONE_OF = PLAN_SOURCE_REQUIRED_ONE_OF

    def execute(self, args, task_vars):
        plan = plan_for_task(self, args, task_vars)
        result = plan_result(plan)
        if args["render"]:
            result["rendered"] = render_bundles(plan)
        return result


def plan_result(plan: Plan) -> dict:
    """What the action returns: the run list, every phase of the plan, and the views of it."""
    registry = executors()
    phases = [planned.to_dict(shown=registry) for planned in plan.selected]
    return {
        "changed": False,
        "plan": plan.name,
        "phases": phases,
        "steps": plan_steps(phases),
        "all_phases": [planned.to_dict(shown=registry) for planned in plan.phases],
        "table": views.list_lines(plan),
        "tree": views.tree_lines(plan),
        "mermaid": views.mermaid_lines(plan),
    }


def render_bundles(plan: Plan) -> list[dict]:
    """Each selected bundle phase's objects, rendered without a cluster, Secret values hidden."""
    rendered, by_name = [], executors()
    for planned in plan.selected:
        phase = planned.phase
        if phase.executor not in by_name or not by_name[phase.executor].renders_bundle or phase.source is None:
            continue
        try:
            if phase.source_path is not None:
                objects = render_bundle(src=phase.source_path)
            else:
                objects = render_bundle(definition=phase.source)
        except PhasekitError as err:
            raise PhasekitError(f"phase {phase.full_name} ({phase.origin.label()}): {err}") from None
        rendered.append({
            "phase": phase.full_name,
            "cluster": phase.cluster,
            "source": views.source_label(phase.source),
            "objects": [redact(bundle_object.obj) for bundle_object in objects],
        })
    return rendered
