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
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import APPLY_OPTIONS_SPEC
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import redact
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import WAIT_OPTIONS_SPEC
from ansible_collections.phasekit.kube.plugins.module_utils.phases import views
from ansible_collections.phasekit.kube.plugins.module_utils.phases.documents import inline_documents, read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.phases.executors import executor_registry
from ansible_collections.phasekit.kube.plugins.module_utils.phases.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.phases.planner import Plan, build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import PhasekitAction

ARGUMENT_SPEC = {
    "src": {"type": "list", "elements": "path"},
    "plan": {"type": "raw"},
    "name": {"type": "str"},
    "only": {"type": "list", "elements": "str", "default": []},
    "skip": {"type": "list", "elements": "str", "default": []},
    "start_at": {"type": "str"},
    "render": {"type": "bool", "default": False},
}
MUTUALLY_EXCLUSIVE = [["src", "plan"]]
REQUIRED_ONE_OF = [["src", "plan"]]

BUNDLE_EXECUTORS = ("apply", "wait")


class ActionModule(PhasekitAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = MUTUALLY_EXCLUSIVE
    REQUIRED_ONE_OF = REQUIRED_ONE_OF

    def execute(self, args, task_vars):
        plan = build_plan(
            self._documents(args, task_vars),
            executors=executor_registry(**bundle_action_specs()),
            inventory=Inventory.from_task_vars(task_vars),
            name=args["name"], only=args["only"], skip=args["skip"], start_at=args["start_at"])
        result = plan_result(plan)
        if args["render"]:
            result["rendered"] = render_bundles(plan)
        return result

    def _documents(self, args, task_vars):
        # Relative paths are relative to the playbook, whichever role or include asks.
        base_dir = task_vars.get("playbook_dir") or self._loader.get_basedir()
        if args["plan"] is not None:
            return inline_documents(args["plan"], base_dir)
        return read_paths(args["src"], base_dir)


def plan_result(plan: Plan) -> dict:
    """What the action returns: the run list, every phase of the plan, and the views of it."""
    return {
        "changed": False,
        "plan": plan.name,
        "phases": [planned.to_dict() for planned in plan.selected],
        "all_phases": [planned.to_dict() for planned in plan.phases],
        "table": views.list_lines(plan),
        "tree": views.tree_lines(plan),
        "mermaid": views.mermaid_lines(plan),
    }


def render_bundles(plan: Plan) -> list[dict]:
    """Each selected bundle phase's objects, rendered without a cluster, Secret values hidden."""
    rendered = []
    for planned in plan.selected:
        phase = planned.phase
        if phase.executor not in BUNDLE_EXECUTORS or phase.source is None:
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


def bundle_action_specs() -> dict:
    """The argument specs of phasekit.kube.apply and phasekit.kube.wait, for checking phase options.

    Taken from the module_utils the actions build their specs from: importing the actions would import
    the kubernetes client, which planning neither needs nor should wait for.
    """
    return {"apply_spec": dict(APPLY_OPTIONS_SPEC), "wait_spec": {"namespace": {"type": "str"}, **WAIT_OPTIONS_SPEC}}
