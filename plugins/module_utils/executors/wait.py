# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The wait executor: waits until a bundle's objects are ready (kstatus), reading only."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import WAIT_OPTIONS_SPEC


class Wait(ExecutorKind):
    name = "wait"
    reads_only = True
    watches_objects = True

    def run(self, work, phase: dict, host: str):
        return work.run_wait(phase, host)

    def content(self, work, phase: dict, host: str) -> dict:
        return {"objects": work.bundle_digest(phase, host)}

    def readiness(self, work, phase: dict, host: str):
        options = phase.get("options") or {}
        return option_values(WAIT_OPTIONS_SPEC, options), options.get("namespace")
