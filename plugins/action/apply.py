# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.apply: server-side apply of a bundle, ApplySet prune, readiness wait.

Thin: arguments are validated here, the bundle is rendered and the cluster's
kubeconfig resolved, then ``module_utils.kube.apply`` does the work.
"""

from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import (
    APPLY_OPTIONS_SPEC, apply_bundle, apply_options)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import (
    AUTH_ARGUMENT_SPEC, resolve_for_task, to_plain)

ARGUMENT_SPEC = {**AUTH_ARGUMENT_SPEC, **APPLY_OPTIONS_SPEC}
MUTUALLY_EXCLUSIVE = [["src", "definition"]]
REQUIRED_ONE_OF = [["src", "definition"]]
EXTRA_CONNECTIONS = 4  # live-state reads run beside the apply workers


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
            bundle = render_task_bundle(self, args, task_vars)
            resolution = resolve_for_task(self, task_vars, args)
            options = apply_options(args, namespace=args["namespace"] or resolution.namespace or "default",
                                    check_mode=bool(self._task.check_mode), diff=bool(self._task.diff))
            with api_client(resolution.config, pool_maxsize=options.concurrency + EXTRA_CONNECTIONS) as api:
                report = apply_bundle(ApiSession(api), bundle, options)
        except PhasekitError as err:
            return {"failed": True, "msg": str(err)}
        result = report.result()
        result["kubeconfig"] = resolution.summary()
        if report.warnings:
            result["warnings"] = [f"API server: {text}" for text in report.warnings]
        if report.failure:
            result.update(failed=True, msg=report.failure)
        return result


def render_task_bundle(action: ActionBase, args: dict, task_vars: dict) -> list:
    """The task's bundle: ``src`` found like other file arguments (role files/, playbook dir), or ``definition``."""
    if args["src"] is None:
        return render_bundle(definition=args["definition"])
    try:
        path = action._find_needle("files", args["src"])  # pylint: disable=protected-access
    except AnsibleError:
        base_dir = task_vars.get("playbook_dir") or action._loader.get_basedir()  # pylint: disable=protected-access
        return render_bundle(src=args["src"], base_dir=base_dir)  # reports the path it looked for
    return render_bundle(src=path)
