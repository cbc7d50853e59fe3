# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The apply executor: a bundle's objects applied server-side (or deleted: ``state: absent``) on the host's cluster."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import ABSENT as STATE_ABSENT
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import APPLY_OPTIONS_SPEC
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import WAIT_OPTIONS_SPEC


def apply_arguments(phase: dict) -> dict:
    """The apply options of a phase; pruning without a named set uses the phase's full name (apps/hello ->
    apps.hello; every run of a phase the plan repeats is the same set)."""
    args = option_values(APPLY_OPTIONS_SPEC, phase.get("options"))
    if args["prune"] and not args["applyset"]:
        args["applyset"] = phase.get("full_name", phase["name"]).replace("/", ".")
    return args


class Apply(ExecutorKind):
    name = "apply"
    only_through_session = True
    watches_objects = True
    undone_by_destroy = True

    def keeps_lists(self, options: dict) -> bool:
        return True

    def deletes(self, options: dict) -> bool:
        return options.get("state") == STATE_ABSENT

    def content(self, work, phase: dict, host: str) -> dict:
        return {"objects": work.bundle_digest(phase, host)}

    def run(self, work, phase: dict, host: str):
        return work.run_apply(phase, host)

    def destroy(self, work, phase: dict, host: str):
        return work.destroy_apply(phase, host)

    def readiness(self, work, phase: dict, host: str):
        args = apply_arguments(phase)
        return option_values(WAIT_OPTIONS_SPEC, args["wait"] if isinstance(args["wait"], dict) else {}), args["namespace"]

    def output_namespace(self, phase: dict) -> str | None:
        return apply_arguments(phase)["namespace"]
