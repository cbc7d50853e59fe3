# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.kube_command: run a command with KUBECONFIG set for this host's cluster.

The host's kubeconfig is resolved (or reused, once per run), written to a
private 0600 file for the duration of the command, and removed afterwards,
even when the command fails.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.planning.command import (
    COMMAND_SPEC,
    command_argv,
    command_failure_message,
    run_command,
)
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import PhasekitAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import AUTH_ARGUMENT_SPEC, resolve_for_task

ARGUMENT_SPEC = {**COMMAND_SPEC["argument_spec"], **AUTH_ARGUMENT_SPEC}
MUTUALLY_EXCLUSIVE = COMMAND_SPEC["mutually_exclusive"]
REQUIRED_ONE_OF = COMMAND_SPEC["required_one_of"]


class ActionModule(PhasekitAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = MUTUALLY_EXCLUSIVE
    REQUIRED_ONE_OF = REQUIRED_ONE_OF

    def execute(self, args, task_vars):
        argv = command_argv(args["argv"], args["cmd"], args["shell"])
        if self._task.check_mode:
            # A command's effect cannot be predicted; nothing is resolved or run.
            return {"changed": False, "skipped": True, "cmd": argv, "msg": "not run in check mode"}
        resolution = resolve_for_task(self, task_vars, args)
        self.hand_out(resolution.config)  # what the command prints may hold its credentials
        done = run_command(argv, kubeconfig=resolution.config, env=args["env"], chdir=args["chdir"],
                           stdin=args["stdin"], timeout=args["timeout"], environ=self.environ)
        result = {"changed": True, **done.to_dict(), "kubeconfig": resolution.summary()}
        if done.rc != 0:
            result.update(failed=True, msg=command_failure_message(done))
        return result
