# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Run a command against one cluster: KUBECONFIG points at a private file that lives only as long as the command.

The kubeconfig is written to a fresh 0700 directory as a 0600 file and the
directory is removed in ``finally``, whether the command succeeds, fails, times
out or cannot be started. Tools such as clusterctl, helm and kubectl then see
exactly the one resolved context and nothing else of the user's kubeconfigs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from ansible.module_utils.common.validation import check_type_str

from ansible_collections.phasekit.kube.plugins.module_utils import compat, yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.environ import process_environment
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.built_dirs import OPTION as ENV_DIRS
from ansible_collections.phasekit.kube.plugins.module_utils.planning.built_dirs import (
    absolute_env_dirs, check_env_dirs, with_directories, written_env_dirs)
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import private_directory, write_private_file

SHELL = "/bin/sh"

# The options of phasekit.kube.kube_command and of command phases (one spec, both places).
COMMAND_SPEC = {
    "argument_spec": {
        "argv": {"type": "list", "elements": "str"},
        "cmd": {"type": "str"},
        "shell": {"type": "bool", "default": False},
        "chdir": {"type": "path"},
        "env": {"type": "dict", "default": {}},
        "stdin": {"type": "str"},
        "timeout": {"type": "int"},
    },
    "mutually_exclusive": [["argv", "cmd"]],
    "required_one_of": [["argv", "cmd"]],
}


def scalar_text(value):
    """A string option of a phase that refuses a list or a mapping (Ansible's str type would turn one into the text
    of a Python value and run the command with it)."""
    if isinstance(value, (Mapping, list, tuple, set)):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return check_type_str(value, allow_conversion=True)


# Command phases also take files only a run on the controller can give: other hosts' kubeconfigs, texts
# (a tool's configuration file) that must be files, and directories of files kustomize builds (built_dirs);
# each is private and lives as long as the command.
COMMAND_PHASE_SPEC = {
    **COMMAND_SPEC,
    "argument_spec": {
        **COMMAND_SPEC["argument_spec"],
        "stdin": {"type": scalar_text},
        "kubeconfigs": {"type": "dict", "default": {}},
        "env_files": {"type": "dict", "default": {}},
        "env_dirs": {"type": "dict", "default": {}},
        "changed_when": {"type": "raw", "default": "always"},
        # a read-only command (a check, a query) the phase declares safe: check mode and status run it too
        "run_in_check_mode": {"type": "bool", "default": False},
    },
}
# The value of a ``kubeconfigs`` entry that names the phase host's own parent (``kube_parent``).
PARENT_HOST = "{{ kube_parent }}"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CHANGED_ALWAYS, CHANGED_NEVER = "always", "never"
CHANGED_WHEN_KEYS = ("rc", "stdout_matches", "stderr_matches")
MAX_OUTPUT = 8000       # characters of stdout (and of stderr) a phase keeps: the last ones
OUTPUT_SUMMARY_LINES = 3  # lines of output a successful command's message holds


def check_command_phase_options(options: dict) -> None:
    """``env``: values that are strings, numbers or booleans. ``kubeconfigs``, ``env_files`` and ``env_dirs``:
    environment variable names to an inventory host, to a text and to the files of a directory."""
    for name, value in (options.get("env") or {}).items():
        if isinstance(value, (Mapping, list, tuple, set)):
            raise PhasekitError(f"env.{name}: expected a string, number or boolean, got {type(value).__name__}")
    seen: dict[str, str] = {}
    for option in ("kubeconfigs", "env_files", ENV_DIRS):
        for name, value in (options.get(option) or {}).items():
            if not isinstance(name, str) or not ENV_NAME.match(name) or name == "KUBECONFIG":
                raise PhasekitError(f"{option}: {name!r} is not an environment variable name this option may set "
                                    f"(letters, digits and _, not starting with a digit, and not KUBECONFIG)")
            if name in seen:
                raise PhasekitError(f"{option}: {name} is also set by {seen[name]}; give each variable once")
            seen[name] = option
            if option == ENV_DIRS:
                continue
            if not isinstance(value, str) or not value:
                wanted = "an inventory host name" if option == "kubeconfigs" else "the text of the file"
                raise PhasekitError(f"{option}.{name}: expected {wanted}, got {type(value).__name__}")
    check_env_dirs(options.get(ENV_DIRS) or {})
    changed_when_rule(options.get("changed_when", CHANGED_ALWAYS))


def command_phase_paths(options: dict, base_dir: str) -> dict:
    """The options with the kustomization directories of ``env_dirs`` made absolute, relative to ``base_dir``."""
    if ENV_DIRS not in options:
        return options
    return {**options, ENV_DIRS: absolute_env_dirs(options[ENV_DIRS], base_dir)}


