# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""One Helm request on one cluster, the one path the ``helm`` action and ``helm`` phases share.

``helm_mode: release`` (the default) leaves the release to helm: install,
upgrade or uninstall (``run_release``). ``helm_mode: apply`` only renders the
chart (``render_release``); the caller applies the objects with the apply
engine as an ApplySet named after the release, so ``kubectl`` sees the set and
there is one engine for charts and manifests alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.bundle import BundleObject
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import Chart, ChartCache, chart_dependencies
from ansible_collections.phasekit.kube.plugins.module_utils.helm.cli import HelmCli, HelmCommandError, pull_chart
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import (
    ABSENT, DEFAULT_BINARY, MODE_APPLY, HelmRequest, duration_seconds)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import APPLY_OPTIONS_SPEC, DEFAULT_TOOLING
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import DEFAULT_TIMEOUT as TEARDOWN_TIMEOUT
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import Teardown
from ansible_collections.phasekit.kube.plugins.module_utils.helm.release import (
    HelmReport, ensure_release, manifest_objects, release_masks, remove_release, template_argv, values_masks)

NAMESPACE_ORIGIN = "create_namespace"


def request_chart(request: HelmRequest, charts: ChartCache, environ: Mapping | None = None) -> Chart:
    """The request's chart, made local once per run."""
    if request.chart is None:
        raise PhasekitError(f"release {request.name}: chart_ref is required to install it")
    return charts.chart(request.chart, lambda source, into: pull_chart(request.binary, source, into, environ))


def run_release(request: HelmRequest, *, kubeconfig: dict, charts: ChartCache, check_mode: bool,
                diff: bool, environ: Mapping | None = None) -> HelmReport:
    """Install, upgrade or uninstall the release as ``request`` asks; a failed helm call is the report's failure,
    with the call's command line, output and error output, as kubernetes.core.helm reports it. helm runs with
    ``environ`` (the task's environment: over the controller's; default the controller's)."""
    with HelmCli(request.binary, kubeconfig, environ) as helm:
        if request.state == ABSENT:
            before = _prepare(helm, request, HelmReport(request.name, request.namespace, action=ABSENT))
            return before or remove_release(helm, request, check_mode=check_mode, diff=diff)
        report = HelmReport(request.name, request.namespace, masks=release_masks(request))
        before = _prepare(helm, request, report)
        if before is not None:
            return before
        try:
            chart = request_chart(request, charts, environ)
        except PhasekitError as err:
            return report.failed(err)
        done = ensure_release(helm, request, chart, check_mode=check_mode, diff=diff)
        done.warnings[:0] = report.warnings
        return done


def _prepare(helm: HelmCli, request: HelmRequest, report: HelmReport) -> HelmReport | None:
    """kubernetes.core's steps before the release: ``helm repo update`` (update_repo_cache) and, for a chart on
    disk, ``helm dependency update`` (dependency_update). The report of a failed step, or None."""
    try:
        if request.update_repo_cache:
            helm.repo_update()
        if request.state != ABSENT and request.dependency_update and request.chart is not None:
            _update_dependencies(helm, request, report)
    except PhasekitError as err:
        return report.failed(err)
    return None


def _update_dependencies(helm: HelmCli, request: HelmRequest, report: HelmReport) -> None:
    source = request.chart
    if not source.is_local:
        report.warnings.append("This is a not stable feature with 'chart_repo_url'. Please consider to use "
                               "dependency update with on-disk charts")
        if not request.replace:
            raise PhasekitError("'--dependency-update' hasn't been supported yet with 'helm upgrade'. "
                                "Please use 'helm install' instead by adding 'replace' option")
        return  # helm install --replace --dependency-update (upgrade_argv)
    if not os.path.exists(source.ref) or not chart_dependencies(source.ref):
        report.warnings.append("There is no dependencies block defined in Chart.yaml. Dependency update will not "
                               "be performed. Please consider add dependencies block or disable dependency_update "
                               "to remove this warning.")
        return
    # a packaged chart too, as kubernetes.core: helm then refuses it ("only unpacked charts can be updated")
    helm.call(["dependency", "update", source.ref], what=f"helm dependency update {source.ref}")


def release_apply_arguments(request: HelmRequest) -> dict:
    """The apply engine's options for a rendered release: an ApplySet named after the release, pruned, so that
    objects the chart no longer renders are deleted as helm would delete them; ``wait`` as helm's --wait."""
    args = {name: rule.get("default") for name, rule in APPLY_OPTIONS_SPEC.items()}
    args.update(prune=True, applyset=request.name, namespace=request.namespace)
    if request.wait:
        seconds = duration_seconds(request.wait_timeout) if request.wait_timeout else None
        args["wait"] = {"timeout": int(seconds)} if seconds is not None else True
    return args


