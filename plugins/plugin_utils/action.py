# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What every phasekit.kube action plugin shares: it runs on the controller, validates its
arguments against one spec, and turns a PhasekitError into a failed result for people."""

from __future__ import annotations

import os
import traceback
from collections.abc import Mapping

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import remove_on_signals
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import kubeconfig_credentials
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.plugin_utils.environment import TaskEnvironment, task_environment
from ansible_collections.phasekit.kube.plugins.plugin_utils.templates import render_template_file, vault_values


MAX_MESSAGE = 4000  # a 100,000-character object name must not become a 900 KB message


def readable(message: str) -> str:
    """A message cut to a length people read, saying how much was left out."""
    if len(message) <= MAX_MESSAGE:
        return message
    return f"{message[:MAX_MESSAGE]}... ({len(message) - MAX_MESSAGE} more characters)"


def strings_given_as_collections(spec: dict, args: dict) -> str | None:
    """A message for a ``str`` option given a list or a dictionary. Ansible would turn ``context: [ctx1]`` into
    the string "['ctx1']" and the error would be about a context of that name; say the type is wrong instead."""
    for name, option in spec.items():
        value = args.get(name)
        if option.get("type", "str") == "str" and isinstance(value, (list, dict)):
            kind = "a list" if isinstance(value, list) else "a dictionary"
            return f"option {name}: expected a string, got {kind}"
    return None


def error_result(err: Exception, scrub) -> dict:
    """The failed result of an action whose work raised ``err``, masked by ``scrub``.

    A PhasekitError is shown as it is worded. Any other error (Ansible's, a bug) may quote a value the task was
    handed (a token Python could not dump): its kind, message and traceback (shown at -vvv) are masked too.
    """
    if isinstance(err, PhasekitError):
        return {"failed": True, "changed": False, "msg": readable(scrub(str(err)))}
    kind = "" if isinstance(err, AnsibleError) else f"unexpected error ({type(err).__name__}): "
    return {"failed": True, "changed": False, "msg": readable(scrub(f"{kind}{err}")),
            "exception": scrub(traceback.format_exc())}


class PhasekitAction(ActionBase):
    """Base of the collection's actions: subclasses set the spec and implement ``execute``."""

    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    ARGUMENT_SPEC: dict = {}
    MUTUALLY_EXCLUSIVE: list = []
    REQUIRED_ONE_OF: list = []
    PLAIN_ARGS = False  # True: arguments become plain dicts/lists (objects are dumped as JSON and YAML)
    _rendered_templates = False  # set once render_task_bundle rendered a .j2 manifest with the task's variables
    _masks: Masks | None = None  # what the task handed out (kubeconfig credentials, helm values), hidden in results
    # the task's environment: keyword over the controller's environment (see plugin_utils.environment), set by run
    environ: Mapping = os.environ
    task_environment: TaskEnvironment = TaskEnvironment()

    def run(self, tmp=None, task_vars=None):
        remove_on_signals()  # an interrupted run leaves no kubeconfig or client key on disk
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        wrong = strings_given_as_collections(self.ARGUMENT_SPEC, self._task.args)
        if wrong:
            return {"failed": True, "changed": False, "msg": wrong}
        args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC,
                                           mutually_exclusive=self.MUTUALLY_EXCLUSIVE,
                                           required_one_of=self.REQUIRED_ONE_OF)[1]
        if self.PLAIN_ARGS:
            # imported here: planning actions must not pay for the kubernetes client import
            from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import to_plain
            args = to_plain(args)
        self._rendered_templates = False
        self._masks = Masks()
        try:
            self.task_environment = task_environment(self._task, self._templar)
            self.environ = self.task_environment.environ
            result.update(self.execute(args, task_vars))
        except Exception as err:  # pylint: disable=broad-exception-caught
            return error_result(err, lambda value: self._scrubbed(value, task_vars))
        if isinstance(result.get("msg"), str):
            result["msg"] = readable(result["msg"])
        return self._scrubbed(result, task_vars)

    def _scrubbed(self, value, task_vars: dict):
        """``value`` without what the task handed out (``hand_out``) nor, after the task's templates were rendered,
        its vault-encrypted values (in objects, diffs, messages) wherever the templates carried them."""
        masks = Masks().update(self._masks) if self._masks else Masks()
        if self._rendered_templates:
            masks.add(*vault_values(task_vars))
        return masks.scrub(value)

    def hand_out(self, kubeconfig: dict | None = None, masks: Masks | None = None) -> None:
        """Note a kubeconfig given to a program (a command, helm), whose credentials it may print, and other
        ``masks`` (helm values, never shown): all are hidden in the task's result and messages."""
        if kubeconfig:
            self._masks.add(*kubeconfig_credentials(kubeconfig))
        if masks:
            self._masks.update(masks)

    def execute(self, args: dict, task_vars: dict) -> dict:
        """The action's work on validated arguments; raises PhasekitError for bad input."""
        raise NotImplementedError

    def render_task_bundle(self, args: dict, task_vars: dict) -> list:
        """The task's bundle: ``src`` found like other file arguments (role files/, playbook dir), or ``definition``.
        Its ``.j2`` manifests are rendered with the task's variables, as ``ansible.builtin.template`` would."""
        if args["src"] is None:
            return render_bundle(definition=args["definition"])

        def render(path: str) -> str:
            self._rendered_templates = True
            return render_template_file(self._templar, path, task_vars, what="template")

        try:
            path = self._find_needle("files", args["src"])
        except AnsibleError:
            base_dir = task_vars.get("playbook_dir") or self._loader.get_basedir()
            # reports the path it looked for
            return render_bundle(src=args["src"], base_dir=base_dir, render_template=render)
        return render_bundle(src=path, render_template=render)


class BundleAction(PhasekitAction):
    """An action on the objects of a bundle: ``src`` (files, a directory, a kustomization) or ``definition``, one of
    them (``apply``, ``wait``)."""

    MUTUALLY_EXCLUSIVE = [["src", "definition"]]
    REQUIRED_ONE_OF = [["src", "definition"]]
    PLAIN_ARGS = True
