# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.kubeconfig: resolve a cluster host's kubeconfig, show where it came from, write it."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import apply_write
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import kubeconfig_lock
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import normalize_on_conflict
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import plan_dest
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import plan_merge_into
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import PhasekitAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import AUTH_ARGUMENT_SPEC
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import RESOLUTION_KEY
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import resolve_for_task

ARGUMENT_SPEC = {
    **AUTH_ARGUMENT_SPEC,
    "dest": {"type": "path"},
    "merge_into": {"type": "path"},
    "on_conflict": {"type": "raw", "default": "replace"},
    "set_current_context": {"type": "bool", "default": False},
    "minify": {"type": "bool", "default": True},
    "remember": {"type": "bool", "default": False},
}
MUTUALLY_EXCLUSIVE = [["dest", "merge_into"]]


class ActionModule(PhasekitAction):
    """Thin: precedence and resolution live in plugin_utils, merging and writing in module_utils."""

    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = MUTUALLY_EXCLUSIVE

    def execute(self, args, task_vars):
        return self._resolve_and_write(args, task_vars)

    def _resolve_and_write(self, args: dict, task_vars: dict) -> dict:
        target = args["dest"] or args["merge_into"]
        on_conflict = normalize_on_conflict(args["on_conflict"])
        resolution = resolve_for_task(self, task_vars, args, keep_merged=bool(target) and not args["minify"])
        outcome = {"changed": False, "reused": resolution.reused, **resolution.summary()}
        if target:
            config = resolution.merged if resolution.merged is not None else resolution.config
            if args["dest"]:
                plan = plan_dest(target, config)
                if not self._task.check_mode:
                    apply_write(plan, create_directory=False)
            else:
                # read, merge and replace under the file's lock: hosts run this in parallel
                with kubeconfig_lock(target):
                    plan = plan_merge_into(target, config, on_conflict, args["set_current_context"])
                    if not self._task.check_mode:
                        apply_write(plan)
            outcome.update(changed=plan.changed, dest=target)
            if self._task.diff:
                outcome["diff"] = plan.diff()
        if args["remember"]:
            # the credentials go to the registered variable only; Ansible censors the displayed result
            outcome[RESOLUTION_KEY] = resolution.to_memory()
            outcome["_ansible_no_log"] = True
        return outcome
