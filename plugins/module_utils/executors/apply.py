# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The apply executor: a bundle's objects applied server-side (or deleted: ``state: absent``) on the host's cluster."""

from __future__ import annotations

import dataclasses

from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import (
    EXTRA_CONNECTIONS, STATUS, Outcome, api_warnings, host_diffs, run_bookkeeping, teardown_outcome, timeout_of)
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.kube.absent import delete_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import ABSENT as STATE_ABSENT
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import APPLY_OPTIONS_SPEC, apply_bundle, apply_options
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import deleted_changes
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import DEFAULT_TIMEOUT as TEARDOWN_TIMEOUT
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import PlanObjects, Teardown
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import WAIT_OPTIONS_SPEC

APPLIED = "applied"  # what an apply keeps for its phase's outputs: the objects it applied


def apply_arguments(entry) -> dict:
    """The apply options of a run entry; pruning without a named set uses the phase's full name (apps/hello ->
    apps.hello; every run of a phase the plan repeats is the same set)."""
    args = option_values(APPLY_OPTIONS_SPEC, entry.options)
    if args["prune"] and not args["applyset"]:
        args["applyset"] = entry.full_name.replace("/", ".")
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

    def content(self, work, entry, context) -> dict:
        return {"objects": work.bundle_digest(entry, context)}

    def run(self, work, entry, context):
        args = apply_arguments(entry)
        bundle = work.bundle(entry, context)
        namespace = args["namespace"] or work.access.resolution(context.host).namespace or "default"
        if args["state"] == STATE_ABSENT:
            return delete_named(work, entry, context, bundle, args, namespace)
        return apply_objects(work, entry, context, bundle, args, namespace)

    def destroy(self, work, entry, context):
        args = apply_arguments(entry)
        host = context.host
        namespace = args["namespace"] or work.access.resolution(host).namespace or "default"
        session = work.access.session(host, EXTRA_CONNECTIONS)
        teardown = Teardown(session, Discovery(session), dry_run=work.dry_run,
                            timeout=work.capped(timeout_of(args["wait"]), context, default=TEARDOWN_TIMEOUT),
                            ours=work.plan_objects(host), delete_nonempty_namespaces=work.delete_nonempty_namespaces)
        if args["applyset"]:
            report = teardown.applyset(args["applyset"], tooling=args["applyset_tooling"], namespace=namespace,
                                       owner=work.owner(entry, context))
        else:
            report = teardown.bundle(work.bundle(entry, context), namespace=namespace, owner=work.owner(entry, context))
        outcome = teardown_outcome(report)
        if report.left_to_others:
            outcome.details["warnings"] = [f"{host}: {text}" for text in report.left_to_others]
        return outcome

    def readiness(self, work, entry, context):
        args = apply_arguments(entry)
        return option_values(WAIT_OPTIONS_SPEC, args["wait"] if isinstance(args["wait"], dict) else {}), args["namespace"]

    def output_namespace(self, entry) -> str | None:
        return apply_arguments(entry)["namespace"]


def shared_concurrency(work, entry, context, options):
    """The apply options with their concurrency within the cluster's share of the step's request pool (shared by
    the clusters the runner's barrier works on now)."""
    if work.shared is None:
        return options
    share = work.shared.per_cluster(entry, context.running)
    return dataclasses.replace(options, concurrency=min(options.concurrency, share))


def delete_named(work, entry, context, bundle: list, args: dict, namespace: str) -> Outcome:
    """``state: absent``: the objects the bundle names deleted (``kube.absent``); a dry run (check mode, status,
    validate) says what would be, which status reports as drift."""
    options = apply_options(args, namespace=namespace, check_mode=work.dry_run, diff=work.diff)
    options = dataclasses.replace(shared_concurrency(work, entry, context, options), owner=work.owner(entry, context))
    host = context.host
    session = work.access.session(host, options.concurrency + EXTRA_CONNECTIONS)
    before = len(session.warnings)
    plan = work.records.run.plan if work.records is not None else None
    report = delete_bundle(session, bundle, options, ours=PlanObjects(bookkeeping=run_bookkeeping(plan)),
                           timeout=work.capped(options.wait.timeout if options.wait else None, context,
                                               default=TEARDOWN_TIMEOUT))
    result = report.result()
    details = {"state": STATE_ABSENT, "counts": result["counts"], "objects": result["objects"]}
    if work.dry_run and report.changed:
        details["drift"] = report.drift()
    if work.dry_run:
        details["changes"] = [change.to_dict() for change in deleted_changes(report.deleted)]  # the plan summary
    if report.diffs:
        details["diff"] = host_diffs(host, report.diffs)
    warnings = api_warnings(host, session, before)
    if warnings:
        details["warnings"] = warnings
    return Outcome(changed=report.changed, failed=report.failure is not None, msg=report.message,
                   objects_changed=result["counts"]["deleted"], details=details)


def apply_objects(work, entry, context, bundle: list, args: dict, namespace: str) -> Outcome:
    """The bundle's objects applied server-side (a dry run: previewed) on the context's host, as an outcome."""
    host = context.host
    options = run_options(work, entry, context, apply_options(args, namespace=namespace, check_mode=work.dry_run,
                                                              diff=work.diff))
    session = work.access.session(host, options.concurrency + EXTRA_CONNECTIONS)
    before = len(session.warnings)
    report = apply_bundle(session, bundle, options, pool=work.shared.pool if work.shared else None)
    # the lists its writes did not forget get their watch (ListMemory), when a later apply here may ask for them
    session.guard_kept(watch=work.keeps_lists_watched(entry, context))
    if options.carried is not None:
        options.carried.record(entry.name, report.objects)
    if entry.outputs:
        work.keep_for_outputs(entry, context, APPLIED, report.objects)
    counts = report.counts()
    details = {"counts": counts, **report_details(work, host, report)}
    warnings = api_warnings(host, session, before) + [f"{host}: {text}" for text in report.ownership]
    if report.ownership:
        details["ownership"] = report.ownership
    if warnings:
        details["warnings"] = warnings
    return Outcome(changed=report.changed, failed=report.failure is not None, msg=report.failure or "",
                   objects_changed=counts["created"] + counts["configured"] + counts["pruned"], details=details)


def run_options(work, entry, context, options):
    """An apply's options as this run applies them: status counts conflicts as drift, a wait within the phase's
    timeout (and noting what it waits for), the cluster's share of requests, who applies, a preview's state."""
    if work.mode == STATUS:
        options = dataclasses.replace(options, conflicts_are_drift=True)
    if options.wait is not None:
        options = dataclasses.replace(options, wait=dataclasses.replace(
            options.wait, timeout=work.capped(options.wait.timeout, context), on_poll=work.watching(entry, context)))
    return dataclasses.replace(shared_concurrency(work, entry, context, options), owner=work.owner(entry, context),
                               carried=work.carried(context.host))


def report_details(work, host: str, report) -> dict:
    """What an apply report adds to its outcome: a dry run's drift and changes, what was not checked, diffs."""
    details = {}
    if work.dry_run and report.changed:
        details["drift"] = report.drift()  # status and check mode: what differs, for the drift gate
    if work.dry_run:
        details["changes"] = [change.to_dict() for change in report.changes()]  # the plan summary's objects
    if report.not_checked():
        details["not_checked"] = report.not_checked()  # a preview: what only the plan's earlier phases make valid
    if report.diffs:
        details["diff"] = host_diffs(host, report.diffs)
    return details
