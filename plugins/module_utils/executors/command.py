# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The command executor: a program run on the controller with the host's kubeconfig (and others it names)."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import kubeconfig_credentials
from ansible_collections.phasekit.kube.plugins.module_utils.phases.command import kubeconfig_in
from ansible_collections.phasekit.kube.plugins.module_utils.phases.outputs import FROM_STDOUT
from ansible_collections.phasekit.kube.plugins.module_utils.templating import is_template_text


class Command(ExecutorKind):
    name = "command"
    output_sources = (FROM_STDOUT,)
    builds_env_dirs = True

    def run(self, work, phase: dict, host: str):
        return work.run_command_phase(phase, host)

    def writes_outside_session(self, options: dict) -> bool:
        return True

    def content(self, work, phase: dict, host: str) -> dict:
        return {**super().content(work, phase, host), **work.command_content(phase)}

    def add_masks(self, work, phase: dict, masks) -> None:
        """The secrets of every host whose kubeconfig it is handed (``kubeconfigs``), or that a file written for it
        holds (``env_files``)."""
        options = phase.get("options") or {}
        for name in (options.get("kubeconfigs") or {}).values():
            if isinstance(name, str) and name.strip() and not is_template_text(name):
                masks.add(*work.access.secrets(name.strip()))
        for text in (options.get("env_files") or {}).values():
            masks.add(*kubeconfig_credentials(kubeconfig_in(text)))

    def other_kubeconfigs(self, options: dict):
        return options.get("kubeconfigs")
