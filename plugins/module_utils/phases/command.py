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
import shlex
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import private_directory

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


@contextmanager
def kubeconfig_file(config: dict):
    """Yield the path of a 0600 file holding ``config``; the file and its directory are gone afterwards."""
    with private_directory("phasekit-kubeconfig-") as directory:
        path = os.path.join(directory, "kubeconfig")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            yaml_io.safe_dump(config, handle)
        yield path


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
                stdin: str | None = None, timeout: int | None = None) -> CommandResult:
    """Run ``argv`` with ``KUBECONFIG`` set to a private copy of ``kubeconfig``; never raises for a non-zero exit."""
    if chdir is not None and not os.path.isdir(chdir):
        raise PhasekitError(f"chdir {chdir}: no such directory")
    with kubeconfig_file(kubeconfig) as path:
        environment = dict(os.environ)
        environment.update({str(key): str(value) for key, value in (env or {}).items()})
        environment["KUBECONFIG"] = path  # last: the phase's cluster, whatever env says
        try:
            done = subprocess.run(argv, cwd=chdir, env=environment, input=stdin, capture_output=True, text=True,  # pylint: disable=ansible-bad-function
                                  timeout=timeout, check=False)
        except FileNotFoundError:
            raise PhasekitError(f"command not found: {argv[0]}") from None
        except PermissionError:
            raise PhasekitError(f"command not executable: {argv[0]}") from None
        except subprocess.TimeoutExpired as exc:
            raise PhasekitError(f"command {shlex.join(argv)} did not finish within {timeout}s "
                                f"(output so far: {_tail(exc.stderr) or _tail(exc.stdout) or 'none'})") from None
    return CommandResult(argv=argv, rc=done.returncode, stdout=done.stdout, stderr=done.stderr)


def command_failure_message(result: CommandResult) -> str:
    """'command X exited with rc N: last lines of stderr'."""
    detail = _tail(result.stderr) or _tail(result.stdout)
    message = f"command {shlex.join(result.argv)} exited with rc {result.rc}"
    return f"{message}: {detail}" if detail else message


def _tail(output, lines: int = 5) -> str:
    if isinstance(output, bytes):
        output = output.decode("utf-8", "replace")
    return " | ".join((output or "").strip().splitlines()[-lines:])