@contextmanager
def kubeconfig_file(config: dict):
    """Yield the path of a 0600 file holding ``config``; the file and its directory are gone afterwards."""
    with private_directory("phasekit-kubeconfig-") as directory:
        yield _private_file(directory, "kubeconfig", yaml_io.safe_dump(config))


@contextmanager
def private_text_files(texts: dict[str, str]):
    """Yield name -> path of a 0600 file holding each text (all in one 0700 directory, gone afterwards)."""
    with private_directory("phasekit-files-") as directory:
        yield {name: _private_file(directory, name, text) for name, text in texts.items()}


def _private_file(directory: str, name: str, text: str) -> str:
    return write_private_file(os.path.join(directory, name), text)


def kubeconfig_in(text) -> dict | None:
    """The kubeconfig an ``env_files`` text holds (its credentials are masked in what the command prints), or None
    for any other text."""
    if not isinstance(text, str) or "users:" not in text:
        return None
    try:
        found = yaml_io.load_all(compat.plain_str(text), "env_files")
    except PhasekitError:
        return None
    return found[0] if len(found) == 1 and isinstance(found[0], dict) else None


@dataclass
class CommandResult:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str

    def to_dict(self) -> dict:
        return {
            "cmd": self.argv,
            "rc": self.rc,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "stdout_lines": self.stdout.splitlines(),
            "stderr_lines": self.stderr.splitlines(),
        }


def command_argv(argv: list[str] | None, cmd: str | None, shell: bool) -> list[str]:
    """The argument vector: ``argv`` as given, or ``cmd`` split like a shell would (or run by ``/bin/sh -c``)."""
    if argv:
        if shell:
            raise PhasekitError("shell applies to cmd only; give the command as cmd, or drop shell")
        return [str(item) for item in argv]
    if not cmd or not cmd.strip():
        raise PhasekitError("the command is empty: give argv (a list) or cmd (a string)")
    if shell:
        return [SHELL, "-c", cmd]
    try:
        return shlex.split(cmd)
    except ValueError as exc:
        raise PhasekitError(f"cmd {cmd!r}: {exc}") from None


def run_command(argv: list[str], *, kubeconfig: dict, env: dict | None = None, chdir: str | None = None,
                stdin: str | None = None, timeout: int | None = None, kubeconfigs: dict | None = None,
                env_files: dict | None = None, env_dirs: dict | None = None,
                environ: Mapping | None = None) -> CommandResult:
    """Run ``argv`` with ``KUBECONFIG`` set to a private copy of ``kubeconfig``; never raises for a non-zero exit.

    ``kubeconfigs`` (variable -> kubeconfig) and ``env_files`` (variable -> text): private files as long as the
    command runs, each variable holding its file's path. ``env_dirs`` (variable -> relative path -> text, see
    ``built_dirs.build_env_dirs``): private directories, each variable holding its directory's path, which the
    ``env_files`` texts may name as ``${VARIABLE}``. ``environ``: the environment the command starts from (the
    task's ``environment:`` over the controller's; default: the controller's).
    """
    if chdir is not None and not os.path.isdir(chdir):
        raise PhasekitError(f"chdir {chdir}: no such directory")
    with ExitStack() as stack:
        path = stack.enter_context(kubeconfig_file(kubeconfig))
        directories = stack.enter_context(written_env_dirs(env_dirs or {}))
        texts = {name: yaml_io.safe_dump(config) for name, config in (kubeconfigs or {}).items()}
        texts.update({name: with_directories(text, directories) for name, text in (env_files or {}).items()})
        files = {**directories, **(stack.enter_context(private_text_files(texts)) if texts else {})}
        environment = process_environment(environ)
        environment.update({str(key): str(value) for key, value in (env or {}).items()})
        environment.update(files)
        environment["KUBECONFIG"] = path  # last: the phase's cluster, whatever env says
        try:
            # output is decoded leniently: a program printing binary still fails with its rc
            done = subprocess.run(argv, cwd=chdir, env=environment, input=stdin, capture_output=True,  # pylint: disable=ansible-bad-function
                                  encoding="utf-8", errors="replace",
                                  timeout=timeout, check=False)
        except FileNotFoundError:
            raise PhasekitError(f"command not found: {argv[0]}") from None
        except PermissionError:
            raise PhasekitError(f"command not executable: {argv[0]}") from None
        except subprocess.TimeoutExpired as exc:
            raise PhasekitError(f"command {shlex.join(argv)} did not finish within {timeout}s "
                                f"(output so far: {output_tail(exc.stderr) or output_tail(exc.stdout) or 'none'})") from None
    return CommandResult(argv=argv, rc=done.returncode, stdout=done.stdout, stderr=done.stderr)


