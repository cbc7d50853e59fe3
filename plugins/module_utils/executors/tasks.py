# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The tasks executor: the user's task file, included by the role on each host (never on the controller); its
free-form options are for the task file, and its runs are not recorded."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import STATUS, VALIDATE, Outcome
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import TASKS_EXECUTOR, ExecutorKind


class Tasks(ExecutorKind):
    name = TASKS_EXECUTOR
    runs_on_controller = False
    recorded = False
    source_wanted = "a task file"
    source_is_file = True

    def run(self, work, entry, context):
        # Prepared here, run by the role on the host: the task file gets this resolution.
        if work.mode in (VALIDATE, STATUS):
            return Outcome(skipped=True, msg="tasks phases do not run in a dry run")
        work.access.resolution(context.host)
        return Outcome()

    def writes_outside_session(self, options: dict) -> bool:
        return True
