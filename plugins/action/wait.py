# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.wait: wait until a bundle's objects are ready (kstatus + JMESPath conditions).

Thin: arguments are validated here, the bundle is rendered and the cluster's
kubeconfig resolved, then ``module_utils.kube.wait`` polls all objects together.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.phasekit.kube.plugins.action.apply import render_task_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import (
    WAIT_OPTIONS_SPEC, wait_for_bundle, wait_rules)
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import (
    AUTH_ARGUMENT_SPEC, resolve_for_task, to_plain)

ARGUMENT_SPEC = {
    **AUTH_ARGUMENT_SPEC,
    "src": {"type": "str"},
    "definition": {"type": "raw"},
    "namespace": {"type": "str"},
    **WAIT_OPTIONS_SPEC,
}
MUTUALLY_EXCLUSIVE = [["src", "definition"]]
REQUIRED_ONE_OF = [["src", "definition"]]


class ActionModule(ActionBase):
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        super().run(tmp, task_vars)
        args = to_plain(self.validate_argument_spec(  # plain data: objects are dumped as JSON and YAML
            argument_spec=ARGUMENT_SPEC, mutually_exclusive=MUTUALLY_EXCLUSIVE, required_one_of=REQUIRED_ONE_OF)[1])
        try:
            rules = wait_rules(args, where="wait")
            bundle = render_task_bundle(self, args, task_vars)
            resolution = resolve_for_task(self, task_vars, args)
            with api_client(resolution.config) as api:
                outcomes, problem = wait_for_bundle(ApiSession(api), bundle, rules,
                                                    args["namespace"] or resolution.namespace or "default")
        except PhasekitError as err:
            return {"failed": True, "msg": str(err)}
        result = {"changed": False, "ready": problem is None, "objects": [o.entry() for o in outcomes],
                  "kubeconfig": resolution.summary()}
        if problem:
            result.update(failed=True, msg=problem)
        return result
