# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The wait executor: waits until a bundle's objects are ready (kstatus), reading only."""

from __future__ import annotations

import dataclasses

from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import (
    EXTRA_CONNECTIONS, STATUS, VALIDATE, Outcome)
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import fetch_live
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import plan_objects
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import WAIT_OPTIONS_SPEC, wait_for_bundle, wait_rules
from ansible_collections.phasekit.kube.plugins.module_utils.planning.plan_changes import named_first


class Wait(ExecutorKind):
    name = "wait"
    reads_only = True
    watches_objects = True

    def run(self, work, entry, context):
        if work.mode == VALIDATE:
            return Outcome(skipped=True, msg="nothing was applied, so there is nothing to wait for")
        if work.check_mode and work.mode != STATUS:
            return preview_wait(work, entry, context)
        values = option_values(WAIT_OPTIONS_SPEC, entry.options)
        if work.mode == STATUS:
            values["timeout"] = 0  # the state as it is now
        else:
            values["timeout"] = work.capped(values["timeout"], context)
        rules = dataclasses.replace(wait_rules(values, where=f"phase {entry.name} options"),
                                    on_poll=work.watching(entry, context))
        bundle = work.bundle(entry, context)
        resolution = work.access.resolution(context.host)
        namespace = (entry.options or {}).get("namespace") or resolution.namespace or "default"
        outcomes, problem = wait_for_bundle(work.access.session(context.host, EXTRA_CONNECTIONS), bundle, rules, namespace)
        return Outcome(not_ready=problem is not None, msg=problem or "", details={"ready": problem is None})

    def content(self, work, entry, context) -> dict:
        return {"objects": work.bundle_digest(entry, context)}

    def readiness(self, work, entry, context):
        options = entry.options or {}
        return option_values(WAIT_OPTIONS_SPEC, options), options.get("namespace")


def preview_wait(work, entry, context) -> Outcome:
    """Check mode: the objects the wait would wait for, and which of them earlier phases of this preview would
    create or change. Nothing is waited for: an object not there yet is no failure in a preview."""
    host = context.host
    bundle = work.bundle(entry, context)
    namespace = (entry.options or {}).get("namespace") or work.access.resolution(host).namespace \
        or "default"
    carried = work.carried(host)
    session = work.access.session(host, EXTRA_CONNECTIONS)
    try:
        planned = plan_objects(bundle, Discovery(session), namespace, carried=carried)
    except PhasekitError as err:
        # a kind neither the cluster nor an earlier phase of this preview serves (a command or chart may bring
        # it): said, not failed, as the preview cannot know
        note = f"would wait for {len(bundle)} object(s); not all can be looked up now: {err}"
        return Outcome(msg=note, details={"preview": note})
    earlier = [one.target for one in planned if carried.changed_earlier(one.target.key) is not None]
    others = [one.target for one in planned if carried.changed_earlier(one.target.key) is None]
    live = fetch_live(session, others) if others else {}
    # not there, and no apply of this preview makes it: a command, chart or task file may; else the wait times out
    absent = [target.describe() for target in others if target.key in live and live[target.key] is None]
    said = [f"{len(earlier)} of them created or changed by earlier phases of this preview"] if earlier else []
    if absent:
        said.append(f"{len(absent)} not there now and created by no earlier apply of this preview: "
                    f"{named_first(absent)}")
    note = f"would wait for {len(planned)} object(s)" + (f" ({'; '.join(said)})" if said else "")
    shown = named_first([one.describe() for one in planned])
    return Outcome(msg=f"{note}: {shown}" if planned else note, details={"preview": note})
