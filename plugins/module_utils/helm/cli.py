# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The helm command line, run against one cluster through a private kubeconfig file.

Helm has no Python API, so this is one of the few places the collection shells
out (see STYLE: only where no Python equivalent exists). Every call gets
``KUBECONFIG`` pointing at the host's resolved kubeconfig, written 0600 into a
private directory that lives as long as the ``HelmCli`` (one release on one
cluster) and is removed afterwards. Helm's own ``HELM_KUBE*`` variables, which
would override that kubeconfig (another API server, token, context), are
removed from its environment: helm talks to the phase's cluster and no other.

Helm 3 (3.13 or later) and helm 4 are both supported; they differ in the name
of the rollback flag and in how a release is shown as JSON.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.memo import Memo
from ansible_collections.phasekit.kube.plugins.module_utils.environ import process_environment
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import ChartSource
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import private_directory

OVERRIDING_ENV = re.compile(r"^HELM_(KUBE\w*|NAMESPACE)$")
NOT_FOUND = "release: not found"
MIN_MAJOR = 3
DEFAULT_TIMEOUT = 600  # seconds a helm call may take when the request gives no wait_timeout

_VERSIONS = Memo()  # helm binary -> (major, minor), for the process


@dataclass(frozen=True)
class HelmOutput:
    """One helm call as kubernetes.core reports it: the command line, and what helm printed."""

    command: str
    stdout: str
    stderr: str


class HelmCommandError(PhasekitError):
    """A helm call that exited non-zero (or could not run): the message for people, and the call itself."""

    def __init__(self, message: str, output: HelmOutput, returncode: int | None = None):
        super().__init__(message)
        self.output = output
        self.returncode = returncode


def helm_version(binary: str, environ: Mapping | None = None) -> tuple[int, int]:
    """(major, minor) of the helm at ``binary``, asked once per run and binary."""
    return _VERSIONS.get_or_make(binary, lambda: _asked_version(binary, environ))


def _asked_version(binary: str, environ: Mapping | None) -> tuple[int, int]:
    text = _run([binary, "version", "--template", "{{.Version}}"], env=helm_environment(None, environ),
                what="helm version").strip()
    found = re.match(r"v?(\d+)\.(\d+)", text)
    if not found:
        raise PhasekitError(f"{binary} version: cannot read a version from {text!r}")
    version = (int(found.group(1)), int(found.group(2)))
    if version < (MIN_MAJOR, 13):
        raise PhasekitError(f"{binary} is helm {text}; helm 3.13 or later is needed")
    return version


def helm_environment(kubeconfig_path: str | None, environ: Mapping | None = None) -> dict:
    """The process environment for helm: ``environ`` (the task's environment: over the controller's; default the
    controller's) without the variables that would point helm elsewhere."""
    environment = {key: value for key, value in process_environment(environ).items() if not OVERRIDING_ENV.match(key)}
    environment.pop("KUBECONFIG", None)
    if kubeconfig_path is not None:
        environment["KUBECONFIG"] = kubeconfig_path
    return environment


def pull_chart(binary: str, source: ChartSource, into: str, environ: Mapping | None = None) -> str:
    """``helm pull`` of a repository or OCI chart into ``into``; the path of the archive (no cluster needed)."""
    argv = [binary, "pull", source.ref, "--destination", into]
    if source.repo_url:
        argv += ["--repo", source.repo_url]
    if source.version:
        argv += ["--version", source.version]
    if source.plain_http:
        argv.append("--plain-http")
    if source.insecure_skip_tls_verify:
        argv.append("--insecure-skip-tls-verify")
    _run(argv, env=helm_environment(None, environ), what=f"helm pull {source.ref}")
    archives = glob.glob(os.path.join(into, "*.tgz"))
    if len(archives) != 1:
        raise PhasekitError(f"helm pull {source.ref}: expected one chart archive, found {len(archives)}")
    return archives[0]


