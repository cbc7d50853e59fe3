# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The helm executor: a chart's release installed, upgraded or uninstalled (or its objects applied: ``helm_mode``)."""

from __future__ import annotations

import dataclasses

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.executors.apply import apply_objects
from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import (
    DESTROY, EXTRA_CONNECTIONS, Outcome, host_diffs, teardown_outcome)
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import (
    ABSENT, HELM_OPTIONS_SPEC, MODE_APPLY, duration_seconds, helm_request, is_template, plain_values_file)
from ansible_collections.phasekit.kube.plugins.module_utils.helm.release import values_masks
from ansible_collections.phasekit.kube.plugins.module_utils.helm.run import (
    release_apply_arguments, release_values, remove_rendered_release, render_release, request_chart, run_release)
from ansible_collections.phasekit.kube.plugins.module_utils.helm.stored import stored_manifest_objects
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import (
    WaitRules, look_now, not_ready_message, waiting_summary)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import FROM_VALUES

HELM_TIMEOUT = 300  # helm's own default --timeout (5m)
HELM_PREVIEW = {"installed": "would be installed", "upgraded": "would be upgraded", "uninstalled": "would be uninstalled",
                "unchanged": "as asked, nothing to do", "absent": "absent, nothing to do"}


class Helm(ExecutorKind):
    name = "helm"
    undone_by_destroy = True
    output_sources = (FROM_VALUES,)
    renders_release = True

    def run(self, work, entry, context):
        return run_helm(work, entry, context)

    def writes_outside_session(self, options: dict) -> bool:
        return options.get("helm_mode") != MODE_APPLY  # the helm CLI writes; applied objects go through the session

    def keeps_lists(self, options: dict) -> bool:
        return options.get("helm_mode") == MODE_APPLY

    def content(self, work, entry, context) -> dict:
        """A release's merged values (values files rendered for the host) and its chart's digest (every file of
        it: templates, dependencies, default values), the chart made local once per run."""
        host = context.host
        request = helm_request(release_options(entry), namespace="", where=f"phase {entry.name}",
                               read_values_file=lambda path: values_file(work, host, path))
        content = {"values": request.values}
        if request.chart is not None and request.state != ABSENT:
            content["chart"] = request_chart(request, work.charts, work.environ_of(host)).digest
        return content

    def destroy(self, work, entry, context):
        return run_helm(work, dataclasses.replace(entry, options={**(entry.options or {}), "release_state": ABSENT}),
                        context)

    def source_values(self, work, entry, context) -> dict:
        """The release values on the host (computed: the chart's defaults under the given ones)."""
        host = context.host
        resolution = work.access.resolution(host)
        request = helm_request(release_options(entry), namespace=resolution.namespace or "default",
                               where=f"phase {entry.name}", read_values_file=lambda path: values_file(work, host, path))
        try:
            return release_values(request, kubeconfig=resolution.config, charts=work.charts,
                                  environ=work.environ_of(host))
        except PhasekitError as err:  # helm's message may quote values
            raise PhasekitError(values_masks(request).scrub(str(err))) from None


def release_options(entry) -> dict:
    """The run entry's helm options with their defaults; the release is named after the phase unless named."""
    values = option_values(HELM_OPTIONS_SPEC, entry.options)
    values["name"] = values["name"] or entry.name.rsplit("/", 1)[-1]
    return values


def values_file(work, host: str, path: str) -> str:
    return work.access.render_template(host, path) if is_template(path) else plain_values_file(path)


def run_helm(work, entry, context) -> Outcome:
    host = context.host
    values = release_options(entry)
    if work.time_left(context) is not None:
        given = duration_seconds(str(values["wait_timeout"])) if values["wait_timeout"] else None
        values["wait_timeout"] = f"{max(1, int(work.capped(given, context, default=HELM_TIMEOUT)))}s"
    resolution = work.access.resolution(host)
    request = dataclasses.replace(
        helm_request(values, namespace=resolution.namespace or "default", where=f"phase {entry.name}",
                     read_values_file=lambda path: values_file(work, host, path)),
        hide_every_value=True)  # run records others read: no value of the release in diffs or messages
    if work.mode == DESTROY:
        work.plan_objects(host).releases.add((request.namespace, request.name))
    if request.mode == MODE_APPLY and request.state == ABSENT:
        return teardown_outcome(remove_rendered_release(work.access.session(host, EXTRA_CONNECTIONS), request,
                                                        dry_run=work.dry_run, ours=work.plan_objects(host)))
    if request.mode == MODE_APPLY:
        bundle = render_release(request, kubeconfig=resolution.config, charts=work.charts,
                                environ=work.environ_of(host))
        outcome = apply_objects(work, entry, context, bundle, release_apply_arguments(request), request.namespace)
        hidden = values_masks(request)  # the rendered objects hold them: never in diffs or messages
        outcome.msg, outcome.details = hidden.scrub(outcome.msg), hidden.scrub(outcome.details)
        return outcome
    return run_release_cli(work, entry, context, request, resolution)


def run_release_cli(work, entry, context, request, resolution) -> Outcome:
    """The release installed, upgraded or uninstalled by the helm CLI (a dry run: what it would do)."""
    host = context.host
    if request.wait and not work.dry_run:
        # while helm waits (``--wait``): a look at the objects of the release's newest stored revision
        work.set_waiting(entry, context, lambda: waiting_summary(release_now(work, host, request)))
    report = run_release(request, kubeconfig=resolution.config, charts=work.charts, check_mode=work.dry_run,
                         diff=work.diff, environ=work.environ_of(host))
    # kubernetes.core's keys (helm's output, the values) stay out of run records and summaries
    details = {key: value for key, value in report.result().items()
               if key not in ("changed", "diff", "status", "stdout", "stderr", "command")}
    if report.diffs:
        details["diff"] = host_diffs(host, report.diffs)
    if work.dry_run:  # the plan summary's word for a release helm decides on (its objects are helm's)
        details["preview"] = f"release {request.namespace}/{request.name}: {HELM_PREVIEW.get(report.action, report.action)}"
    hidden = values_masks(request)  # a plan's output goes to run records others read: no value of the release
    failure = report.failure
    if failure is not None and request.wait and not work.dry_run:
        failure += release_not_ready(work, host, request)  # helm names no object it waited for in vain
    return Outcome(changed=report.changed, failed=failure is not None,
                   msg=hidden.scrub(failure or ""), details=hidden.scrub(details))


def release_now(work, host: str, request) -> list:
    """The state now of each object of the release's newest stored revision (``WaitOutcome``)."""
    session = work.access.session(host, EXTRA_CONNECTIONS)
    objects = stored_manifest_objects(session, request.name, request.namespace)
    if not objects:
        return []
    return look_now(session, render_bundle(definition=objects), WaitRules(0), request.namespace)


def release_not_ready(work, host: str, request) -> str:
    """After helm's ``--wait`` failed: which objects of the release are not Current, and why ("" if none or
    they cannot be read: helm's own message stands)."""
    try:
        found = not_ready_message(release_now(work, host, request), 0, now=True)
    except Exception:  # pylint: disable=broad-exception-caught
        return ""
    return f"; now {found}" if found else ""