def remove_rendered_release(session, request: HelmRequest, *, dry_run: bool, ours=None):
    """``helm_mode: apply`` with ``release_state: absent``: the release's ApplySet deleted (members, then parent).
    ``ours``: what the destroy deleted on this cluster so far (``teardown.PlanObjects``)."""
    seconds = duration_seconds(request.wait_timeout) if request.wait_timeout else None
    teardown = Teardown(session, Discovery(session), dry_run=dry_run,
                        timeout=TEARDOWN_TIMEOUT if seconds is None else seconds, ours=ours)
    return teardown.applyset(request.name, tooling=DEFAULT_TOOLING, namespace=request.namespace)


def render_release(request: HelmRequest, *, kubeconfig: dict, charts: ChartCache,
                   environ: Mapping | None = None) -> list:
    """The release's objects as ``helm template`` renders them (and its namespace when create_namespace)."""
    chart = request_chart(request, charts, environ)
    with HelmCli(request.binary, kubeconfig, environ) as helm:
        try:
            manifest = helm.run(template_argv(request, chart, helm.values_file(request.values)),
                                what=f"helm template {request.name}")
        except PhasekitError as err:
            raise PhasekitError(values_masks(request).scrub(str(err))) from None
    objects = manifest_objects(manifest, f"chart {chart.name}")
    if request.create_namespace and not any(one.kind == "Namespace" and one.name == request.namespace
                                            for one in objects):
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": request.namespace}}
        objects.insert(0, BundleObject(obj=namespace, origin=NAMESPACE_ORIGIN))
    return objects


def release_values(request: HelmRequest, *, kubeconfig: dict, charts: ChartCache,
                   environ: Mapping | None = None) -> dict:
    """The release's computed values (the chart's defaults under the given ones), as ``helm get values --all``
    shows them; for ``helm_mode: apply`` (no release is stored) those the release was rendered with."""
    with HelmCli(request.binary, kubeconfig, environ) as helm:
        if request.mode != MODE_APPLY:
            return helm.values(request.name, request.namespace, computed=True)
        chart = request_chart(request, charts, environ)
        text = helm.run(["show", "values", chart.path], what=f"helm show values {chart.name}")
    defaults = next(iter(yaml_io.load_all(text, f"the values of chart {chart.name}")), None)
    return coalesced(defaults if isinstance(defaults, dict) else {}, request.values)


def coalesced(defaults: dict, given: dict) -> dict:
    """``given`` over ``defaults`` as helm merges values: mappings key by key, anything else replaced, a null
    removing the default."""
    merged = dict(defaults)
    for key, value in given.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = coalesced(merged[key], value)
        else:
            merged[key] = value
    return merged


def template_release(request: HelmRequest, *, charts: ChartCache, environ: Mapping | None = None) -> list:
    """The release's objects as ``helm template`` renders them without a cluster (the plan action ``render``): no
    kubeconfig is read and no cluster asked; as with ``helm template`` alone, the chart's ``lookup`` calls render
    empty and ``.Capabilities`` are helm's defaults."""
    return render_release(request, kubeconfig=EMPTY_KUBECONFIG, charts=charts, environ=environ)


UNDEFINED_CONTEXT = re.compile(r"\bcontext '([^']+)' is not defined by any kubeconfig source")
EMPTY_KUBECONFIG = {"apiVersion": "v1", "kind": "Config", "clusters": [], "contexts": [], "users": []}


def unresolved_kubeconfig_result(err: PhasekitError, args: dict, environ: Mapping | None = None) -> dict:
    """kubernetes.core.helm's failure when the cluster cannot be named. phasekit resolves the kubeconfig before
    helm runs; for a context no source defines, helm is then asked as kubernetes.core asks it first (``helm list``
    of the release, in that context), so ``stderr``, ``stdout`` and ``command`` are helm's own and ``msg`` starts
    as kubernetes.core's, followed by phasekit's message (the known contexts, the sources read)."""
    message = str(err)
    result = {"failed": True, "changed": False, "msg": message, "stderr": message, "stdout": "", "command": ""}
    undefined = UNDEFINED_CONTEXT.search(message)  # named by the task, K8S_AUTH_CONTEXT or kube_context
    if undefined is None:
        return result
    context = undefined.group(1)
    try:
        with HelmCli(args.get("binary_path") or DEFAULT_BINARY, EMPTY_KUBECONFIG, environ) as helm:
            argv = ["list", "--output=yaml", "--filter", str(args.get("name") or ""), "--kube-context", context]
            if args.get("release_state") != ABSENT:
                argv.append("--deployed")
            elif helm.version[0] < 4:
                argv.append("--all")
            helm.call(argv, what="helm list")
    except HelmCommandError as failure:
        if failure.returncode is None:
            return result  # helm could not run (not found): phasekit's message alone
        output = failure.output
        result.update(stderr=output.stderr, stdout=output.stdout, command=output.command,
                      msg=f"Failure when executing Helm command. Exited {failure.returncode}.\nstdout: "
                          f"{output.stdout}\nstderr: {output.stderr}\n{message}")
    except PhasekitError:
        pass  # no helm to ask: phasekit's message alone
    return result
