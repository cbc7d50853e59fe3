# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.wait: wait until a bundle's objects are ready (kstatus + JMESPath conditions).

Thin: arguments are validated here, the bundle is rendered and the cluster's
kubeconfig resolved, then ``module_utils.kube.wait`` polls all objects together.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import (
    WAIT_OPTIONS_SPEC, wait_for_bundle, wait_rules)
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import BundleAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import AUTH_ARGUMENT_SPEC, resolve_for_task

ARGUMENT_SPEC = {
    **AUTH_ARGUMENT_SPEC,
    "src": {"type": "str"},
    "definition": {"type": "raw"},
    "namespace": {"type": "str"},
    **WAIT_OPTIONS_SPEC,
}


class ActionModule(BundleAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def execute(self, args, task_vars):
        rules = wait_rules(args, where="wait")
        if self._task.check_mode:
            # a preview: what earlier tasks would create was not created, so the state now is looked at once and
            # what is not there or not ready is said, not failed (as a plan's wait phase previews)
            rules = dataclasses.replace(rules, timeout=0)
        bundle = self.render_task_bundle(args, task_vars)
        resolution = resolve_for_task(self, task_vars, args)
        with api_client(resolution.config, environ=self.environ) as api:
            outcomes, problem = wait_for_bundle(ApiSession(api), bundle, rules,
                                                args["namespace"] or resolution.namespace or "default")
        result = {"changed": False, "ready": problem is None, "objects": [o.entry() for o in outcomes],
                  "kubeconfig": resolution.summary()}
        if problem and self._task.check_mode:
            result.update(msg=f"check mode: not waited for (looked once): {problem}")
        elif problem:
            result.update(failed=True, msg=problem)
        return result