@dataclass(frozen=True)
class ChangedWhen:
    """When a command phase counts as changed (its option ``changed_when``): ``always`` (as Ansible's command task),
    ``never`` (a read-only check), or when its exit code is one of ``rc`` (such a code is then a success, as
    ``terraform plan -detailed-exitcode``'s 2) or its stdout or stderr matches a regular expression (any one)."""

    always: bool = False
    rc: tuple = ()
    stdout: re.Pattern | None = None
    stderr: re.Pattern | None = None

    def succeeded(self, result: CommandResult) -> bool:
        """Exit code 0, or one that ``rc`` names as a change."""
        return result.rc == 0 or result.rc in self.rc

    def changed(self, result: CommandResult) -> bool:
        """Whether a command that succeeded changed something, by this rule."""
        if self.always or result.rc in self.rc:
            return True
        return any(pattern is not None and pattern.search(output)
                   for pattern, output in ((self.stdout, result.stdout), (self.stderr, result.stderr)))


def changed_when_rule(value) -> ChangedWhen:
    """The option ``changed_when`` as a rule: ``always`` or ``true``, ``never`` or ``false``, or a mapping of
    ``rc`` (an exit code or a list of them, 1-255), ``stdout_matches`` and ``stderr_matches`` (Python regular
    expressions, searched, ``^``/``$`` at each line). Raises PhasekitError naming the field."""
    if value is True or value == CHANGED_ALWAYS:
        return ChangedWhen(always=True)
    if value is False or value == CHANGED_NEVER:
        return ChangedWhen()
    expected = (f"expected {CHANGED_ALWAYS}, {CHANGED_NEVER}, or a mapping of one or more of "
                f"{', '.join(CHANGED_WHEN_KEYS)}")
    if not isinstance(value, Mapping):
        raise PhasekitError(f"changed_when: {expected}, got {value!r}")
    unknown = sorted(str(key) for key in value if key not in CHANGED_WHEN_KEYS)
    if unknown or not value:
        got = f"unknown key(s) {', '.join(unknown)}" if unknown else "an empty mapping"
        raise PhasekitError(f"changed_when: {expected}, got {got}")
    return ChangedWhen(rc=_exit_codes(value.get("rc")), stdout=_pattern(value, "stdout_matches"),
                       stderr=_pattern(value, "stderr_matches"))


def _exit_codes(value) -> tuple:
    if value is None:
        return ()
    codes = value if isinstance(value, list) else [value]
    if not codes or any(isinstance(code, bool) or not isinstance(code, int) or not 1 <= code <= 255 for code in codes):
        raise PhasekitError(f"changed_when.rc: expected an exit code from 1 to 255 or a list of them, got {value!r}")
    return tuple(codes)


def _pattern(value: Mapping, key: str) -> re.Pattern | None:
    if key not in value:
        return None
    if not isinstance(value[key], str) or not value[key]:
        raise PhasekitError(f"changed_when.{key}: expected a regular expression (a non-empty string), "
                            f"got {value[key]!r}")
    try:
        return re.compile(value[key], re.MULTILINE)
    except re.error as err:
        raise PhasekitError(f"changed_when.{key}: {value[key]!r} is not a regular expression: {err}") from None


def kept_output(output: str) -> str:
    """A command's output as a phase's result keeps it: the last ``MAX_OUTPUT`` characters (the end says how it
    went), saying how much was left out."""
    output = output or ""
    if len(output) <= MAX_OUTPUT:
        return output
    return f"[{len(output) - MAX_OUTPUT} characters before cut]\n" + output[-MAX_OUTPUT:]


def command_success_message(result: CommandResult) -> str:
    """'rc N: last lines of stdout (or stderr)' for a command that succeeded ("" when it printed nothing)."""
    detail = output_tail(result.stdout, OUTPUT_SUMMARY_LINES) or output_tail(result.stderr, OUTPUT_SUMMARY_LINES)
    return f"rc {result.rc}: {detail}" if detail else ""


def command_failure_message(result: CommandResult) -> str:
    """'command X exited with rc N: last lines of stderr'."""
    detail = output_tail(result.stderr) or output_tail(result.stdout)
    message = f"command {shlex.join(result.argv)} exited with rc {result.rc}"
    return f"{message}: {detail}" if detail else message


def output_tail(output, lines: int = 5) -> str:
    """The last lines of a program's output, on one line."""
    if isinstance(output, bytes):
        output = output.decode("utf-8", "replace")
    return " | ".join((output or "").strip().splitlines()[-lines:])
