# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.helm: a Helm release installed, upgraded or uninstalled on this host's cluster.

Thin: the options are kubernetes.core.helm's names; ``module_utils.helm`` does
the work (one path with ``helm`` phases). helm sees the host's resolved
kubeconfig through a private 0600 file removed afterwards.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleError

from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import REMOTE_PREFIXES, ChartCache
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import (
    ABSENT, HELM_MUTUALLY_EXCLUSIVE, HELM_OPTIONS_SPEC, MODE_APPLY, helm_request, is_template, plain_values_file)
from ansible_collections.phasekit.kube.plugins.module_utils.helm.release import release_masks
from ansible_collections.phasekit.kube.plugins.module_utils.helm.run import (
    release_apply_arguments, remove_rendered_release, render_release, run_release, unresolved_kubeconfig_result)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import apply_bundle, apply_options
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import PhasekitAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import AUTH_ARGUMENT_SPEC, resolve_for_task
from ansible_collections.phasekit.kube.plugins.plugin_utils.templates import render_template_file

# kubernetes.core.helm's own aliases of the kubeconfig and context options (its helm_common_options fragment)
ARGUMENT_SPEC = {**AUTH_ARGUMENT_SPEC, **HELM_OPTIONS_SPEC,
                 "kubeconfig": {**AUTH_ARGUMENT_SPEC["kubeconfig"], "aliases": ["kubeconfig_path"]},
                 "context": {**AUTH_ARGUMENT_SPEC["context"], "aliases": ["kube_context"]}}
EXTRA_CONNECTIONS = 4


class ActionModule(PhasekitAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = [*HELM_MUTUALLY_EXCLUSIVE, ["context", "ca_cert"]]  # as kubernetes.core.helm
    PLAIN_ARGS = True

    def execute(self, args, task_vars):
        args = dict(args)
        # the values are the task's templated arguments and values files: the vault-encrypted values they may carry
        # are hidden in the result (ordinary values are shown, as kubernetes.core shows them)
        self._rendered_templates = True
        if args["chart_ref"] and not args["chart_repo_url"]:
            # kubernetes.core's chart_ref is of type path: ~ and $VARIABLES expanded
            chart_ref = os.path.expanduser(os.path.expandvars(args["chart_ref"]))
            args["chart_ref"] = self._local_path(chart_ref, task_vars, must_exist=False)
        args["values_files"] = [self._local_path(path, task_vars) for path in args["values_files"] or []]
        try:
            resolution = resolve_for_task(self, task_vars, args)
        except PhasekitError as err:
            return unresolved_kubeconfig_result(err, args, self.environ)
        request = helm_request(args, namespace=resolution.namespace or "default",
                               read_values_file=lambda path: self._values_file(path, task_vars))
        self.hand_out(resolution.config, release_masks(request))
        check_mode, diff = bool(self._task.check_mode), bool(self._task.diff)
        with ChartCache() as charts:
            if request.mode == MODE_APPLY:
                result = self._apply(request, resolution, charts, check_mode, diff)
            else:
                report = run_release(request, kubeconfig=resolution.config, charts=charts, check_mode=check_mode,
                                     diff=diff, environ=self.environ)
                self.hand_out(masks=report.masks)  # the live release's values too
                result = report.result()
                if report.failure:
                    result.update(failed=True, msg=report.failure)
        result["kubeconfig"] = resolution.summary()
        return result

    def _apply(self, request, resolution, charts, check_mode: bool, diff: bool) -> dict:
        if request.state == ABSENT:
            with api_client(resolution.config, pool_maxsize=EXTRA_CONNECTIONS, environ=self.environ) as api:
                report = remove_rendered_release(ApiSession(api), request, dry_run=check_mode)
            result = report.result()
            if report.failure:
                result.update(failed=True, msg=report.failure)
            return result
        bundle = render_release(request, kubeconfig=resolution.config, charts=charts, environ=self.environ)
        options = apply_options(release_apply_arguments(request), namespace=request.namespace,
                                check_mode=check_mode, diff=diff)
        with api_client(resolution.config, pool_maxsize=options.concurrency + EXTRA_CONNECTIONS,
                        environ=self.environ) as api:
            report = apply_bundle(ApiSession(api), bundle, options)
        result = report.result()
        if report.warnings:
            result["warnings"] = [f"API server: {text}" for text in report.warnings]
        if report.failure:
            result.update(failed=True, msg=report.failure)
        return result

    def _values_file(self, path: str, task_vars) -> str:
        if is_template(path):
            return render_template_file(self._templar, path, task_vars, what="values file")
        return plain_values_file(path)

    def _local_path(self, path: str, task_vars, must_exist: bool = True) -> str:
        """A file argument found as other file arguments are (the role's files/, the playbook's directory);
        a chart reference that is no local path (repo/chart, oci://...) is kept as written."""
        if path.startswith(REMOTE_PREFIXES) or os.path.isabs(path):
            return path
        try:
            return self._find_needle("files", path)
        except AnsibleError:
            base_dir = task_vars.get("playbook_dir") or self._loader.get_basedir()
            candidate = os.path.join(base_dir, path)
            return candidate if must_exist or os.path.exists(candidate) else path
