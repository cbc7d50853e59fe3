# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The kubeconfig executor: a child cluster's kubeconfig read from its sources (a Secret in its parent, waited for)
and kept for the later phases of the run. It only reads, and reaches no cluster through its own kubeconfig."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind
from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import Outcome


class Kubeconfig(ExecutorKind):
    """Placed on the inventory host its ``host`` option names; never locks or checks a cluster it shares."""

    name = "kubeconfig"
    reaches_cluster = False
    reads_only = True
    placed_by_host_option = True

    def known_after_run_note(self, host: str, where: str) -> str:
        return f"would resolve {host}'s kubeconfig from {where}: not there yet, known after the run"

    def run(self, work, entry, context):
        resolution = work.access.resolution(context.host)  # the host is the child: read now, kept for the run
        return Outcome(details={"context": resolution.context, "server": resolution.server})
