# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The tasks executor: the user's task file, included by the role on each host (never on the controller); its
free-form options are for the task file, and its runs are not recorded."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind

NAME = "tasks"


class Tasks(ExecutorKind):
    name = NAME
    runs_on_controller = False
    recorded = False
    source_wanted = "a task file"
    source_is_file = True

    def run(self, work, phase: dict, host: str):
        return work.run_tasks(phase, host)

    def writes_outside_session(self, options: dict) -> bool:
        return True
