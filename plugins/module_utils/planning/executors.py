# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What each executor accepts: whether it needs a source, and the options it takes.

Options are described with Ansible's argument spec format and checked with
Ansible's own validator, so a phase's options fail the same way a task's
arguments would, but at plan time and naming the document. The ``apply`` and
``wait`` executors take the options of the ``phasekit.kube.apply`` and
``phasekit.kube.wait`` actions; their argument specs are handed in by the
caller (they live with those actions), see ``executor_registry``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.phasekit.kube.plugins.module_utils import compat
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import (
    HELM_MUTUALLY_EXCLUSIVE, HELM_OPTIONS_SPEC, check_helm_options, check_values_files)
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import SECRET_OPTIONS as HELM_SECRET_OPTIONS
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import HIDDEN
from ansible_collections.phasekit.kube.plugins.module_utils.planning.command import (
    COMMAND_PHASE_SPEC,
    check_command_phase_options,
    command_phase_paths,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.container import (
    CONTAINER_SPEC,
    ENGINES,
    check_container_options,
    container_mount_paths,
)

ALL_OPTIONS = "*"
SOURCE_REQUIRED = "required"
SOURCE_OPTIONAL = "optional"
SOURCE_NONE = "none"

# Arguments an executor action takes that a phase does not set through its options:
# the bundle comes from the phase's source, the cluster from the phase's cluster.
NOT_PHASE_OPTIONS = frozenset({"src", "definition", "kubeconfig", "context"})


@dataclass(frozen=True)
class Executor:
    """One executor: its source rule and its options' argument spec (``None``: any mapping)."""

    name: str
    source: str = SOURCE_NONE
    inline_source: bool = False            # source may be inline objects (a list or a mapping)
    spec: dict | None = field(default=None)
    secret_options: tuple = ()             # options whose values are never shown (ALL_OPTIONS: every one)
    renders_bundle: bool = False           # its source is a bundle of objects (plan action render shows it)
    check: object = None                   # options -> None; raises PhasekitError on values the spec cannot judge
    source_option: str | None = None       # the option a source path stands for (helm: chart_ref)
    runs_on_controller: bool = True        # False: a task file the role includes on each host (tasks)
    nested_paths: Callable[[dict, str], dict] | None = None  # options with the paths inside them made absolute
    programs: tuple = ()                   # programs it needs on the controller's PATH (a tuple: any one of them)
    check_files: object = None             # options, paths absolute -> None; raises PhasekitError for a bad file

    def shown_options(self, options: dict) -> dict:
        """The options as plans show them: values that may hold secrets (a command's env and stdin, the free-form
        options of a task file) replaced by ``***``, their keys kept."""
        hidden = set(options) if ALL_OPTIONS in self.secret_options else set(self.secret_options)
        shown = {}
        for key, value in options.items():
            if key not in hidden:
                shown[key] = value
            elif isinstance(value, dict):
                shown[key] = {name: HIDDEN for name in value}
            else:
                shown[key] = HIDDEN
        return shown

    def check_options(self, options: dict, base_dir: str) -> tuple[dict, list[str]]:
        """Options converted to their types (relative paths made absolute), and error messages."""
        if self.spec is None:
            return dict(options), []
        argument_spec = self.spec.get("argument_spec", {})
        validator = ArgumentSpecValidator(
            argument_spec,
            mutually_exclusive=self.spec.get("mutually_exclusive"),
            required_together=self.spec.get("required_together"),
            required_one_of=self.spec.get("required_one_of"),
            required_if=self.spec.get("required_if"),
            required_by=self.spec.get("required_by"),
        )
        result = validator.validate(dict(options))
        canonical = option_names(argument_spec)
        unknown = sorted(str(name) for name in options if name not in canonical)
        errors = [compat.argument_error(error) for error in result.error_messages
                  if "Supported parameters include" not in error]
        if unknown:
            errors.insert(0, f"unsupported options: {', '.join(unknown)}; supported options are: "
                             f"{', '.join(sorted(argument_spec)) or 'none'}")
        if not errors and self.check is not None:
            try:
                self.check(result.validated_parameters)
            except PhasekitError as err:
                errors.append(str(err))
        checked = {}
        for given in options:
            key = canonical.get(given)
            if key is None:
                continue
            value = result.validated_parameters.get(key, options[given])
            checked[key] = absolute_paths(argument_spec[key], value, base_dir)
        if self.nested_paths is not None:
            checked = self.nested_paths(checked, base_dir)
        if not errors and self.check_files is not None:
            try:
                self.check_files(checked)
            except PhasekitError as err:
                errors.append(str(err))
        return checked, errors


def option_names(argument_spec: dict) -> dict[str, str]:
    """Every name an option may be given by (its aliases too) -> its own name."""
    names = {}
    for name, rule in argument_spec.items():
        names[name] = name
        for alias in rule.get("aliases") or ():
            names[alias] = name
    return names


def absolute_paths(rule: dict, value, base_dir: str):
    """A ``path`` option (or a list of paths) made absolute relative to the phase's document."""
    def absolute(path):
        if isinstance(path, str) and not os.path.isabs(path):
            return os.path.normpath(os.path.join(base_dir, path))
        return path

    if rule.get("type") == "path":
        return absolute(value)
    if rule.get("type") == "list" and rule.get("elements") == "path" and isinstance(value, list):
        return [absolute(path) for path in value]
    return value


HELM_PHASE_SPEC = {"argument_spec": HELM_OPTIONS_SPEC, "mutually_exclusive": HELM_MUTUALLY_EXCLUSIVE}

KUBECONFIG_SPEC = {
    "argument_spec": {
        "host": {"type": "str", "required": True},
    },
}


def executor_registry(apply_spec: dict | None = None, wait_spec: dict | None = None, apply_check=None,
                      wait_check=None) -> dict[str, Executor]:
    """Every executor by name. ``apply_spec``/``wait_spec``: the actions' argument specs (``None``: any options);
    ``apply_check``/``wait_check``: their checks of values a spec cannot judge (wait timeouts, conditions).
    A helm phase's source is its chart (a directory or a packaged .tgz); a chart in a repository is given
    by the options chart_ref and chart_repo_url instead."""
    executors = [
        Executor("apply", SOURCE_REQUIRED, True, phase_options(apply_spec), check=apply_check, renders_bundle=True),
        Executor("wait", SOURCE_REQUIRED, True, phase_options(wait_spec), check=wait_check, renders_bundle=True),
        Executor("kubeconfig", SOURCE_NONE, False, KUBECONFIG_SPEC),
        Executor("command", SOURCE_OPTIONAL, False, COMMAND_PHASE_SPEC, secret_options=("env", "stdin", "env_files"),
                 check=check_command_phase_options, nested_paths=command_phase_paths),
        Executor("helm", SOURCE_OPTIONAL, False, HELM_PHASE_SPEC, check=check_helm_options,
                 secret_options=HELM_SECRET_OPTIONS, source_option="chart_ref", check_files=check_values_files),
        # an image run with podman or docker as a KRM function: the source's documents on its standard input
        Executor("container", SOURCE_OPTIONAL, True, CONTAINER_SPEC, check=check_container_options,
                 secret_options=("env",), nested_paths=container_mount_paths, programs=(ENGINES,)),
        # options: free-form, for the user's task file
        Executor("tasks", SOURCE_REQUIRED, False, None, secret_options=(ALL_OPTIONS,), runs_on_controller=False),
    ]
    return {executor.name: executor for executor in executors}


def phase_options(argument_spec: dict | None) -> dict | None:
    """The part of an action's argument spec that phases set through ``options``."""
    if argument_spec is None:
        return None
    return {"argument_spec": {key: value for key, value in argument_spec.items() if key not in NOT_PHASE_OPTIONS}}
