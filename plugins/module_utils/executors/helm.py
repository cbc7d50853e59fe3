# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The helm executor: a chart's release installed, upgraded or uninstalled (or its objects applied: ``helm_mode``)."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import ABSENT, MODE_APPLY
from ansible_collections.phasekit.kube.plugins.module_utils.phases.outputs import FROM_VALUES


class Helm(ExecutorKind):
    name = "helm"
    undone_by_destroy = True
    output_sources = (FROM_VALUES,)
    renders_release = True

    def run(self, work, phase: dict, host: str):
        return work.run_helm(phase, host)

    def writes_outside_session(self, options: dict) -> bool:
        return options.get("helm_mode") != MODE_APPLY  # the helm CLI writes; applied objects go through the session

    def keeps_lists(self, options: dict) -> bool:
        return options.get("helm_mode") == MODE_APPLY

    def content(self, work, phase: dict, host: str) -> dict:
        return work.helm_content(phase, host)

    def destroy(self, work, phase: dict, host: str):
        return work.run_helm({**phase, "options": {**(phase.get("options") or {}), "release_state": ABSENT}}, host)
