# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.apply: server-side apply of a bundle, ApplySet prune, readiness wait; or, with
``state: absent``, deletion of the objects the bundle names.

Thin: arguments are validated here, the bundle is rendered and the cluster's
kubeconfig resolved, then ``module_utils.kube.apply`` does the work.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.kube.absent import delete_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import (
    ABSENT, APPLY_OPTIONS_SPEC, apply_bundle, apply_options)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import BundleAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import AUTH_ARGUMENT_SPEC, resolve_for_task

ARGUMENT_SPEC = {**AUTH_ARGUMENT_SPEC, **APPLY_OPTIONS_SPEC}
EXTRA_CONNECTIONS = 4  # live-state reads run beside the apply workers


class ActionModule(BundleAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def execute(self, args, task_vars):
        bundle = self.render_task_bundle(args, task_vars)
        resolution = resolve_for_task(self, task_vars, args)
        options = apply_options(args, namespace=args["namespace"] or resolution.namespace or "default",
                                check_mode=bool(self._task.check_mode), diff=bool(self._task.diff))
        with api_client(resolution.config, pool_maxsize=options.concurrency + EXTRA_CONNECTIONS,
                        environ=self.environ) as api:
            if options.state == ABSENT:
                report = delete_bundle(ApiSession(api), bundle, options)
            else:
                report = apply_bundle(ApiSession(api), bundle, options)
        result = report.result()
        if options.state == ABSENT and not report.failure:
            result["msg"] = report.message
        result["kubeconfig"] = resolution.summary()
        if report.warnings:
            result["warnings"] = [f"API server: {text}" for text in report.warnings]
        if report.failure:
            result.update(failed=True, msg=report.failure)
        return result
