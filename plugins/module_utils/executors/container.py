# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The container executor: an image run with podman or docker as a KRM function, the source's documents on its
standard input."""

from __future__ import annotations

import os

from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import Outcome, whole_seconds
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.planning.container import (
    CONTAINER_SPEC, container_failure_message, run_container, shown_items, write_output)


class Container(ExecutorKind):
    name = "container"

    def run(self, work, entry, context):
        host = context.host
        values = option_values(CONTAINER_SPEC["argument_spec"], entry.options)
        if work.dry_run:
            # what a container does cannot be predicted: not run by validate, status or check mode (airshipctl's
            # --dry-run did not run it either)
            return Outcome(skipped=True, msg="containers do not run in a dry run",
                           details={"preview": f"would run container image {values['image']}"})
        items = [one.obj for one in work.bundle(entry, context)] if entry.source is not None else []
        resolution = work.access.resolution(host)
        done = run_container(values, items, kubeconfig=resolution.config, context=resolution.context,
                             mounts_base=os.getcwd(), timeout=whole_seconds(work.capped(values["timeout"], context)),
                             environ=work.environ_of(host))
        if done.rc != 0:
            return Outcome(changed=True, failed=True, msg=container_failure_message(done, values["image"]),
                           details={"rc": done.rc})
        details: dict = {"rc": 0}
        if values["output_dir"]:
            details["files"] = write_output(done.items, values["output_dir"])
        elif done.items:
            details["output"] = shown_items(done.items)
        return Outcome(changed=True, details=details)

    def writes_outside_session(self, options: dict) -> bool:
        return True

    def content(self, work, entry, context) -> dict:
        """Its bundle (or source file), and the directories it mounts read-only."""
        content = {"objects": work.bundle_digest(entry, context)} if entry.source is not None else \
            super().content(work, entry, context)
        content["mounts"] = {mount["src"]: work.files.of(os.path.join(os.getcwd(), os.path.expanduser(mount["src"])))
                             for mount in (entry.options or {}).get("mounts") or []
                             if isinstance(mount, dict) and (mount.get("type") or "bind") == "bind"
                             and not mount.get("rw") and isinstance(mount.get("src"), str)}
        return content