class HelmCli:
    """helm against one cluster; a context manager holding the private kubeconfig (and values) files."""

    def __init__(self, binary: str, kubeconfig: dict, environ: Mapping | None = None):
        self.environ = environ  # the task's environment (None: the controller's)
        self.version = helm_version(binary, environ)
        self.binary = shutil.which(binary) or binary  # its path in ``command``, as kubernetes.core shows it
        self._kubeconfig = kubeconfig
        self._stack = ExitStack()
        self._directory: str | None = None

    def __enter__(self) -> HelmCli:
        self._directory = self._stack.enter_context(private_directory("phasekit-helm-"))
        self._write("kubeconfig", self._kubeconfig)
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def values_file(self, values: dict) -> str:
        """The merged values as one private file (they may hold secrets)."""
        return self._write("values.yaml", values)

    def run(self, args: list[str], *, what: str, timeout: int | None = None) -> str:
        """helm's standard output; a failed call raises ``HelmCommandError``."""
        return self.call(args, what=what, timeout=timeout).stdout

    def call(self, args: list[str], *, what: str, timeout: int | None = None) -> HelmOutput:
        """helm run with ``args``: its command line, standard output and standard error."""
        environment = helm_environment(os.path.join(self._directory, "kubeconfig"), self.environ)
        return _call([self.binary, *args], env=environment, what=what, timeout=timeout)

    def command(self, args: list[str]) -> str:
        """The command line of helm with ``args``, as a shell would take it (shown as kubernetes.core shows it)."""
        return shlex.join([self.binary, *args])

    def release_status(self, name: str, namespace: str) -> dict | None:
        """The release as kubernetes.core's ``status`` shows it: ``helm list``'s entry (name, namespace, revision,
        updated, status, chart, app_version, in any status) and its user-supplied values; None when none."""
        argv = ["list", "--namespace", namespace, "--filter", "^" + re.escape(name) + "$", "--output", "json"]
        if self.version[0] < 4:
            argv.append("--all")  # helm 4 lists releases in every status by default and has no --all
        releases = _json(self.run(argv, what=f"helm list {name}"), f"helm list {name}") or []
        found = next((one for one in releases if isinstance(one, dict) and one.get("name") == name), None)
        if found is None:
            return None
        status = dict(found)
        status["appversion"] = status.get("app_version", "")
        values = self.values(name, namespace)
        status["release_values"] = values
        status["values"] = values
        return status

    def values(self, name: str, namespace: str, computed: bool = False) -> dict:
        """The release's user-supplied values (``helm get values``): {} when none were given; ``computed``: with
        the chart's defaults (``--all``)."""
        text = self.run(["get", "values", name, "--namespace", namespace, "--output", "json",
                         *(["--all"] if computed else [])], what=f"helm get values {name}")
        values = _json(text, f"helm get values {name}")
        return values if isinstance(values, dict) else {}

    def repo_update(self) -> HelmOutput:
        """``helm repo update`` (the option update_repo_cache)."""
        return self.call(["repo", "update"], what="helm repo update")

    def latest_revision(self, name: str, namespace: str) -> dict | None:
        """The release's latest revision as ``helm history`` shows it (revision, status, chart as name-version,
        description), or None when there is no such release. One quick call in helm 3 and 4 alike."""
        try:
            text = self.run(["history", name, "--namespace", namespace, "--max", "1", "--output", "json"],
                            what=f"helm history {name}")
        except PhasekitError as err:
            if NOT_FOUND in str(err):
                return None
            raise
        revisions = _json(text, f"helm history {name}") or []
        return revisions[-1] if isinstance(revisions, list) and revisions else None

    def manifest(self, name: str, namespace: str) -> str:
        return self.run(["get", "manifest", name, "--namespace", namespace], what=f"helm get manifest {name}")

    def _write(self, name: str, data) -> str:
        path = os.path.join(self._directory, name)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            yaml_io.safe_dump(data, handle)
        return path


def _run(argv: list[str], *, env: dict, what: str, timeout: int | None = None) -> str:
    return _call(argv, env=env, what=what, timeout=timeout).stdout


def _call(argv: list[str], *, env: dict, what: str, timeout: int | None = None) -> HelmOutput:
    command = shlex.join(argv)
    try:
        done = subprocess.run(argv, env=env, capture_output=True, encoding="utf-8", errors="replace",  # pylint: disable=ansible-bad-function
                              timeout=timeout or DEFAULT_TIMEOUT, check=False)
    except FileNotFoundError as exc:
        message = f"{not_run(what, argv[0], exc)}; install helm 3.13 or later, or point binary_path at it"
        raise HelmCommandError(message, HelmOutput(command, "", message)) from None
    except PermissionError as exc:
        message = f"{not_run(what, argv[0], exc)}: it is not executable"
        raise HelmCommandError(message, HelmOutput(command, "", message)) from None
    except subprocess.TimeoutExpired as exc:
        message = f"{what} did not finish within {timeout or DEFAULT_TIMEOUT}s"
        raise HelmCommandError(message, HelmOutput(command, _text(exc.stdout), _text(exc.stderr))) from None
    output = HelmOutput(command, done.stdout or "", done.stderr or "")
    if done.returncode != 0:
        last = _last_lines(done.stderr) or _last_lines(done.stdout) or "no output"
        raise HelmCommandError(f"{what} failed: {last}", output, done.returncode)
    return output


def not_run(what: str, program: str, exc: OSError) -> str:
    """Why a program could not be started, in the words of Ansible's run_command ("Error executing command.", 2.19+)
    and of the OS before it ("No such file or directory"): kubernetes.core's tests look for either in ``msg``."""
    return f"Error executing command. {what}: {program}: {exc.strerror}"


def _text(output) -> str:
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output or ""


def _json(text: str, what: str):
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        raise PhasekitError(f"{what}: helm printed no JSON ({_last_lines(text)})") from None


def _last_lines(output: str, lines: int = 5) -> str:
    return " | ".join((output or "").strip().splitlines()[-lines:])
