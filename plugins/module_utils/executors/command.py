# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The command executor: a program run on the controller with the host's kubeconfig (and others it names)."""

from __future__ import annotations

import os
import shlex

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import (
    STATUS, VALIDATE, Outcome, whole_seconds)
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import ExecutorKind, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import kubeconfig_credentials
from ansible_collections.phasekit.kube.plugins.module_utils.planning.built_dirs import build_env_dirs
from ansible_collections.phasekit.kube.plugins.module_utils.planning.command import (
    COMMAND_PHASE_SPEC, changed_when_rule, command_argv, command_failure_message, command_success_message,
    kept_output, kubeconfig_in, run_command)
from ansible_collections.phasekit.kube.plugins.module_utils.records.fingerprint import command_words, uncomparable
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import FROM_STDOUT
from ansible_collections.phasekit.kube.plugins.module_utils.records.vocabulary import bundle_digest, recorded_message
from ansible_collections.phasekit.kube.plugins.module_utils.templating import is_template_text


class Command(ExecutorKind):
    name = "command"
    output_sources = (FROM_STDOUT,)
    builds_env_dirs = True

    def run(self, work, entry, context):
        return run_command_phase(work, entry, context)

    def writes_outside_session(self, options: dict) -> bool:
        return True

    def content(self, work, entry, context) -> dict:
        return {**super().content(work, entry, context), **command_content(work, entry)}

    def add_masks(self, work, entry, masks) -> None:
        """The secrets of every host whose kubeconfig it is handed (``kubeconfigs``), or that a file written for it
        holds (``env_files``)."""
        options = entry.options or {}
        for name in (options.get("kubeconfigs") or {}).values():
            if isinstance(name, str) and name.strip() and not is_template_text(name):
                masks.add(*work.access.secrets(name.strip()))
        for text in (options.get("env_files") or {}).values():
            masks.add(*kubeconfig_credentials(kubeconfig_in(text)))

    def other_kubeconfigs(self, options: dict):
        return options.get("kubeconfigs")


def phase_environment(entry, host: str) -> dict:
    """What a command phase sees besides its own ``env`` (KUBECONFIG is set by run_command)."""
    source = entry.source
    return {"PHASEKIT_PHASE": entry.name, "PHASEKIT_HOST": host,
            "PHASEKIT_SOURCE": source if isinstance(source, str) else ""}


def other_host(entry, host: str, variable: str, name) -> str:
    """The host a command phase's ``kubeconfigs`` entry names (rendered for ``host``: ``{{ kube_parent }}``)."""
    name = str(name or "").strip()
    if not name:
        raise PhasekitError(f"phase {entry.name} on cluster {host}: option kubeconfigs.{variable} names no host "
                            f"(a template that rendered empty, such as kube_parent unset on {host})")
    return name


def run_command_phase(work, entry, context) -> Outcome:
    host = context.host
    values = option_values(COMMAND_PHASE_SPEC["argument_spec"], entry.options)
    argv = command_argv(values["argv"], values["cmd"], values["shell"])
    preview = {"preview": f"would run: {shlex.join(argv)}"}  # what the plan summary says (masked with the rest)
    runs = not work.dry_run or (values["run_in_check_mode"] and work.mode != VALIDATE)  # declared read-only
    if not runs and work.mode == STATUS:
        return Outcome(skipped=True, msg="commands do not run in a dry run", details=preview)
    built = env_dirs(work, values["env_dirs"] or {})  # validate and check mode too: a broken build fails
    if not runs:
        # a command's effect cannot be predicted: not run by validate, status or check mode
        return Outcome(skipped=True, msg="commands do not run in a dry run", details=preview)
    resolution = work.access.resolution(host)
    kubeconfigs = {variable: work.access.resolution(other_host(entry, host, variable, name)).config
                   for variable, name in (values["kubeconfigs"] or {}).items()}
    done = run_command(argv, kubeconfig=resolution.config,
                       env={**(values["env"] or {}), **phase_environment(entry, host)},
                       chdir=values["chdir"], stdin=values["stdin"],
                       timeout=whole_seconds(work.capped(values["timeout"], context)),
                       kubeconfigs=kubeconfigs, env_files=values["env_files"], env_dirs=built,
                       environ=work.environ_of(host))
    return command_outcome(work, entry, context, done, values, argv)


def command_outcome(work, entry, context, done, values: dict, argv: list) -> Outcome:
    """What the command's run did, by its ``changed_when`` rule."""
    rule = changed_when_rule(values["changed_when"])
    succeeded = rule.succeeded(done)
    # the output, masked with the rest of the outcome (see BuiltinExecutors.__call__), as Ansible's command task
    # returns it
    details = {"rc": done.rc, "stdout": kept_output(done.stdout), "stderr": kept_output(done.stderr)}
    if entry.outputs:  # read whole, not cut as the result keeps it
        work.keep_for_outputs(entry, context, FROM_STDOUT, done.stdout)
    if work.dry_run:
        details["preview"] = f"ran (run_in_check_mode): {shlex.join(argv)}"
    if not succeeded:
        return Outcome(changed=True, failed=True, msg=command_failure_message(done), details=details)
    return Outcome(changed=rule.changed(done), details=details,
                   msg=recorded_message(command_success_message(done), work.masks(entry, context)))


def command_content(work, entry) -> dict:
    """A command's files (the script, files named as arguments or in ``env``, relative to ``chdir``) and the
    builds of its ``env_dirs``; an unbuildable ``env_dirs`` is left to the run to report."""
    values = option_values(COMMAND_PHASE_SPEC["argument_spec"], entry.options)
    try:
        argv = command_argv(values["argv"], values["cmd"], values["shell"])
    except PhasekitError:
        argv = []
    words = command_words(argv, values["env"])
    content = {"files": work.files.named(words, values["chdir"] or os.getcwd())}
    if values["env_dirs"]:
        try:
            content["env_dirs"] = env_dirs(work, values["env_dirs"])
        except PhasekitError:
            content["env_dirs"] = uncomparable()
    return content


def env_dirs(work, dirs: dict) -> dict:
    """``env_dirs`` built, once per run for each distinct option value (the digest and the run share it)."""
    return work.built(("env_dirs", bundle_digest(dirs)), lambda: build_env_dirs(dirs))
